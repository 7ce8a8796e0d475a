package cdc_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icecdc/icecdc/catalogwatch"
	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// watchedCounting is a countingSource that keeps its table's Watched.
type watchedCounting struct {
	*countingSource
	w cdc.Watched
}

func (s *watchedCounting) Changes() (<-chan struct{}, bool) { return s.w.Changes() }

// TestCoveredSQLTableLoadsOnlyOnChange: a table of a shared SQLite
// catalog, which the catalog's bulk check covers, is not loaded over
// a hundred max intervals of an unchanged catalog; a commit is delivered
// through the check's wake-up; and once the check fails (its catalog
// gone), the table polls on its own again.
func TestCoveredSQLTableLoadsOnlyOnChange(t *testing.T) {
	h := newHarness(t)
	h.append(1, 3)
	o := source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse}
	cat := source.NewCatalog(o, 2)
	defer cat.Close()
	o.Table, o.Catalog = "shop.orders", cat
	src, err := source.New(o)
	if err != nil {
		t.Fatal(err)
	}
	cs := &watchedCounting{countingSource: &countingSource{Source: src}, w: src}
	store, fs := h.storeAndFile()
	earliest, _ := cdc.ParseStart("earliest")
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	health := &health.Health{}
	p := &cdc.Pipeline{Name: "p", Sink: fs, Store: store, Encoder: newEncoder("p"), Poll: time.Millisecond, MaxPoll: time.Millisecond,
		WatchedReload: time.Hour, Health: health, Tables: []cdc.TableSpec{{Name: "shop.orders", Source: cs, Start: earliest}}}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	go catalogwatch.WatchCatalog(ctx, cat, time.Millisecond, time.Millisecond, health, nil)
	delivered := func(seq int64) func() bool {
		return func() bool {
			cp, ok, _ := store.Load(ctx, "p", "shop.orders")
			return ok && cp.Done && cp.Seq == seq
		}
	}
	waitFor(t, "first commit delivered", delivered(1))
	waitFor(t, "covered", func() bool { _, c := src.Changes(); return c })
	refreshes := cs.refreshes.Load()
	time.Sleep(100 * time.Millisecond) // a hundred max intervals, and as many checks
	if n := cs.refreshes.Load() - refreshes; n != 0 {
		t.Fatalf("a covered table of an unchanged catalog was loaded %d times", n)
	}
	h.append(4, 5)
	waitFor(t, "commit woken by the check delivered", delivered(2))
	if n := cs.refreshes.Load() - refreshes; n < 1 || n > 3 {
		t.Fatalf("%d loads for one commit, want one or two", n)
	}
	// The check fails from now on (so do the table's loads): the table
	// polls on its own.
	db, err := sql.Open(sqliteshim.ShimName, strings.TrimPrefix(h.env.CatalogURI, "sql://"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The checks read every millisecond: the rename waits for its lock
	// (one connection, so the PRAGMA is the rename's).
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("PRAGMA busy_timeout = 10000"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("ALTER TABLE iceberg_tables RENAME TO gone"); err != nil {
		t.Fatal(err)
	}
	refreshes = cs.refreshes.Load()
	waitFor(t, "uncovered table polls", func() bool { return cs.refreshes.Load() > refreshes+2 })
	cancel()
	<-done
}

// activeSource counts the tables inside a Commit at once.
type activeSource struct {
	*cdctest.Source
	in, peak *atomic.Int64
}

func (s *activeSource) Commit(ctx context.Context, si cdc.SnapshotInfo) (*cdc.Commit, error) {
	n := s.in.Add(1)
	defer s.in.Add(-1)
	for {
		old := s.peak.Load()
		if n <= old || s.peak.CompareAndSwap(old, n) {
			break
		}
	}
	time.Sleep(20 * time.Millisecond) // so that reads left unbounded overlap
	return s.Source.Commit(ctx, si)
}

// TestMaxActiveBoundsReads: sixty tables, each with a backlog, start at
// once; no more than MaxActive of them read at the same time, and every
// one is delivered.
func TestMaxActiveBoundsReads(t *testing.T) {
	f := newFast(t)
	var in, peak atomic.Int64
	var specs []cdc.TableSpec
	for i := range 60 {
		src := cdctest.New(cdctest.Info("shop", fmt.Sprintf("t%d", i)))
		src.Append(cdctest.Inserts(1, 2)...)
		specs = append(specs, cdc.TableSpec{Name: fmt.Sprintf("shop.t%d", i), Source: &activeSource{Source: src, in: &in, peak: &peak},
			Start: cdc.Start{Kind: cdc.StartEarliest}})
	}
	p := &cdc.Pipeline{Name: "p", Tables: specs, Encoder: newEncoder("p"), Sink: f.sink, Store: f.store, Once: true, MaxActive: 3}
	if err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(f.sink.IDs()); n != 120 {
		t.Fatalf("%d events delivered, want 120", n)
	}
	if m := peak.Load(); m > 3 {
		t.Fatalf("%d tables read at once, want at most MaxActive 3", m)
	}
}

// TestFirstDeliveryLoadsOnce: a table's first delivery costs one load of
// its metadata, not a load to read the position and another to catch up
// (at 10,000 tables, 10,000 catalog calls fewer).
func TestFirstDeliveryLoadsOnce(t *testing.T) {
	f := newFast(t)
	f.src.Append(cdctest.Inserts(1, 2)...)
	if err := f.run("earliest"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.sink.IDs()); n != 2 {
		t.Fatalf("%d events delivered, want 2", n)
	}
	if n := f.src.Calls("Refresh"); n != 1 {
		t.Fatalf("%d loads for the first delivery, want 1", n)
	}
}

// storeAndFile opens the harness's state file and its file sink, closed
// when the test ends.
func (h *harness) storeAndFile() (*state.Store, *file.Sink) {
	h.t.Helper()
	store, err := state.Open(h.state, state.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { store.Close() })
	fs, err := file.Open(h.out)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { fs.Close(h.ctx) })
	return store, fs
}
