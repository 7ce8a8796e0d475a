package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// killChildEnv makes TestIcebergSinkKillChild the daemon a kill test
// runs (and kills) in a process of its own.
const killChildEnv = "ICECDC_KILL_CHILD_CONFIG"

// TestIcebergSinkKillChild is `icecdc run --once -c $ICECDC_KILL_CHILD_CONFIG`
// when TestIcebergSinkSIGKILL starts it; it skips otherwise.
func TestIcebergSinkKillChild(t *testing.T) {
	cfg := os.Getenv(killChildEnv)
	if cfg == "" {
		t.Skip("the daemon of TestIcebergSinkSIGKILL, started by it")
	}
	os.Exit(run([]string{"run", "--once", "-c", cfg}, os.Stdout, os.Stderr))
}

// TestIcebergSinkSIGKILL: the daemon writing a 30,000-row commit, an
// update and a delete to its target with small commits is killed
// (SIGKILL) at random moments, several times, then runs to the end: the
// target holds every event exactly once.
func TestIcebergSinkSIGKILL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, tbl := newOrders(ctx, t)
	const n = 30_000
	tbl, err := scenario.BulkAppend(ctx, tbl, n)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = scenario.Update(ctx, tbl, iceberg.LessThan(iceberg.Reference("order_id"), int64(100)), paid); err != nil {
		t.Fatal(err)
	}
	if _, err = scenario.Delete(ctx, tbl, iceberg.GreaterThanEqual(iceberg.Reference("order_id"), int64(n-50))); err != nil {
		t.Fatal(err)
	}
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	cfg := writeConfig(t, "audit", catalog, "{type: iceberg, iceberg: {commit.bytes: 50000, commit.interval: 1h}}",
		filepath.Join(t.TempDir(), "state.db"))
	seed := time.Now().UnixNano()
	rnd := rand.New(rand.NewPCG(uint64(seed), 1))
	t.Logf("seed %d", seed)
	killed := 0
	for range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIcebergSinkKillChild$")
		cmd.Env = append(os.Environ(), killChildEnv+"="+cfg)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done: // finished before the kill
		case <-time.After(time.Duration(rnd.IntN(300)+30) * time.Millisecond):
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-done
			killed++
		}
	}
	before := 0
	if tg, err := env.Catalog.LoadTable(ctx, table.Identifier{"bookshop", "orders_changes"}); err == nil {
		before = len(tg.Metadata().Snapshots())
	}
	t.Logf("%d of 5 runs killed; the target had %d commits before the last run", killed, before)
	if _, errOut, code := runCmd("run", "--once", "-c", cfg); code != 0 {
		t.Fatalf("the last run: exit %d\n%s", code, errOut)
	}
	counts := map[string]int{}
	kinds := map[string]int{}
	target, err := env.Catalog.LoadTable(ctx, table.Identifier{"bookshop", "orders_changes"})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := target.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		ev := rec.Column(rec.Schema().FieldIndices("_event_id")[0]).(*array.String)
		ct := rec.Column(rec.Schema().FieldIndices("_change_type")[0]).(*array.String)
		for i := range int(rec.NumRows()) {
			counts[ev.Value(i)+" "+ct.Value(i)]++
			kinds[ct.Value(i)]++
		}
		rec.Release()
	}
	for k, c := range counts {
		if c != 1 {
			t.Errorf("%s: %d rows, want 1", k, c)
		}
	}
	want := map[string]int{"INSERT": n, "UPDATE_BEFORE": 100, "UPDATE_AFTER": 100, "DELETE": 50}
	for k, c := range want {
		if kinds[k] != c {
			t.Errorf("%s rows: %d, want %d", k, kinds[k], c)
		}
	}
}
