package source_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// restFront is a REST catalog in front of a scenario's SQLite catalog:
// loadTable answers with the table's current metadata, and, with etags,
// an ETag (as Iceberg Java's RESTCatalogServer does, a hash of the
// metadata location), honouring If-None-Match with 304 Not Modified.
type restFront struct {
	env         *scenario.Env
	etags       bool
	lies        bool // answers 304 to every If-None-Match
	full, unmod atomic.Int64
	conditional atomic.Int64 // requests that carried If-None-Match
}

func (f *restFront) serve(t *testing.T) string {
	srv := hostileREST(t, nil, func(w http.ResponseWriter, r *http.Request) {
		i := strings.Index(r.URL.Path, "/namespaces/")
		parts := strings.Split(r.URL.Path[i+len("/namespaces/"):], "/")
		if i < 0 || len(parts) != 3 || parts[1] != "tables" {
			http.NotFound(w, r)
			return
		}
		tbl, err := f.env.LoadTable(r.Context(), table.Identifier{parts[0], parts[2]})
		if err != nil {
			http.NotFound(w, r)
			return
		}
		loc := tbl.MetadataLocation()
		sum := sha256.Sum256([]byte(loc))
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		if r.Header.Get("If-None-Match") != "" {
			f.conditional.Add(1)
		}
		if f.etags {
			if inm := r.Header.Get("If-None-Match"); inm == etag || (f.lies && inm != "") {
				f.unmod.Add(1)
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("ETag", etag)
		}
		raw, err := os.ReadFile(strings.TrimPrefix(loc, "file://"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		f.full.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"metadata-location": loc, "metadata": json.RawMessage(raw)})
	})
	return srv.URL
}

// TestRESTLoadUsesETag: against a REST catalog that sends ETags, an
// unchanged table's Refresh sends If-None-Match and is answered 304, with
// no metadata sent or decoded, and reports no change; a commit changes the
// ETag, and the next Refresh loads it. Against one that sends none, no
// request is conditional and every Refresh is a full load.
func TestRESTLoadUsesETag(t *testing.T) {
	for _, etags := range []bool{true, false} {
		t.Run(fmt.Sprintf("etags=%v", etags), func(t *testing.T) {
			ctx := context.Background()
			env, names := manyTables(t, "shop", 1)
			front := &restFront{env: env, etags: etags}
			uri := front.serve(t)
			src, err := source.Open(ctx, source.Options{CatalogType: "rest", CatalogURI: uri, Table: names[0],
				AllowedLocations: []string{env.Warehouse}})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			for range 3 {
				if changed, err := src.Refresh(ctx); err != nil || changed {
					t.Fatalf("refresh of an unchanged table: changed %v, err %v", changed, err)
				}
			}
			tbl, err := env.LoadTable(ctx, catalog.ToIdentifier(names[0]))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := scenario.Append(ctx, tbl, orders(50, 50)); err != nil {
				t.Fatal(err)
			}
			if changed, err := src.Refresh(ctx); err != nil || !changed {
				t.Fatalf("refresh after a commit: changed %v, err %v", changed, err)
			}
			if h, _ := src.Head(); h.SequenceNumber != 2 {
				t.Fatalf("head at sequence number %d after the commit, want 2", h.SequenceNumber)
			}
			full, unmod, cond := front.full.Load(), front.unmod.Load(), front.conditional.Load()
			t.Logf("full answers %d, 304 answers %d, conditional requests %d", full, unmod, cond)
			switch {
			case etags && (full != 2 || unmod != 3):
				t.Errorf("%d full loadTable answers and %d 304s, want 2 (the first load, the commit) and 3 (the unchanged refreshes)", full, unmod)
			case !etags && (full != 5 || cond != 0):
				t.Errorf("without ETags: %d full answers and %d conditional requests, want 5 and 0", full, cond)
			}
		})
	}
}

// TestSQLCatalogChecksChangesInBulk: a shared SQLite catalog's change
// check covers every table loaded through it, wakes none while nothing
// changed, and exactly the one a writer committed to.
func TestSQLCatalogChecksChangesInBulk(t *testing.T) {
	env, names := manyTables(t, "many", 12)
	o := source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse}
	checkBulk(t, o, names, func(name string) { commitTo(t, env.Catalog, name) })
}

