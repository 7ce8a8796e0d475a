package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	"github.com/icecdc/icecdc/sinks/webhook"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// count counts the log lines whose msg starts with prefix.
func (s *syncBuffer) count(prefix string) int {
	n := 0
	for _, l := range strings.Split(s.String(), "\n") {
		var rec struct{ Msg string }
		if json.Unmarshal([]byte(l), &rec) == nil && strings.HasPrefix(rec.Msg, prefix) {
			n++
		}
	}
	return n
}

// A webhook receiver answering 503 for a while: the daemon logs one WARN
// when the failure begins, then at most one summary per interval, and one
// INFO when the sink recovers; /readyz, /status and `icecdc status` show
// the failing table with its last error while it lasts.
func TestSinkFailureIsVisible(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dir := t.TempDir()
	opts, _, err := buildBookshop(ctx, filepath.Join(dir, "lake"))
	if err != nil {
		t.Fatal(err)
	}

	var failing atomic.Bool
	failing.Store(true)
	var delivered atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if failing.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		delivered.Add(1)
	}))
	defer recv.Close()

	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	metrics := cdc.NewMetrics(prometheus.NewRegistry())
	sink, err := webhook.New(webhook.Config{
		URL: recv.URL, Secret: testSecret,
		Retry:    webhook.RetryConfig{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond},
		Observer: webhookMetrics{metrics},
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
		Name: "p", Sink: sink, Store: store, Poll: 20 * time.Millisecond, Log: log, Metrics: metrics,
		Tables: []cdc.TableSpec{{Name: "bookshop.orders", Source: src, Start: earliest}},
		Health: &cdc.Health{Log: log, Sink: "webhook", Interval: interval},
		Ready:  make(chan struct{}),
	}
	listen := freeAddr(t)
	srv, err := serveHTTP(listen, prometheus.NewRegistry(), p.Ready, p.Health, func() (any, error) { return tableStatuses(store, p.Name, p.Health) }, snapshotHandler("", p))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cfgPath := filepath.Join(dir, "icecdc.yaml")
	cfg := fmt.Sprintf("name: p\ncatalog: {type: sql, uri: %q, warehouse: %q}\ntables: [{name: bookshop.orders}]\n"+
		"sink: {type: webhook, webhook: {url: %q, secret: %q}}\nstate: {path: %q}\nhttp: {listen: %q}\n",
		opts.CatalogURI, opts.Warehouse, recv.URL, testSecret, statePath, listen)
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

	// Failing: one WARN, then summaries, /readyz 503 with the reason.
	waitFor("a summary of the ongoing failure", func() bool { return logs.count("sink still failing") >= 2 })
	code, body := get("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "bookshop.orders: sink failing since") || !strings.Contains(body, "503") {
		t.Fatalf("/readyz while the sink fails: %d %q", code, body)
	}
	code, body = get("/status")
	var statuses []tableStatus
	if err := json.Unmarshal([]byte(body), &statuses); code != http.StatusOK || err != nil || len(statuses) != 1 {
		t.Fatalf("/status: %d %v %s", code, err, body)
	}
	if h := statuses[0].Health; h == nil || h.State != cdc.StateFailing || h.Component != cdc.InSink || h.Since.IsZero() ||
		!strings.Contains(h.LastError, "503") || h.Failures < 3 {
		t.Fatalf("/status health while failing: %+v", h)
	}
	var out bytes.Buffer
	if err := cmdStatus(ctx, []string{"-c", cfgPath}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\n\nbookshop.orders: sink failing since ") || !strings.Contains(out.String(), "503") {
		t.Fatalf("icecdc status while failing:\n%s", out.String())
	}

	// Recovered: one INFO, /readyz 200.
	failing.Store(false)
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
	if delivered.Load() == 0 {
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
