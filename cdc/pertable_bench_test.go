package cdc_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/metrics"
	"github.com/icecdc/icecdc/state"
)

// tallySink counts the messages it is given and keeps none of them.
type tallySink struct{ n atomic.Int64 }

func (s *tallySink) Write(_ context.Context, b *cdc.Batch) error {
	s.n.Add(int64(len(b.Messages)))
	return nil
}
func (s *tallySink) Close(context.Context) error { return nil }

// BenchmarkFollowedTables measures what the pipeline's side of a
// followed table costs once it delivered its commit and idles, its
// catalog watching it and calling back on its wake-ups, so that it waits
// parked (docs/performance.md, many tables): heap-B/table
// is the heap the pipeline's tables keep (follower, logger, metrics,
// health; the scripted sources' own share is in it too) and
// stack-B/table their goroutines' stacks. Each iteration is one
// pipeline of 2,000 tables. Run for example:
//
//	go test ./cdc -run '^$' -bench FollowedTables -benchtime 3x -count 5
func BenchmarkFollowedTables(b *testing.B) {
	const tables = 2000
	var heapPer, stackPer float64
	for range b.N {
		store, err := state.Open(filepath.Join(b.TempDir(), "state.db"), state.Options{})
		if err != nil {
			b.Fatal(err)
		}
		sink := &tallySink{}
		p := &cdc.Pipeline{Name: "p", Encoder: newEncoder("p"), Sink: sink, Store: store,
			Poll: time.Millisecond, MaxPoll: time.Hour, IdleAfter: time.Hour, Warm: 16,
			Metrics: metrics.NewMetrics(nil), RetryInitial: time.Millisecond, RetryMax: time.Millisecond}
		for i := range tables {
			name := fmt.Sprintf("t%d", i)
			src := &notifySource{watchedSource: &watchedSource{Source: cdctest.New(cdctest.Info("shop", name)), wake: make(chan struct{}, 1), covered: true}}
			src.Append(cdctest.Inserts(i+1, 1)...)
			p.Tables = append(p.Tables, cdc.TableSpec{Name: "shop." + name, Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}})
		}
		h0, s0 := memory()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		for guard := time.Now().Add(time.Minute); sink.n.Load() < tables; time.Sleep(time.Millisecond) {
			if time.Now().After(guard) {
				b.Fatalf("%d of %d tables delivered within a minute", sink.n.Load(), tables)
			}
		}
		time.Sleep(100 * time.Millisecond) // the followers settle into their waits
		h1, s1 := memory()
		heapPer += (float64(h1) - float64(h0)) / tables
		stackPer += (float64(s1) - float64(s0)) / tables
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		store.Close()
	}
	b.ReportMetric(heapPer/float64(b.N), "heap-B/table")
	b.ReportMetric(stackPer/float64(b.N), "stack-B/table")
}

// memory is the heap in use after a collection, and the goroutine stacks.
func memory() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC() // stacks shrink at a collection
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}
