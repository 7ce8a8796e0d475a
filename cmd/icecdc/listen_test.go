package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icecdc/icecdc/health"
)

// httpDaemon runs the daemon on the demo table with the given http
// section and waits until /healthz answers.
func httpDaemon(t *testing.T, listen, httpSection string) *daemon {
	t.Helper()
	dir := t.TempDir()
	path := writeConfig(t, "p", bookshopCatalog(t), "{type: file, file: {path: "+filepath.Join(dir, "events.json")+"}}", filepath.Join(dir, "state.db"))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "http: %s\n", httpSection)
	f.Close()
	d := startDaemon(t, "-c", path)
	d.waitFor(t, "/healthz", func() bool { return daemonPage(listen, "/healthz") == "ok\n" })
	return d
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(fds)
}

// TestHTTPConnectionCap: connections held open beyond http.max_connections
// take no more of the process's file descriptors, and /readyz still
// answers. 20,000 idle keep-alive connections once took every descriptor:
// the table failed with "too many open files" and /readyz went silent.
func TestHTTPConnectionCap(t *testing.T) {
	const cap, conns = 16, 200
	listen := freeAddr(t)
	d := httpDaemon(t, listen, fmt.Sprintf("{listen: %s, max_connections: %d}", listen, cap))
	d.waitFor(t, "ready", func() bool { return daemonPage(listen, "/readyz") == "ready\n" })
	base := openFDs(t)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.Dial("tcp", listen)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		// A request, then nothing: a keep-alive connection left idle.
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: icecdc\r\n\r\n")
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}} // the timeout guards a hang only
	resp, err := client.Get("http://" + listen + "/readyz")
	if err != nil {
		t.Fatalf("/readyz with %d connections held: %v", conns, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ready\n" {
		t.Fatalf("/readyz: %s %q", resp.Status, body)
	}
	// The test holds its own end of every connection; the daemon's ends
	// beyond the cap are closed.
	bound := base + conns + cap + 4
	var n int
	d.waitFor(t, fmt.Sprintf("at most %d descriptors", bound), func() bool { n = openFDs(t); return n <= bound })
	t.Logf("descriptors: %d before, %d with %d connections held (cap %d)", base, n, conns, cap)
}

// TestHTTPLogsAreJSON: what a library prints with Go's log package
// reaches the daemon's JSON log, and a garbage request is answered 400
// without a bare line on stderr.
func TestHTTPLogsAreJSON(t *testing.T) {
	var stderr bytes.Buffer
	stdlog.SetOutput(&stderr)
	defer stdlog.SetOutput(os.Stderr)
	listen := freeAddr(t)
	d := httpDaemon(t, listen, fmt.Sprintf("{listen: %s}", listen))
	c, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "\x16\x03\x01 GARBAGE /readyz\r\n\r\n")
	answer, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(answer), "HTTP/1.1 400 Bad Request") {
		t.Errorf("garbage answered %q", answer)
	}
	stdlog.Printf("WARNING: a library's warning")
	d.waitFor(t, "the library's warning in the log", func() bool {
		return strings.Contains(d.logs.String(), `"level":"WARN","msg":"WARNING: a library's warning"`)
	})
	if len(d.logLines("http.listen is reachable from other hosts and http.token is not set: anyone who reaches it reads /status and /metrics; set http.token, or listen on 127.0.0.1")) != 0 {
		t.Errorf("a warning about a loopback listener:\n%s", d.logs.String())
	}
	d.stop(t)
	if stderr.Len() > 0 {
		t.Fatalf("bare lines on stderr: %q", stderr.String())
	}
}

