package iceberg

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// benchTargets numbers the benchmark's target tables.
var benchTargets atomic.Int64

// BenchmarkBulkCommit delivers one source commit of ICECDC_BENCH_EVENTS
// inserts (default 1,000,000) from a real v3 table into a target table
// (iceberg), and, in the same run, into a JSON-lines file (file, the
// reference): events/s, the target's data files and commits, and the
// peak heap.
//
//	go test ./sinks/iceberg/ -run '^$' -bench BulkCommit -benchtime 3x
func BenchmarkBulkCommit(b *testing.B) {
	n := int64(1_000_000)
	if v := os.Getenv("ICECDC_BENCH_EVENTS"); v != "" {
		var err error
		if n, err = strconv.ParseInt(v, 10, 64); err != nil {
			b.Fatal(err)
		}
	}
	var commitBytes int64 // ICECDC_BENCH_COMMIT_BYTES, default DefaultCommitBytes
	if v := os.Getenv("ICECDC_BENCH_COMMIT_BYTES"); v != "" {
		var err error
		if commitBytes, err = strconv.ParseInt(v, 10, 64); err != nil {
			b.Fatal(err)
		}
	}
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
	if _, err := scenario.BulkAppend(ctx, tbl, n); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, sink cdc.Sink, enc cdc.Encoder) {
		src, err := source.Open(ctx, source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse, Table: "shop.orders"})
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		store, err := state.Open(filepath.Join(b.TempDir(), "state.db"), state.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
			Encoder: enc, Sink: sink, Store: store, Once: true, Poll: time.Millisecond, Log: slog.New(slog.DiscardHandler)}
		if err := p.Run(ctx); err != nil {
			b.Fatal(err)
		}
		if err := sink.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("iceberg", func(b *testing.B) {
		var files, commits int
		var peak uint64
		start := time.Now()
		for range b.N {
			i := benchTargets.Add(1) // a new target each time, across -count too
			s, err := New(Config{Table: fmt.Sprintf("audit%d.{table}_changes", i), Pipeline: "p", CommitBytes: commitBytes,
				Catalog: CatalogConfig{Name: scenario.CatalogName, Type: "sql", URI: env.CatalogURI, Warehouse: env.Warehouse},
				Logger:  slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			stop := scenario.HeapPeak()
			run(b, s, Encoder{})
			p, _ := stop()
			peak = max(peak, p)
			tgt, err := env.Catalog.LoadTable(ctx, table.Identifier{fmt.Sprintf("audit%d", i), "orders_changes"})
			if err != nil {
				b.Fatal(err)
			}
			sum := tgt.CurrentSnapshot().Summary.Properties
			if got := sum["total-records"]; got != strconv.FormatInt(n, 10) {
				b.Fatalf("target holds %s rows, want %d", got, n)
			}
			files, _ = strconv.Atoi(sum["total-data-files"])
			commits = len(tgt.Metadata().Snapshots())
		}
		b.ReportMetric(float64(n)*float64(b.N)/time.Since(start).Seconds(), "events/s")
		b.ReportMetric(float64(files), "target_files")
		b.ReportMetric(float64(commits), "commits")
		b.ReportMetric(float64(peak)/(1<<20), "peak_heap_MiB")
	})
	b.Run("file", func(b *testing.B) {
		var peak uint64
		start := time.Now()
		for range b.N {
			s, err := file.Open(filepath.Join(b.TempDir(), "events.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			stop := scenario.HeapPeak()
			run(b, s, &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p"}})
			p, _ := stop()
			peak = max(peak, p)
		}
		b.ReportMetric(float64(n)*float64(b.N)/time.Since(start).Seconds(), "events/s")
		b.ReportMetric(float64(peak)/(1<<20), "peak_heap_MiB")
	})
}
