// Package moto runs moto's server (PyPI moto[server]) on loopback for tests
// that need a real S3, Glue, SQS, SNS or Kinesis API: one process per
// test, stopped when the test ends. Without python3 and moto the tests
// skip, except under CI=true or ICECDC_REQUIRE_SINK_SERVERS=1, where they
// fail.
package moto

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// Credentials moto accepts; any value works, these are recognisable in
// output so that tests can check they are never printed.
const (
	AccessKey = "AKIAICECDCTEST000001"
	SecretKey = "icecdc-moto-secret-Zq8Lw3Vb"
	Region    = "us-east-1"
)

// Server is a running moto server.
type Server struct {
	// Endpoint is its base URL, http://127.0.0.1:PORT.
	Endpoint string
}

var listening = regexp.MustCompile(`Running on (http://127\.0\.0\.1:\d+)`)

// Start starts moto's server on a free loopback port, or skips the test
// when moto is not installed. It also points the AWS SDK's environment
// away from this machine's own configuration and EC2's metadata service,
// so that nothing but the properties a test gives is used.
func Start(t testing.TB) *Server {
	t.Helper()
	if err := exec.Command("python3", "-c", "import moto.server").Run(); err != nil {
		msg := "moto server not available (python3 -c 'import moto.server' failed: " + err.Error() +
			"); install it with: pip install 'moto[server]'"
		if os.Getenv("CI") == "true" || os.Getenv("ICECDC_REQUIRE_SINK_SERVERS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	Isolate(t)
	cmd := exec.Command("python3", "-m", "moto.server", "-H", "127.0.0.1", "-p", "0")
	dieWithParent(cmd)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatalf("start moto server: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var lines []string
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				io.Copy(io.Discard, stderr) // moto logs every request
				return
			}
			lines = append(lines, sc.Text())
		}
		found <- "exited: " + strings.Join(lines, " | ")
	}()
	select {
	case ep := <-found:
		if !strings.HasPrefix(ep, "http://") {
			t.Fatalf("moto server %s", ep)
		}
		return &Server{Endpoint: ep}
	case <-time.After(30 * time.Second):
		t.Fatal("moto server did not start within 30s")
	}
	return nil
}

// Isolate points the AWS SDK at no shared configuration file, no
// credentials from the environment and no EC2 metadata service, so that a
// test sees only what it configures (and never waits on the network).
func Isolate(t testing.TB) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE":             dir + "/config",
		"AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials",
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
		"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_GLUE", "AWS_S3_ENDPOINT",
		"AWS_MAX_ATTEMPTS", "AWS_RETRY_MODE",
	} {
		unset(t, k)
	}
}

// unset removes k from the environment for the test's duration.
func unset(t testing.TB, k string) {
	t.Helper()
	t.Setenv(k, "") // restores the old value at cleanup
	os.Unsetenv(k)
}

// CreateBucket creates a bucket (moto needs no signature for it).
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, s.Endpoint+"/"+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("create bucket %s: %s", name, resp.Status)
	}
}

// S3Props are the catalog properties that reach the server's S3 API at
// endpoint (the server's own, or a proxy in front of it).
func S3Props(endpoint string) iceberg.Properties {
	return iceberg.Properties{
		"s3.endpoint":          endpoint,
		"s3.region":            Region,
		"s3.access-key-id":     AccessKey,
		"s3.secret-access-key": SecretKey,
		"s3.path-style-access": "true",
	}
}

// GlueProps are the catalog properties of a glue catalog on the server,
// with its warehouse's S3 on the same server.
func (s *Server) GlueProps() iceberg.Properties {
	p := S3Props(s.Endpoint)
	p["glue.endpoint"] = s.Endpoint
	p["glue.region"] = Region
	p["glue.access-key-id"] = AccessKey
	p["glue.secret-access-key"] = SecretKey
	return p
}

// String names the server in test output.
func (s *Server) String() string { return fmt.Sprintf("moto at %s", s.Endpoint) }
