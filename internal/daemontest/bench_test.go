package daemontest

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// Throughput benchmarks follow one table of benchRows rows, appended in
// benchCommits commits, from the earliest snapshot to the head, with the
// pipeline's default chunk (500 events) and a real bbolt state file.
const (
	benchRows    = 100_000
	benchCommits = 10
)

var (
	benchOnce  sync.Once
	benchEnv   *scenario.Env
	benchErr   error
	benchDir   string
	benchTable = "bench.orders"
)

// benchLake builds the throughput table once per test binary.
func benchLake(b *testing.B) *scenario.Env {
	b.Helper()
	benchOnce.Do(func() {
		ctx := context.Background()
		if benchDir, benchErr = os.MkdirTemp("", "icecdc-bench-"); benchErr != nil {
			return
		}
		cleanups = append(cleanups, func() { os.RemoveAll(benchDir) })
		if benchEnv, benchErr = scenario.NewEnv(ctx, benchDir); benchErr != nil {
			return
		}
		var w *writer
		if w, benchErr = newWriter(ctx, benchEnv, benchTable, 1); benchErr != nil {
			return
		}
		for range benchCommits {
			if w.tbl, benchErr = scenario.Append(ctx, w.tbl, w.rows(benchRows/benchCommits, "new")); benchErr != nil {
				return
			}
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchEnv
}

// countingSink passes batches on to a real sink (none: discard) and
// calls done once it confirmed want events.
type countingSink struct {
	next    cdc.Sink
	want    int64
	done    func()
	events  atomic.Int64
	bytes   atomic.Int64
	batches atomic.Int64
}

func (s *countingSink) Write(ctx context.Context, b *cdc.Batch) error {
	if s.next != nil {
		if err := s.next.Write(ctx, b); err != nil {
			return err
		}
	}
	n := 0
	for _, m := range b.Messages {
		n += len(m.Key) + len(m.Value)
	}
	s.bytes.Add(int64(n))
	s.batches.Add(1)
	if s.events.Add(int64(len(b.Messages))) >= s.want {
		s.done()
	}
	return nil
}

func (s *countingSink) Close(ctx context.Context) error {
	if s.next != nil {
		return s.next.Close(ctx)
	}
	return nil
}

// runPipeline follows the bench table from the earliest snapshot into
// sink with a fresh state file, until sink has confirmed every row.
func runPipeline(b *testing.B, env *scenario.Env, sink cdc.Sink) *countingSink {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, err := source.Open(ctx, source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse, Table: benchTable})
	if err != nil {
		b.Fatal(err)
	}
	st, err := state.Open(filepath.Join(b.TempDir(), "state.db"), state.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cs := &countingSink{next: sink, want: benchRows, done: cancel}
	p := &cdc.Pipeline{
		Name:   "bench",
		Tables: []cdc.TableSpec{{Name: benchTable, Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Sink:   cs, Store: st,
		Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "bench"}},
	}
	if err := p.Run(ctx); err != nil {
		b.Fatal(err)
	}
	if n := cs.events.Load(); n != benchRows {
		b.Fatalf("delivered %d events, want %d", n, benchRows)
	}
	if cp, _, err := st.Load(context.Background(), "bench", benchTable); err != nil || !cp.Done || cp.Seq != benchCommits {
		b.Fatalf("checkpoint %s, %v; want snapshot %d done", cp, err, benchCommits)
	}
	return cs
}

func report(b *testing.B, events, bytes int64) {
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(events)/s, "events/s")
	b.ReportMetric(float64(bytes)/s/1e6, "MB/s")
}

// peakHeap reports the highest live heap seen until stop is called, in
// MiB.
func peakHeap(b *testing.B) (stop func()) {
	sample := scenario.HeapPeak()
	return func() {
		_, top := sample()
		b.ReportMetric(float64(top)/(1<<20), "peak-heap-MiB")
	}
}

// BenchmarkPipelineFile is the same into the file sink, fsynced per batch.
func BenchmarkPipelineFile(b *testing.B) {
	env := benchLake(b)
	var events, bytes int64
	stop := peakHeap(b)
	for b.Loop() {
		b.StopTimer()
		sink, err := file.Open(filepath.Join(b.TempDir(), "events.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cs := runPipeline(b, env, sink)
		if err := sink.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		events += cs.events.Load()
		bytes += cs.bytes.Load()
	}
	report(b, events, bytes)
	stop()
}

// BenchmarkPipelineDiscard measures the pipeline alone: the engine, the
// encoding and the fsynced checkpoints, into a sink that drops what it
// gets.
func BenchmarkPipelineDiscard(b *testing.B) {
	env := benchLake(b)
	var events, bytes int64
	stop := peakHeap(b)
	for b.Loop() {
		cs := runPipeline(b, env, nil)
		events += cs.events.Load()
		bytes += cs.bytes.Load()
	}
	report(b, events, bytes)
	stop()
}

// BenchmarkPipelineKfake is the same into the Kafka sink (at least once,
// acks=all) on an in-process kfake cluster of three brokers, a new one
// per iteration.
func BenchmarkPipelineKfake(b *testing.B) {
	env := benchLake(b)
	var events, bytes int64
	for b.Loop() {
		b.StopTimer()
		c, err := kfake.NewCluster(kfake.NumBrokers(3))
		if err != nil {
			b.Fatal(err)
		}
		sink, err := kafka.New(kafka.Config{Brokers: c.ListenAddrs(), Pipeline: "bench", Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cs := runPipeline(b, env, sink)
		b.StopTimer()
		if err := sink.Close(context.Background()); err != nil {
			b.Fatal(err)
		}
		c.Close()
		b.StartTimer()
		events += cs.events.Load()
		bytes += cs.bytes.Load()
	}
	report(b, events, bytes)
}

// arrivals records when each snapshot's first batch reached the sink.
type arrivals struct {
	mu sync.Mutex
	at map[int64]time.Time // by sequence number
}

func (a *arrivals) Write(_ context.Context, b *cdc.Batch) error {
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.at[b.Snapshot.SequenceNumber]; !ok {
		a.at[b.Snapshot.SequenceNumber] = now
	}
	return nil
}

func (a *arrivals) Close(context.Context) error { return nil }

// Latency benchmark shape: latencyCommits small commits (1–10 rows) at
// random intervals of 100 ms to 1.5 s, followed with a 1 s poll.
const (
	latencyCommits = 30
	latencyPoll    = time.Second
)

// BenchmarkCommitToDelivery measures, per commit, the time from the
// snapshot's timestamp-ms to the arrival of its events at the sink, with
// the pipeline polling every second, and reports the percentiles over all
// commits of all iterations. The timestamp is taken by the writer before
// it writes the manifests and commits to the catalog, so the time the
// commit itself takes counts too (reported as commit-p50-ms). Run it with
// -benchtime 1x: an iteration takes about 25 s.
func BenchmarkCommitToDelivery(b *testing.B) {
	var lat, commit []float64
	for b.Loop() {
		l, c := latencyRun(b, uint64(len(lat)+1))
		lat, commit = append(lat, l...), append(commit, c...)
	}
	slices.Sort(lat)
	slices.Sort(commit)
	b.ReportMetric(percentile(lat, 50), "p50-ms")
	b.ReportMetric(percentile(lat, 99), "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
	b.ReportMetric(percentile(commit, 50), "commit-p50-ms")
}

func percentile(sorted []float64, p float64) float64 {
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// latencyRun makes one table, follows it in-process, commits to it and
// returns the commit-to-arrival and the commit durations, in ms.
func latencyRun(b *testing.B, seed uint64) (lat, commit []float64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := newEnv(b, filepath.Join(b.TempDir(), "lake"))
	w, err := newWriter(ctx, env, "shop.orders", seed)
	if err != nil {
		b.Fatal(err)
	}
	src, err := source.Open(ctx, source.Options{CatalogURI: env.CatalogURI + busyTimeout, Warehouse: env.Warehouse, Table: "shop.orders"})
	if err != nil {
		b.Fatal(err)
	}
	st, err := state.Open(filepath.Join(b.TempDir(), "state.db"), state.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	sink := &arrivals{at: map[int64]time.Time{}}
	p := &cdc.Pipeline{
		Name:   "latency",
		Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Sink:   sink, Store: st, Poll: latencyPoll,
		Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "latency"}},
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	rng := rand.New(rand.NewPCG(seed, 7))
	stamps := map[int64]time.Time{}
	for range latencyCommits {
		time.Sleep(time.Duration(100+rng.IntN(1401)) * time.Millisecond)
		next, err := scenario.Append(ctx, w.tbl, w.rows(1+rng.IntN(10), "new"))
		if err != nil {
			b.Fatal(err)
		}
		w.tbl = next
		s := next.CurrentSnapshot()
		stamps[s.SequenceNumber] = time.UnixMilli(s.TimestampMs)
		commit = append(commit, float64(time.Since(time.UnixMilli(s.TimestampMs)).Milliseconds()))
	}
	deadline := time.Now().Add(10 * latencyPoll)
	for {
		sink.mu.Lock()
		n := len(sink.at)
		sink.mu.Unlock()
		if n == latencyCommits {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d commits arrived", n, latencyCommits)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	for seq, ts := range stamps {
		lat = append(lat, float64(sink.at[seq].Sub(ts).Microseconds())/1000)
	}
	return lat, commit
}
