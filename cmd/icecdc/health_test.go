package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/metrics"
	"github.com/icecdc/icecdc/sinks/webhook"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// count counts the log lines whose msg starts with prefix.
func (s *syncBuffer) count(prefix string) int { return len(s.lines(prefix)) }

// lines returns the log lines whose msg starts with prefix.
func (s *syncBuffer) lines(prefix string) []string {
	var out []string
	for _, l := range strings.Split(s.String(), "\n") {
		var rec struct{ Msg string }
		if json.Unmarshal([]byte(l), &rec) == nil && strings.HasPrefix(rec.Msg, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// receiver is a webhook endpoint that fails while failing is set, and the
// client the sink reaches it with.
type receiver struct {
	url       string
	client    *http.Client // nil: the sink's own
	timeout   time.Duration
	failing   atomic.Bool
	delivered atomic.Int32
	close     func()
}

// switchTransport sends through bad while use says so, else through good:
// a trust store that is fixed while the daemon runs.
type switchTransport struct {
	bad, good http.RoundTripper
	useBad    *atomic.Bool
}

func (s switchTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.useBad.Load() {
		return s.bad.RoundTrip(r)
	}
	return s.good.RoundTrip(r)
}

// TestSinkFailureIsVisible: a webhook sink failing for a while — the
// receiver answering 503, a TLS certificate the daemon does not trust, a
// receiver that never answers within the webhook timeout. The daemon logs
// one WARN when the failure begins, then at most one summary per interval,
// and one INFO when the sink recovers; /readyz, /status and `icecdc status`
// show the failing table with its last error, which says what is wrong,
// while it lasts.
func TestSinkFailureIsVisible(t *testing.T) {
	for _, c := range []struct {
		name string
		want string // in the error shown
		recv func(r *receiver) *httptest.Server
	}{
		{"webhook 503", "503", func(r *receiver) *httptest.Server {
			return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				io.Copy(io.Discard, req.Body)
				if r.failing.Load() {
					http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
					return
				}
				r.delivered.Add(1)
			}))
		}},
		{"TLS certificate not trusted", "certificate", func(r *receiver) *httptest.Server {
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				io.Copy(io.Discard, req.Body)
				r.delivered.Add(1)
			}))
			srv.Config.ErrorLog = stdlog.New(io.Discard, "", 0) // the refused handshakes
			srv.StartTLS()
			// Until the operator installs the receiver's CA: the default
			// trust store, which lacks the test server's certificate.
			r.client = &http.Client{Transport: switchTransport{
				bad: http.DefaultTransport.(*http.Transport).Clone(), good: srv.Client().Transport, useBad: &r.failing}}
			return srv
		}},
		{"no response within the timeout", "no response within 50ms", func(r *receiver) *httptest.Server {
			r.timeout = 50 * time.Millisecond
			return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				io.Copy(io.Discard, req.Body)
				if r.failing.Load() {
					<-req.Context().Done() // the client gives up first
					return
				}
				r.delivered.Add(1)
			}))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &receiver{}
			r.failing.Store(true)
			srv := c.recv(r)
			defer srv.Close()
			r.url = srv.URL
			sinkFailureIsVisible(t, r, c.want)
		})
	}
}