// TestHTTPServerErrorLog: the HTTP server's own messages (here a handler
// that panics) are JSON lines of the daemon's log, not bare lines on
// stderr.
func TestHTTPServerErrorLog(t *testing.T) {
	var stderr bytes.Buffer
	stdlog.SetOutput(&stderr)
	defer stdlog.SetOutput(os.Stderr)
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	listen := freeAddr(t)
	srv, err := serveHTTP(HTTPConfig{Listen: listen}, log, endpoints{reg: prometheus.NewRegistry(), ready: make(chan struct{}), health: &health.Health{Log: log},
		status: func() (any, error) { panic("status went wrong") }, snapshot: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	if resp, err := http.Get("http://" + listen + "/status"); err == nil {
		resp.Body.Close()
		t.Fatalf("a panicking handler answered %s", resp.Status)
	}
	deadline := time.Now().Add(time.Minute) // a hang guard only
	for !strings.Contains(logs.String(), `"level":"WARN","msg":"http: panic serving`) {
		if time.Now().After(deadline) {
			t.Fatalf("no JSON line of the panic; log %q, stderr %q", logs.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if stderr.Len() > 0 {
		t.Fatalf("bare lines on stderr: %q", stderr.String())
	}
}

// TestHTTPToken: with http.token, /status and /metrics want it as a bearer
// token (icecdc status sends it), /healthz and /readyz stay open for
// probes; without it, a listener beyond loopback is warned about once.
func TestHTTPToken(t *testing.T) {
	const token = "s3cret-token-for-tests"
	const warning = "http.listen is reachable from other hosts and http.token is not set: anyone who reaches it reads /status and /metrics; set http.token, or listen on 127.0.0.1"
	_, port, _ := net.SplitHostPort(freeAddr(t))
	listen := "127.0.0.1:" + port
	d := httpDaemon(t, listen, fmt.Sprintf("{listen: '0.0.0.0:%s', token: %s}", port, token))
	d.waitFor(t, "ready", func() bool { return daemonPage(listen, "/readyz") == "ready\n" })
	get := func(path, auth string) int {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://"+listen+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		path, auth string
		want       int
	}{
		{"/status", "", http.StatusUnauthorized},
		{"/status", "Bearer wrong", http.StatusUnauthorized},
		{"/status", token, http.StatusUnauthorized},
		{"/status", "Bearer " + token, http.StatusOK},
		{"/metrics", "", http.StatusUnauthorized},
		{"/metrics", "Bearer " + token, http.StatusOK},
		{"/healthz", "", http.StatusOK},
		{"/readyz", "", http.StatusOK},
	} {
		if got := get(tc.path, tc.auth); got != tc.want {
			t.Errorf("GET %s with %q: %d, want %d", tc.path, tc.auth, got, tc.want)
		}
	}
	if n := len(d.logLines(warning)); n != 0 {
		t.Errorf("%d warnings about a listener with a token", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfgAuth := &Config{HTTP: HTTPConfig{Listen: listen, Token: token}}
	if _, err := statesFromDaemon(ctx, cfgAuth); err != nil {
		t.Errorf("icecdc status with the token: %v", err)
	}
	if _, err := statesFromDaemon(ctx, &Config{HTTP: HTTPConfig{Listen: listen}}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("icecdc status without the token: %v, want 401", err)
	}
	d.stop(t)

	_, port, _ = net.SplitHostPort(freeAddr(t))
	d = httpDaemon(t, "127.0.0.1:"+port, fmt.Sprintf("{listen: '0.0.0.0:%s'}", port))
	if n := len(d.logLines(warning)); n != 1 {
		t.Errorf("%d warnings about a listener beyond loopback without a token, want 1:\n%s", n, d.logs.String())
	}
}

// listener serves the daemon's HTTP endpoints on a free port with
// http.max_connections max; /status blocks while block is open and
// counts its callers on busy.
func listener(t *testing.T, max int, block <-chan struct{}, busy chan<- struct{}) (string, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	listen := freeAddr(t)
	ready := make(chan struct{})
	close(ready)
	status := func() (any, error) {
		busy <- struct{}{}
		<-block
		return "ok", nil
	}
	srv, err := serveHTTP(HTTPConfig{Listen: listen, MaxConnections: max}, log, endpoints{reg: prometheus.NewRegistry(), ready: ready, health: &health.Health{Log: log}, status: status, snapshot: http.NotFoundHandler()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	return listen, logs
}

// probe GETs path on a new connection and returns the status and body;
// the timeout guards a hang only.
func probe(t *testing.T, listen, path string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get("http://" + listen + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// dialSilent opens n connections that send nothing.
func dialSilent(t *testing.T, listen string, n int) {
	t.Helper()
	for range n {
		c, err := net.Dial("tcp", listen)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
}

// TestHTTPSilentConnections: connections that send nothing hold no slot
// a probe needs: 300 of them (cap 16) once kept /healthz and /readyz
// from answering until each had timed out (10 s with 300, nothing
// logged). Now the oldest is closed to make room, with one warning.
func TestHTTPSilentConnections(t *testing.T) {
	defer func(d time.Duration) { shedLogInterval = d }(shedLogInterval)
	shedLogInterval = time.Hour
	listen, logs := listener(t, 16, nil, nil)
	dialSilent(t, listen, 300)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := probe(t, listen, path); code != http.StatusOK {
			t.Fatalf("%s with 300 silent connections: %d %q", path, code, body)
		}
	}
	if n := strings.Count(logs.String(), `"msg":"http.max_connections reached: closed connections to make room","without_request":`); n != 1 {
		t.Fatalf("%d warnings about closed connections, want 1:\n%s", n, logs.String())
	}
}

// TestHTTPProbeSlots: with every slot busy with a request, the probes are
// still answered, on a slot beyond the cap that answers nothing else,
// silent connections flooding those slots too.
func TestHTTPProbeSlots(t *testing.T) {
	const max = 8
	block, busy := make(chan struct{}), make(chan struct{})
	listen, _ := listener(t, max, block, busy)
	defer close(block)
	for range max {
		c, err := net.Dial("tcp", listen)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET /status HTTP/1.1\r\nHost: icecdc\r\n\r\n")
		<-busy
	}
	dialSilent(t, listen, 50)
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := probe(t, listen, path); code != http.StatusOK {
			t.Fatalf("%s with every slot busy: %d %q", path, code, body)
		}
	}
	if code, body := probe(t, listen, "/status"); code != http.StatusServiceUnavailable || !strings.Contains(body, "only /healthz and /readyz") {
		t.Fatalf("/status on a probe slot: %d %q", code, body)
	}
}
