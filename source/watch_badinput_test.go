package source_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// sharedTables loads names through one shared catalog of o.
func sharedTables(t *testing.T, o source.Options, concurrency int, names []string) (*source.Catalog, []*source.Table) {
	t.Helper()
	cat := source.NewCatalog(o, concurrency)
	t.Cleanup(cat.Close)
	var srcs []*source.Table
	for _, name := range names {
		to := o
		to.Table, to.Catalog = name, cat
		src, err := source.New(to)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		if _, err := src.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	return cat, srcs
}

// TestHadoopHugeVersionHint: a version-hint.text of a MiB fails the
// change check with one line naming the file, after reading no more than
// a hint holds; the table is left to its own polls (uncovered) and the
// other tables stay covered.
func TestHadoopHugeVersionHint(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "wh")
	wh := "file://" + dir
	cat, err := catalog.Load(ctx, "h", iceberg.Properties{"type": "hadoop", "warehouse": wh})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 3 {
		ident := table.Identifier{"ns", fmt.Sprintf("t%d", i)}
		tbl, err := scenario.CreateTableIn(ctx, cat, ident, scenario.TableDef{Schema: scenario.OrdersSchema(), FormatVersion: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scenario.Append(ctx, tbl, orders(1, 2)); err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.Join(ident, "."))
	}
	shared, srcs := sharedTables(t, source.Options{CatalogType: "hadoop", Warehouse: wh}, 4, names)
	hint := filepath.Join(dir, "ns", "t1", "metadata", "version-hint.text")
	if err := os.WriteFile(hint, []byte(strings.Repeat("9", 1<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	err = shared.CheckChanges(ctx)
	t.Logf("check: %v", err)
	if err == nil {
		t.Fatal("the check took a hint of a MiB")
	}
	if msg := err.Error(); !strings.Contains(msg, hint+" is longer than 64 bytes") || strings.Contains(msg, "\n") || len(msg) > 400 {
		t.Fatalf("error does not name the file on one short line: %q", msg)
	}
	for i, src := range srcs {
		if _, covered := src.Changes(); covered != (i != 1) {
			t.Errorf("%s covered %v", names[i], covered)
		}
	}
}

// TestRESTLyingETag: a REST catalog that answers 304 Not Modified to every
// conditional loadTable, a changed table's included, hides the change
// only until the table's ETag is restETagMaxAge (5 minutes) old: then the
// load asks without If-None-Match, gets the full answer and sees the
// commit. The clock is moved, not waited for.
func TestRESTLyingETag(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	defer source.SetRESTClock(func() time.Time { return time.Unix(0, now.Load()) })()
	env, names := manyTables(t, "shop", 1)
	front := &restFront{env: env, etags: true, lies: true}
	src, err := source.Open(ctx, source.Options{CatalogType: "rest", CatalogURI: front.serve(t), Table: names[0],
		AllowedLocations: []string{env.Warehouse}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tbl, err := env.LoadTable(ctx, catalog.ToIdentifier(names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Append(ctx, tbl, orders(50, 50)); err != nil {
		t.Fatal(err)
	}
	for _, step := range []time.Duration{time.Minute, 3 * time.Minute} {
		now.Add(int64(step))
		if changed, err := src.Refresh(ctx); err != nil || changed {
			t.Fatalf("refresh answered 304: changed %v, err %v", changed, err)
		}
	}
	now.Add(int64(time.Minute + time.Second)) // 5m1s after the full answer
	if changed, err := src.Refresh(ctx); err != nil || !changed {
		t.Fatalf("refresh past the ETag's age: changed %v, err %v", changed, err)
	}
	if h, _ := src.Head(); h.SequenceNumber != 2 {
		t.Fatalf("head at sequence number %d, want 2", h.SequenceNumber)
	}
	if full, unmod := front.full.Load(), front.unmod.Load(); full != 2 || unmod != 2 {
		t.Fatalf("%d full answers and %d 304s, want 2 (the first load, the one past 5 minutes) and 2", full, unmod)
	}
}

// TestSQLCheckSlowCatalog: while a writer holds a SQLite catalog's
// exclusive lock, the change check gives up at its own deadline (not the
// 10s busy timeout), as a throttled catalog, and frees the one call the
// catalog allows for the tables' loads; the check leaves no transaction open (a writer
// commits right after it without waiting), and once the lock is gone the
// next check covers every table again.
func TestSQLCheckSlowCatalog(t *testing.T) {
	ctx := context.Background()
	env, names := manyTables(t, "slow", 4)
	o := source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse}
	shared, srcs := sharedTables(t, o, 1, names)
	db, err := sql.Open(sqliteshim.ShimName, env.CatalogURI+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writer, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()

	// A writer mid-transaction (RESERVED lock): the check reads, and the
	// writer's commit then finds no reader left.
	if _, err := writer.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.ExecContext(ctx, "UPDATE iceberg_tables SET previous_metadata_location = previous_metadata_location"); err != nil {
		t.Fatal(err)
	}
	if err := shared.CheckChanges(ctx); err != nil {
		t.Fatalf("check beside a writer's transaction: %v", err)
	}
	if _, err := writer.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatalf("the writer could not commit after the check (busy timeout 0): %v", err)
	}

	// A writer holding the exclusive lock: the check ends at its deadline.
	defer source.SetCheckTimeout(2 * time.Second)()
	if _, err := writer.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	err = shared.CheckChanges(ctx)
	t.Logf("check under an exclusive lock, %s: %v", time.Since(t0).Round(time.Millisecond), err)
	// SQLite's busy wait outlasts a context that ends: a check still
	// waiting at its deadline would end at the busy timeout, with the
	// context's error.
	if !health.IsThrottled(err) || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `check sql catalog "local" for changes`) {
		t.Fatalf("check under an exclusive lock: %v, want the catalog busy (throttled) at the check's deadline, naming the catalog", err)
	}
	if _, err := writer.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := srcs[0].Refresh(ctx); err != nil {
		t.Fatalf("a load after the check: %v", err)
	}
	if err := shared.CheckChanges(ctx); err != nil {
		t.Fatal(err)
	}
	for i, src := range srcs {
		if _, covered := src.Changes(); !covered {
			t.Errorf("%s not covered once the lock is gone", names[i])
		}
	}
}