func sinkFailureIsVisible(t *testing.T, recv *receiver, want string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	opts, _, err := buildBookshop(ctx, filepath.Join(dir, "lake"))
	if err != nil {
		t.Fatal(err)
	}

	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	m := metrics.NewMetrics(prometheus.NewRegistry())
	sink, err := webhook.New(webhook.Config{
		URL: recv.url, Secret: testSecret, Timeout: recv.timeout, Client: recv.client,
		Retry:    webhook.RetryConfig{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond},
		Observer: webhookMetrics{m},
	})
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	statePath := filepath.Join(dir, "state.db")
	store, err := state.Open(statePath, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	earliest, _ := cdc.ParseStart("earliest")
	const interval = 150 * time.Millisecond
	p := &cdc.Pipeline{
		Name: "p", Sink: sink, Store: store, Poll: 20 * time.Millisecond, Log: log, Metrics: m,
		Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p"}},
		Tables:  []cdc.TableSpec{{Name: "bookshop.orders", Source: src, Start: earliest}},
		Health:  &health.Health{Log: log, Sink: "webhook", Interval: interval},
		Ready:   make(chan struct{}),
	}
	listen := freeAddr(t)
	srv, err := serveHTTP(HTTPConfig{Listen: listen}, log, endpoints{reg: prometheus.NewRegistry(), ready: p.Ready, health: p.Health,
		status: func() (any, error) { return tableStatuses(store, p.Name, p.Health) }, snapshot: snapshotHandler("", p)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	cfgPath := filepath.Join(dir, "icecdc.yaml")
	cfg := fmt.Sprintf("name: p\ncatalog: {type: sql, uri: %q, warehouse: %q}\ntables: [{name: bookshop.orders}]\n"+
		"sink: {type: webhook, webhook: {url: %q, secret: %q}}\nstate: {path: %q}\nhttp: {listen: %q}\n",
		opts.CatalogURI, opts.Warehouse, recv.url, testSecret, statePath, listen)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- p.Run(ctx) }()

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + listen + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("%s: not within the deadline; log:\n%s", what, logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// Failing: one WARN saying what is wrong, then summaries, /readyz 503
	// with the reason.
	waitFor("a summary of the ongoing failure", func() bool { return logs.count("sink still failing") >= 2 })
	if first := logs.lines("sink failing; retrying"); len(first) != 1 || !strings.Contains(first[0], want) {
		t.Fatalf("first-failure lines %q, want one saying %q", first, want)
	}
	code, body := get("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "bookshop.orders: sink failing since") || !strings.Contains(body, want) {
		t.Fatalf("/readyz while the sink fails: %d %q", code, body)
	}
	code, body = get("/status")
	var statuses []tableStatus
	if err := json.Unmarshal([]byte(body), &statuses); code != http.StatusOK || err != nil || len(statuses) != 1 {
		t.Fatalf("/status: %d %v %s", code, err, body)
	}
	if h := statuses[0].Health; h == nil || h.State != health.StateFailing || h.Component != health.InSink || h.Since.IsZero() ||
		!strings.Contains(h.LastError, want) || h.Failures < 3 {
		t.Fatalf("/status health while failing: %+v", h)
	}
	var out bytes.Buffer
	err = execute(ctx, []string{"status", "-c", cfgPath}, &out, io.Discard)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitTablesFailing || !strings.Contains(err.Error(), "1 of 1 table failing") {
		t.Fatalf("icecdc status while failing: %v, want exit %d naming the table", err, exitTablesFailing)
	}
	if !strings.Contains(out.String(), "\n\nbookshop.orders: sink failing since ") || !strings.Contains(out.String(), want) {
		t.Fatalf("icecdc status while failing:\n%s", out.String())
	}

	// Recovered: one INFO, /readyz 200.
	recv.failing.Store(false)
	waitFor("the recovery line", func() bool { return logs.count("sink recovered after ") == 1 })
	waitFor("/readyz ready", func() bool { c, _ := get("/readyz"); return c == http.StatusOK })
	elapsed := time.Since(start)
	if n := logs.count("sink failing; retrying"); n != 1 {
		t.Errorf("%d first-failure lines, want exactly 1; log:\n%s", n, logs.String())
	}
	if n, most := logs.count("sink still failing"), int(elapsed/interval)+1; n > most {
		t.Errorf("%d summary lines in %s, want at most one per %s (%d)", n, elapsed, interval, most)
	}
	if n := logs.count("sink recovered after "); n != 1 {
		t.Errorf("%d recovery lines, want 1", n)
	}
	if recv.delivered.Load() == 0 {
		t.Error("nothing delivered after the recovery")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
