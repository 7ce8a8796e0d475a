package rabbitmq

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/icecdc/icecdc/internal/sinkservers"
)

// brokerURL is the broker TestMain started; skip says why there is none.
var brokerURL, skip string

// TestMain runs one real rabbitmq-server for the package (it starts in
// seconds, so one for all tests), on free loopback ports, its node's
// files in a temp dir.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The script under /usr/lib runs the node as the calling user; the
	// one in /usr/sbin switches to the rabbitmq user, who may not write
	// the temp dir.
	bin, missing := sinkservers.Find("/usr/lib/rabbitmq/bin/rabbitmq-server")
	if missing != "" {
		bin, missing = sinkservers.Find("rabbitmq-server")
	}
	if missing != "" {
		if sinkservers.Required() {
			fmt.Fprintln(os.Stderr, "ICECDC_REQUIRE_SINK_SERVERS=1: "+missing)
			return 1
		}
		skip = missing
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "icecdc-rabbitmq-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	port, err1 := sinkservers.FreePort()
	dist, err2 := sinkservers.FreePort()
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, err1, err2)
		return 1
	}
	if err := os.WriteFile(filepath.Join(dir, "enabled_plugins"), []byte("[].\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOME="+dir,
		"RABBITMQ_NODE_IP_ADDRESS=127.0.0.1",
		"RABBITMQ_NODE_PORT="+strconv.Itoa(port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(dist),
		"RABBITMQ_NODENAME=icecdc-test-"+strconv.Itoa(port)+"@localhost",
		"RABBITMQ_MNESIA_BASE="+filepath.Join(dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+filepath.Join(dir, "enabled_plugins"),
		"RABBITMQ_CONFIG_FILE="+filepath.Join(dir, "rabbitmq"),
		"RABBITMQ_ADVANCED_CONFIG_FILE="+filepath.Join(dir, "advanced.config"),
	)
	out, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start rabbitmq-server:", err)
		return 1
	}
	defer func() {
		// The node and its Erlang helpers share the process group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}()
	brokerURL = fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", port)
	for start := time.Now(); ; time.Sleep(500 * time.Millisecond) {
		if c, err := amqp.Dial(brokerURL); err == nil {
			_ = c.Close()
			break
		}
		if time.Since(start) > 120*time.Second {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			fmt.Fprintf(os.Stderr, "rabbitmq-server on port %d did not answer:\n%s\n", port, log)
			return 1
		}
	}
	return m.Run()
}

// broker returns a channel of the test broker, or skips.
func broker(t *testing.T) *amqp.Channel {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
	conn, err := amqp.Dial(brokerURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
