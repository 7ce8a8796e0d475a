package source_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// BenchmarkBulkAppend processes one commit appending 1,000,000 rows,
// holding its inserts (held) or streaming them (streamed), and reports the
// peak heap seen while the events are drained batch by batch, as the
// daemon does.
func BenchmarkBulkAppend(b *testing.B) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1_000_000
	rows := make([]map[string]any, n)
	for i := range rows {
		rows[i] = scenario.Order(int64(i), "customer", "new", float64(i))
	}
	if _, err := scenario.Append(ctx, tbl, rows); err != nil {
		b.Fatal(err)
	}
	rows = nil
	for _, tc := range []struct {
		name string
		held int
	}{{"held", n + 1}, {"streamed", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			var peak uint64
			for b.Loop() {
				src, err := source.Open(ctx, source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse, Table: "shop.orders", MaxHeldRows: tc.held})
				if err != nil {
					b.Fatal(err)
				}
				snaps, _ := src.Snapshots(ctx, 0, 0)
				stop := scenario.HeapPeak()
				c, err := src.Commit(ctx, snaps[0])
				if err != nil {
					b.Fatal(err)
				}
				count := 0
				if err := c.EachBatch(ctx, 0, func(evs []cdc.Event) error { count += len(evs); return nil }); err != nil {
					b.Fatal(err)
				}
				p, _ := stop()
				if count != n {
					b.Fatalf("%d events, want %d", count, n)
				}
				peak = max(peak, p)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}