// TestHadoopCatalogChecksChangesInBulk: the same for a hadoop warehouse,
// checked through its tables' version-hint.text.
func TestHadoopCatalogChecksChangesInBulk(t *testing.T) {
	ctx := context.Background()
	wh := "file://" + filepath.Join(t.TempDir(), "wh")
	cat, err := catalog.Load(ctx, "h", iceberg.Properties{"type": "hadoop", "warehouse": wh})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := range 6 {
		ident := table.Identifier{"many", fmt.Sprintf("t%d", i)}
		tbl, err := scenario.CreateTableIn(ctx, cat, ident, scenario.TableDef{Schema: scenario.OrdersSchema(), FormatVersion: 3})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scenario.Append(ctx, tbl, orders(int64(i*10), int64(i*10))); err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.Join(ident, "."))
	}
	o := source.Options{CatalogType: "hadoop", Warehouse: wh}
	checkBulk(t, o, names, func(name string) { commitTo(t, cat, name) })
}

// commitTo appends a row to the table name of cat.
func commitTo(t *testing.T, cat catalog.Catalog, name string) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, catalog.ToIdentifier(name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Append(ctx, tbl, orders(50, 50)); err != nil {
		t.Fatal(err)
	}
}

// manyTables is a scenario's SQLite catalog with n one-commit tables in
// namespace ns, closed when the test ends.
func manyTables(t *testing.T, ns string, n int) (*scenario.Env, []string) {
	t.Helper()
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	names, err := env.ManyTables(ctx, ns, n)
	if err != nil {
		t.Fatal(err)
	}
	return env, names
}

// checkBulk loads names through one shared catalog of o, checks it for
// changes twice with nothing changed (no table woken, all covered), then
// commits to one table and checks that only it is woken, and that its
// Refresh then finds the commit.
func checkBulk(t *testing.T, o source.Options, names []string, commit func(name string)) {
	t.Helper()
	checkBulkCounted(t, o, names, 2, nil, nil, commit)
}

// checkBulkCounted is checkBulk with checks idle checks, and, with calls,
// the catalog calls they made (the counts of calls) judged by want (""
// when right).
func checkBulkCounted(t *testing.T, o source.Options, names []string, checks int, calls *callCounts, want func(map[string]int) string, commit func(name string)) {
	t.Helper()
	ctx := context.Background()
	cat, srcs := sharedTables(t, o, 8, names)
	if calls != nil {
		t.Logf("loading %d tables: %s", len(names), calls)
		calls.take()
	}
	woken := func() (out []string) {
		for i, src := range srcs {
			ch, covered := src.Changes()
			if !covered {
				t.Fatalf("%s is not covered by the catalog's change check", names[i])
			}
			select {
			case <-ch:
				out = append(out, names[i])
			default:
			}
		}
		return out
	}
	for range checks {
		if err := cat.CheckChanges(ctx); err != nil {
			t.Fatal(err)
		}
		if w := woken(); len(w) != 0 {
			t.Fatalf("nothing changed, yet the check woke %v", w)
		}
	}
	if calls != nil {
		t.Logf("%d checks of %d idle tables: %s", checks, len(names), calls)
		if msg := want(calls.take()); msg != "" {
			t.Fatalf("%d checks of %d idle tables: %s", checks, len(names), msg)
		}
	}
	// Near the end: past a first page or batch of 100.
	i := len(names) * 5 / 6
	target := names[i]
	commit(target)
	if err := cat.CheckChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if w := woken(); fmt.Sprint(w) != fmt.Sprint([]string{target}) {
		t.Fatalf("after a commit to %s the check woke %v, want it alone", target, w)
	}
	if changed, err := srcs[i].Refresh(ctx); err != nil || !changed {
		t.Fatalf("refresh of the woken table: changed %v, err %v", changed, err)
	}
	if err := cat.CheckChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if w := woken(); len(w) != 0 {
		t.Fatalf("after the woken table loaded its commit the check woke %v", w)
	}
}

// callCounts counts a catalog's calls by name, as a server's traffic
// shows them.
type callCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *callCounts) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
}

// take returns the counts so far and starts again from zero.
func (c *callCounts) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = nil
	return n
}

