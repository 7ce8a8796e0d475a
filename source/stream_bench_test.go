package source_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// BenchmarkBulkChanges computes one commit that deletes (by deletion
// vector) or updates (position delta, row ids kept) 1,000,000 rows, as
// `icecdc changes` does: every event encoded as debezium-json and thrown
// away. It reports events/s and the peak heap above the heap before the
// commit. ICECDC_BENCH_10M=1 adds the 10,000,000-row commits (building
// them takes minutes); ICECDC_BENCH_TABLES=dir keeps the tables there
// (and reuses them), for measuring the binary on them
// (bench/bulk_changes.sh).
func BenchmarkBulkChanges(b *testing.B) {
	sizes := []int64{1_000_000}
	if os.Getenv("ICECDC_BENCH_10M") != "" {
		sizes = append(sizes, 10_000_000)
	}
	for _, n := range sizes {
		for _, update := range []bool{false, true} {
			name := fmt.Sprintf("delete-%dk", n/1000)
			if update {
				name = fmt.Sprintf("update-%dk", n/1000)
			}
			b.Run(name, func(b *testing.B) {
				meta := bulkTable(b, name, n, update)
				for _, mem := range []struct {
					name  string
					bytes int64
				}{{"default", 0}, {"spill", 1 << 20}} {
					if !update && mem.bytes > 0 {
						continue // a delete holds no image
					}
					b.Run(mem.name, func(b *testing.B) { benchBulkChanges(b, meta, n, mem.bytes) })
				}
			})
		}
	}
}

func benchBulkChanges(b *testing.B, meta string, n, maxMemory int64) {
	ctx := context.Background()
	var peak uint64
	for b.Loop() {
		src, err := source.Open(ctx, source.Options{MetadataPath: meta, MaxMemory: maxMemory})
		if err != nil {
			b.Fatal(err)
		}
		snaps, err := src.Snapshots(ctx, 1, 0)
		if err != nil || len(snaps) != 1 {
			b.Fatalf("snapshots: %v %v", snaps, err)
		}
		stop := scenario.HeapPeak()
		c, err := src.Commit(ctx, snaps[0])
		if err != nil {
			b.Fatal(err)
		}
		enc := &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "bench", Version: "bench"}}
		var buf []byte
		count := 0
		err = c.EachBatch(ctx, 0, func(evs []cdc.Event) error {
			for i := range evs {
				if buf, err = enc.AppendValue(buf[:0], c, &evs[i], 0); err != nil {
					return err
				}
				if _, err := io.Discard.Write(buf); err != nil {
					return err
				}
			}
			count += len(evs)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		if p, _ := stop(); p > peak {
			peak = p
		}
		if int64(count) != n {
			b.Fatalf("%d events, want %d", count, n)
		}
		src.Close()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// bulkTable builds (or, under ICECDC_BENCH_TABLES, reuses) a table of
// n+1000 orders appended in one commit, then one commit deleting or
// updating the first n, and returns its metadata file.
func bulkTable(b *testing.B, name string, n int64, update bool) string {
	ctx := context.Background()
	dir := b.TempDir()
	if keep := os.Getenv("ICECDC_BENCH_TABLES"); keep != "" {
		dir = filepath.Join(keep, name)
		if meta, err := os.ReadFile(filepath.Join(dir, "METADATA")); err == nil {
			return strings.TrimSpace(string(meta))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		b.Fatal(err)
	}
	if tbl, err = scenario.BulkAppend(ctx, tbl, n+1000); err != nil {
		b.Fatal(err)
	}
	if tbl, err = scenario.BulkDeleteFirst(ctx, tbl, n, update); err != nil {
		b.Fatal(err)
	}
	meta := strings.TrimPrefix(tbl.MetadataLocation(), "file://")
	if err := os.WriteFile(filepath.Join(dir, "METADATA"), []byte(meta+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %s", name, meta)
	return meta
}
