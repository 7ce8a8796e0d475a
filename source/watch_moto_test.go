package source_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// glueCalls counts the Glue API calls that pass a moto.Proxy, by
// operation (X-Amz-Target AWSGlue.OPERATION).
type glueCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *glueCalls) choose(r *http.Request, _ int) moto.Fault {
	op, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AWSGlue.")
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[op]++
	return moto.Pass
}

// take returns the counts so far and starts again from zero.
func (c *glueCalls) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

func (c *glueCalls) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for op, n := range c.n {
		out = append(out, fmt.Sprintf("%s %d", op, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// TestGlueCatalogChecksChangesInBulk: on moto's Glue API, a shared glue
// catalog of 130 tables checks them all with a GetTables call a page of
// 100 (moto sends them all in one) and no GetTable, over 20 checks of the
// idle catalog, counted at a proxy in front of moto; then exactly the table a
// writer committed to is woken, and its Refresh finds the commit.
func TestGlueCatalogChecksChangesInBulk(t *testing.T) {
	const tables, checks = 130, 20
	ctx := context.Background()
	srv := moto.Start(t)
	srv.CreateBucket(t, "bulk")
	props := srv.GlueProps()
	props["warehouse"] = "s3://bulk/wh"
	props["type"] = "glue"
	loaded, err := catalog.Load(ctx, "glue", props)
	if err != nil {
		t.Fatal(err)
	}
	writer := loaded.(*glue.Catalog)
	first, err := scenario.CreateTableIn(ctx, writer, table.Identifier{"many", "t000"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first, err = scenario.Append(ctx, first, orders(1, 3)); err != nil {
		t.Fatal(err)
	}
	names := []string{"many.t000"}
	for i := 1; i < tables; i++ {
		ident := table.Identifier{"many", fmt.Sprintf("t%03d", i)}
		if _, err := writer.RegisterTable(ctx, ident, first.MetadataLocation()); err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.Join(ident, "."))
	}
	calls := &glueCalls{n: map[string]int{}}
	proxy := moto.NewProxy(t, srv.Endpoint)
	proxy.Set(calls.choose)
	p := maps.Clone(props)
	delete(p, "type")
	delete(p, "warehouse")
	p["glue.endpoint"] = proxy.URL
	o := source.Options{CatalogType: "glue", Warehouse: "s3://bulk/wh", Props: p}
	cat := source.NewCatalog(o, 8)
	defer cat.Close()
	var srcs []*source.Table
	for _, name := range names {
		to := o
		to.Table, to.Catalog = name, cat
		src, err := source.New(to)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if _, err := src.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, src)
	}
	t.Logf("loading %d tables: %s", tables, calls)
	calls.take()
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
	t.Logf("%d checks of %d idle tables: %s", checks, tables, calls)
	got := calls.take()
	// Pages of 100 are asked for; moto sends every table in one.
	if n := got["GetTables"]; len(got) != 1 || n < checks || n > checks*2 {
		t.Fatalf("%d checks of %d idle tables made the calls %v, want GetTables alone, one or two (pages) a check", checks, tables, got)
	}
	target := names[77]
	tbl, err := writer.LoadTable(ctx, catalog.ToIdentifier(target))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Append(ctx, tbl, orders(50, 50)); err != nil {
		t.Fatal(err)
	}
	if err := cat.CheckChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if w := woken(); fmt.Sprint(w) != fmt.Sprint([]string{target}) {
		t.Fatalf("after a commit to %s the check woke %v, want it alone", target, w)
	}
	if changed, err := srcs[77].Refresh(ctx); err != nil || !changed {
		t.Fatalf("refresh of the woken table: changed %v, err %v", changed, err)
	}
	if h, _ := srcs[77].Head(); h.SequenceNumber != 2 {
		t.Fatalf("woken table at sequence number %d, want 2", h.SequenceNumber)
	}
	if err := cat.CheckChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if w := woken(); len(w) != 0 {
		t.Fatalf("after the woken table loaded its commit the check woke %v", w)
	}
}
