package source_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// BenchmarkFollowedTable measures what one followed table of a whole
// catalog costs (docs/performance.md, many tables): a table of one
// commit is opened on a shared catalog, loaded and its commit read, as a
// daemon's first delivery does; B/op is what that allocates. Then the
// heap the tables keep is reported per table: kept-B/table while each
// still holds what its read left, idle-B/table after each was told to
// idle (cdc.Idler), which is what a followed table that does not change
// costs. Run for example:
//
//	go test ./source -run '^$' -bench FollowedTable -benchtime 2000x -count 5
func BenchmarkFollowedTable(b *testing.B) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	names, err := env.ManyTables(ctx, "many", 1)
	if err != nil {
		b.Fatal(err)
	}
	env.Close()
	o := source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse}
	cat := source.NewCatalog(o, 4)
	defer cat.Close()
	srcs := make([]*source.Table, 0, b.N)
	defer func() {
		for _, s := range srcs {
			s.Close()
		}
	}()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		to := o
		to.Table, to.Catalog = names[0], cat
		src, err := source.New(to)
		if err != nil {
			b.Fatal(err)
		}
		srcs = append(srcs, src)
		if _, err := src.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
		snaps, err := src.Snapshots(ctx, 0, 0)
		if err != nil || len(snaps) != 1 {
			b.Fatalf("snapshots %v, %v; want one", snaps, err)
		}
		c, err := src.Commit(ctx, snaps[0])
		if err != nil || c.Len() != 1 {
			b.Fatalf("commit: %v, %v; want one event", c, err)
		}
	}
	b.StopTimer()
	kept := heap()
	// The catalog's change check covers them: an idle covered table
	// drops its loaded metadata too.
	if err := cat.CheckChanges(ctx); err != nil {
		b.Fatal(err)
	}
	for _, s := range srcs {
		s.Idle()
	}
	idle := heap()
	per := func(h uint64) float64 { return (float64(h) - float64(before)) / float64(b.N) }
	b.ReportMetric(per(kept), "kept-B/table")
	b.ReportMetric(per(idle), "idle-B/table")
}
