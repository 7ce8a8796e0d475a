package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestRunSharesOneCatalog: a daemon following a namespace of 50 tables in
// one SQLite catalog loads them all through one catalog, so the tables
// cost no file descriptor each (each opened its own catalog before: 50
// tables held 50 more descriptors); and the catalog is closed when the run
// ends.
func TestRunSharesOneCatalog(t *testing.T) {
	const n = 50
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.ManyTables(ctx, "many", n); err != nil {
		t.Fatal(err)
	}
	env.Close()
	cfg := filepath.Join(t.TempDir(), "icecdc.yaml")
	writeTestFile(t, cfg, fmt.Sprintf(`name: p
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: 'many.*', start: earliest}]
poll: {interval: 50ms}
sink: {type: file, file: {path: %s}}
state: {path: %s}
`, scenario.CatalogName, env.CatalogURI, env.Warehouse, filepath.Join(t.TempDir(), "events.jsonl"), filepath.Join(t.TempDir(), "state.db")))

	before := openFDs(t)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out, logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- execute(rctx, []string{"run", "-c", cfg}, &out, &logs) }()
	// A hang guard only: every table delivers its one commit, and each
	// table's catalog stays open as long as it is followed.
	for guard := time.Now().Add(2 * time.Minute); strings.Count(logs.String(), `"msg":"commit delivered"`) < n; {
		if time.Now().After(guard) {
			t.Fatalf("not every table delivered; logs:\n%s", logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v; logs:\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	during := openFDs(t)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	after := openFDs(t)
	t.Logf("open file descriptors: %d before, %d while following %d tables, %d after", before, during, n, after)
	// The sink's file, the state file, the catalog's pool of at most
	// catalog.concurrency connections and the runtime's own: far fewer
	// than one per table.
	if during-before >= n/2 {
		t.Errorf("following %d tables opened %d file descriptors (%d before, %d during): the tables do not share one catalog", n, during-before, before, during)
	}
	if after-before > 2 {
		t.Errorf("%d file descriptors still open after the run (%d before, %d after)", after-before, before, after)
	}
	if n := catalogFDs(t, strings.TrimPrefix(env.CatalogURI, "file:")); n != 0 {
		t.Errorf("the catalog file is still open %d times after the run: the catalog was not closed", n)
	}
}

// catalogFDs counts the process's file descriptors open on the file at
// path.
func catalogFDs(t *testing.T, path string) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range es {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && target == path {
			n++
		}
	}
	return n
}

// TestClusterSharesOneCatalog: a cluster member's tables load through the
// member's one catalog: the SQLite file is open a few times (the
// catalog's pool, at most catalog.concurrency), not once per table (each
// table's source opened its own before); and it is closed when the member
// stops.
func TestClusterSharesOneCatalog(t *testing.T) {
	const n = 30
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.ManyTables(ctx, "many", n); err != nil {
		t.Fatal(err)
	}
	env.Close()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := filepath.Join(t.TempDir(), "icecdc.yaml")
	writeTestFile(t, cfg, fmt.Sprintf(`name: p
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: 'many.*', start: earliest}]
poll: {interval: 50ms}
sink: {type: file, file: {path: %s}}
cluster: {type: kafka, group: g, partitions: 4, session_timeout: 3s, kafka: {brokers: [%q]}}
`, scenario.CatalogName, env.CatalogURI, env.Warehouse, filepath.Join(t.TempDir(), "events.jsonl"), c.ListenAddrs()[0]))
	dbPath := strings.TrimPrefix(env.CatalogURI, "file:")

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out, logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- execute(rctx, []string{"run", "-c", cfg}, &out, &logs) }()
	for guard := time.Now().Add(2 * time.Minute); strings.Count(logs.String(), `"msg":"commit delivered"`) < n; {
		if time.Now().After(guard) {
			t.Fatalf("not every table delivered; logs:\n%s", logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v; logs:\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	during := catalogFDs(t, dbPath)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	after := catalogFDs(t, dbPath)
	t.Logf("descriptors open on the catalog file: %d while following %d tables, %d after", during, n, after)
	if during > 8 { // catalog.concurrency's default
		t.Errorf("the catalog file is open %d times while the member follows %d tables: the tables do not share one catalog", during, n)
	}
	if after != 0 {
		t.Errorf("the catalog file is still open %d times after the member stopped", after)
	}
}