func (c *callCounts) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name, n := range c.n {
		out = append(out, fmt.Sprintf("%s %d", name, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// TestIdleTableReadsAgain: a table told to idle, which dropped its
// caches and file index, reads its next commit as a table that never
// idled does: the same events.
func TestIdleTableReadsAgain(t *testing.T) {
	ctx := context.Background()
	env, names := manyTables(t, "shop", 1)
	o := source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse, Table: names[0]}
	idled, err := source.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer idled.Close()
	read := func(src *source.Table, seq int64) string { t.Helper(); return readCommitAt(t, src, seq) }
	read(idled, 1)
	idled.Idle()
	if idled.Iceberg() == nil {
		t.Fatal("a table no change check covers dropped its loaded metadata at Idle: each of its polls would rebuild it")
	}
	tbl, err := env.LoadTable(ctx, catalog.ToIdentifier(names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.AppendAndDelete(ctx, tbl, orders(60, 62), iceberg.EqualTo(iceberg.Reference("order_id"), int64(1))); err != nil {
		t.Fatal(err)
	}
	if changed, err := idled.Refresh(ctx); err != nil || !changed {
		t.Fatalf("refresh after the commit: changed %v, err %v", changed, err)
	}
	fresh, err := source.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	got, want := read(idled, 2), read(fresh, 2)
	if got != want || want == "" {
		t.Fatalf("the idled table read:\n%s\nwant (a fresh table's read):\n%s", got, want)
	}
}

// readCommitAt is the events of src's commit at sequence number seq, one
// line each.
func readCommitAt(t *testing.T, src *source.Table, seq int64) string {
	t.Helper()
	ctx := context.Background()
	snaps, err := src.Snapshots(ctx, seq-1, seq)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots at %d: %v, %v", seq, snaps, err)
	}
	c, err := src.Commit(ctx, snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := c.EachBatch(ctx, 0, func(evs []cdc.Event) error {
		for _, e := range evs {
			out = append(out, fmt.Sprintf("%s %v %v", e.Op, e.Before, e.After))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}

// TestCoveredIdleTableDropsMetadata: a table its catalog's change check
// covers drops its loaded metadata too when told to idle, so that an
// idle followed table costs about a kilobyte; a reload of the same
// metadata is no change, and a commit made meanwhile is read as a fresh
// table reads it.
func TestCoveredIdleTableDropsMetadata(t *testing.T) {
	ctx := context.Background()
	env, names := manyTables(t, "shop", 1)
	o := source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse}
	cat, srcs := sharedTables(t, o, 2, names)
	src := srcs[0]
	readCommitAt(t, src, 1)
	if err := cat.CheckChanges(ctx); err != nil {
		t.Fatal(err)
	}
	src.Idle()
	if src.Iceberg() != nil {
		t.Fatal("a covered idle table kept its loaded metadata")
	}
	if changed, err := src.Refresh(ctx); err != nil || changed {
		t.Fatalf("reload of the dropped metadata: changed %v, err %v; want unchanged", changed, err)
	}
	if h, ok := src.Head(); !ok || h.SequenceNumber != 1 || src.Info().UUID == "" {
		t.Fatalf("after the reload: head %+v (%v), info %+v", h, ok, src.Info())
	}
	src.Idle()
	tbl, err := env.LoadTable(ctx, catalog.ToIdentifier(names[0]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.AppendAndDelete(ctx, tbl, orders(60, 62), iceberg.EqualTo(iceberg.Reference("order_id"), int64(1))); err != nil {
		t.Fatal(err)
	}
	if err := cat.CheckChanges(ctx); err != nil {
		t.Fatal(err)
	}
	wake, covered := src.Changes()
	select {
	case <-wake:
	default:
		t.Fatalf("the check did not wake the idle table (covered %v)", covered)
	}
	if changed, err := src.Refresh(ctx); err != nil || !changed {
		t.Fatalf("refresh after the commit: changed %v, err %v", changed, err)
	}
	fo := o
	fo.Table = names[0]
	fresh, err := source.Open(ctx, fo)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	got, want := readCommitAt(t, src, 2), readCommitAt(t, fresh, 2)
	if got != want || want == "" {
		t.Fatalf("the idled table read:\n%s\nwant (a fresh table's read):\n%s", got, want)
	}
}
