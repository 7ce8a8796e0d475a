package source_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// TestSharedCatalogReplacedByRename: tables sharing one SQLite catalog
// all see the commits of a copy renamed over the catalog file, which is
// reopened once for all of them, not once per table; closing a table
// leaves the catalog to the others.
func TestSharedCatalogReplacedByRename(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	names, err := env.ManyTables(ctx, "shop", 3)
	if err != nil {
		t.Fatal(err)
	}
	env.Close()
	var logs bytes.Buffer
	o := source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	cat := source.NewCatalog(o, 2)
	defer cat.Close()
	var srcs []*source.Table
	for _, name := range names {
		to := o
		to.Table, to.Catalog = name, cat
		src, err := source.New(to)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	heads := func() (seqs []int64) {
		t.Helper()
		for _, src := range srcs {
			if _, err := src.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			h, _ := src.Head()
			seqs = append(seqs, h.SequenceNumber)
		}
		return seqs
	}
	if got := fmt.Sprint(heads()); got != "[1 1 1]" {
		t.Fatalf("heads at sequence numbers %s, want 1 each", got)
	}
	// A table closed goes; the catalog stays for the others.
	srcs[0].Close()
	srcs = srcs[1:]

	dbPath := filepath.Join(dir, "catalog.db")
	raw, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dbPath+".new", raw, 0o644); err != nil {
		t.Fatal(err)
	}
	props := env.CatalogProperties()
	props["uri"] = "file:" + dbPath + ".new"
	wcat, err := catalog.Load(ctx, scenario.CatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names[1:] {
		tbl, err := wcat.LoadTable(ctx, catalog.ToIdentifier(name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scenario.Append(ctx, tbl, orders(100, 100)); err != nil {
			t.Fatal(err)
		}
	}
	wcat.(catalog.Closer).Close()
	if err := os.Rename(dbPath+".new", dbPath); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(heads()); got != "[2 2]" {
		t.Fatalf("after the rename: heads at sequence numbers %s, want 2 each (the commits made in the copy)", got)
	}
	if n := strings.Count(logs.String(), "sql catalog file was replaced"); n != 1 {
		t.Fatalf("want the shared catalog reopened once, got %d lines:\n%s", n, logs.String())
	}
}

// TestSharedCatalogConcurrency: the tables of a shared catalog, all
// refreshing at once, have at most its concurrency of calls in flight at
// the REST server; and each failed load still names its table.
func TestSharedCatalogConcurrency(t *testing.T) {
	const tables, limit = 20, 3
	var inFlight, most atomic.Int64
	srv := hostileREST(t, nil, func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		// Held so that loads that are let through at once overlap;
		// nothing is asserted about time.
		time.Sleep(50 * time.Millisecond)
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error": {"message": "no such table", "type": "NoSuchTableException", "code": 404}}`)
	})
	o := source.Options{CatalogType: "rest", CatalogURI: srv.URL}
	cat := source.NewCatalog(o, limit)
	defer cat.Close()
	var wg sync.WaitGroup
	errs := make([]error, tables)
	for i := range tables {
		to := o
		to.Table, to.Catalog = fmt.Sprintf("shop.t%02d", i), cat
		src, err := source.New(to)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		wg.Go(func() { _, errs[i] = src.Refresh(context.Background()) })
	}
	wg.Wait()
	if m := most.Load(); m > limit || m < 2 {
		t.Errorf("%d loads in flight at most, want 2 to %d (catalog concurrency %d)", m, limit, limit)
	}
	for i, err := range errs {
		if name := fmt.Sprintf("shop.t%02d", i); err == nil || !strings.HasPrefix(err.Error(), "table "+name+" does not exist in rest catalog") {
			t.Errorf("table %s: %v, want a load error naming it", name, err)
		}
	}
}
