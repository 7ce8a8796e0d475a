package source_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/glue"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

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
	first, err := scenario.CreateTableIn(ctx, writer, table.Identifier{"many", "t000"}, scenario.TableDef{Schema: scenario.OrdersSchema(), FormatVersion: 3})
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
	calls := &callCounts{}
	proxy := moto.NewProxy(t, srv.Endpoint)
	proxy.Set(func(r *http.Request, _ int) moto.Fault {
		op, _ := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AWSGlue.")
		calls.add(op)
		return moto.Pass
	})
	p := maps.Clone(props)
	delete(p, "type")
	delete(p, "warehouse")
	p["glue.endpoint"] = proxy.URL
	o := source.Options{CatalogType: "glue", Warehouse: "s3://bulk/wh", Props: p}
	checkBulkCounted(t, o, names, checks, calls, func(got map[string]int) string {
		// Pages of 100 are asked for; moto sends every table in one.
		if n := got["GetTables"]; len(got) != 1 || n < checks || n > checks*2 {
			return fmt.Sprintf("calls %v, want GetTables alone, one or two (pages) a check", got)
		}
		return ""
	}, func(name string) { commitTo(t, writer, name) })
}
