package daemontest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// The engine-to-sink benchmark's table: one deletion vector removing
// ratioRows of 2×ratioRows rows (ICECDC_BENCH_BULK sets it), the
// commit bench/delivery.sh times with the binary.
var (
	ratioOnce sync.Once
	ratioMeta string
	ratioRows int64
	ratioErr  error
)

func ratioTable(b *testing.B) (string, int64) {
	b.Helper()
	ratioOnce.Do(func() {
		ratioRows = 200_000
		if s := os.Getenv("ICECDC_BENCH_BULK"); s != "" {
			if ratioRows, ratioErr = strconv.ParseInt(s, 10, 64); ratioErr != nil {
				return
			}
		}
		ctx := context.Background()
		var dir string
		if dir, ratioErr = os.MkdirTemp("", "icecdc-ratio-"); ratioErr != nil {
			return
		}
		cleanups = append(cleanups, func() { os.RemoveAll(dir) })
		var env *scenario.Env
		if env, ratioErr = scenario.NewEnv(ctx, dir); ratioErr != nil {
			return
		}
		defer env.Close()
		var tbl *table.Table
		if tbl, ratioErr = env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil); ratioErr != nil {
			return
		}
		if tbl, ratioErr = scenario.BulkAppend(ctx, tbl, 2*ratioRows); ratioErr != nil {
			return
		}
		if tbl, ratioErr = scenario.BulkDeleteFirst(ctx, tbl, ratioRows, false); ratioErr != nil {
			return
		}
		ratioMeta = tbl.MetadataLocation()
	})
	if ratioErr != nil {
		b.Fatal(ratioErr)
	}
	return ratioMeta, ratioRows
}

// envInt is the number in environment variable name, 0 when unset.
func envInt(b *testing.B, name string) int {
	s := os.Getenv(name)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}

// cpuTime is the process's CPU time, user + system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ratioChanges does what `icecdc changes --from-seq 1 > /dev/null` does
// with the bulk commit: every event's value encoded as debezium-json, a
// line each, into a buffered writer that drops it.
func ratioChanges(b *testing.B, meta string, n int64) {
	ctx := context.Background()
	src, err := source.Open(ctx, source.Options{MetadataPath: meta})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	snaps, err := src.Snapshots(ctx, 1, 0)
	if err != nil || len(snaps) != 1 {
		b.Fatalf("snapshots: %v %v", snaps, err)
	}
	c, err := src.Commit(ctx, snaps[0])
	if err != nil {
		b.Fatal(err)
	}
	enc := &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "bench", Version: "bench"}}
	w := bufio.NewWriterSize(io.Discard, 1<<16)
	var buf []byte
	count := int64(0)
	err = c.EachBatch(ctx, 0, func(evs []cdc.Event) error {
		for i := range evs {
			if buf, err = enc.AppendValue(buf[:0], c, &evs[i], 0); err != nil {
				return err
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		count += int64(len(evs))
		return nil
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		b.Fatal(err)
	}
	if count != n {
		b.Fatalf("changes: %d events, want %d", count, n)
	}
}

// ratioEncoder is the encoder of a format, as run makes it.
func ratioEncoder(b *testing.B, format string) cdc.Encoder {
	env := debezium.Envelope{Pipeline: "bench", Version: "bench"}
	switch format {
	case "debezium-json":
		return &debezium.JSON{Envelope: env}
	case "debezium-connect-json":
		enc, err := debezium.NewConnectJSON(env, debezium.ConnectOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return enc
	}
	b.Fatalf("format %s", format)
	return nil
}

// ratioRun delivers the bulk commit with `run --once`'s pipeline (a
// state file, the sink's acknowledgement, a checkpoint per batch).
func ratioRun(b *testing.B, meta string, n int64, sink cdc.Sink, enc cdc.Encoder) (batches int64) {
	ctx := context.Background()
	src, err := source.Open(ctx, source.Options{MetadataPath: meta})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	st, err := state.Open(filepath.Join(b.TempDir(), "state.db"), state.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	cs := &countingSink{next: sink, want: n + 1, done: func() {}}
	var counted cdc.Sink = cs
	if _, ok := sink.(cdc.NonRetainingSink); ok || sink == nil {
		counted = nonRetaining{cs} // as the sink itself is: the batch buffers are reused
	}
	p := &cdc.Pipeline{Name: "bench", Once: true, Encoder: enc, Sink: counted, Store: st, ChunkSize: envInt(b, "ICECDC_BENCH_CHUNK"), ChunkBytes: envInt(b, "ICECDC_BENCH_CHUNK_BYTES"),
		Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartSequence, Seq: 1}}}}
	if err := p.Run(ctx); err != nil {
		b.Fatal(err)
	}
	if got := cs.events.Load(); got != n {
		b.Fatalf("delivered %d events, want %d", got, n)
	}
	if cp, _, err := st.Load(ctx, "bench", "shop.orders"); err != nil || !cp.Done || cp.Seq != 2 {
		b.Fatalf("checkpoint %s, %v; want sequence number 2 done", cp, err)
	}
	return cs.batches.Load()
}

// nonRetaining is a countingSink in front of a sink that keeps nothing of
// a batch (or of none).
type nonRetaining struct{ *countingSink }

func (nonRetaining) RetainsNoBatch() {}

// BenchmarkEngineToSink measures what delivery adds to the engine, as
// the goals of issue 33 put it: the CPU of `run --once` over that of
// `changes`, for one commit (a deletion vector removing 200,000 of
// 400,000 rows; ICECDC_BENCH_BULK sets the count). Every iteration runs
// `changes`' loop (values encoded as debezium-json into a buffered
// discard) and then the path, so the reported cpu-ratio compares runs
// a few seconds apart on the same machine, whatever its load:
//
//   - discard/<format>: the pipeline, the state file and a sink that drops
//     what it gets;
//   - file/<format>: the file sink (written and fsynced per batch);
//   - kafka/<format>: the Kafka sink (at least once, acks=all) to the
//     broker at ICECDC_BENCH_KAFKA (host:port; bench/kfake or a real
//     one), else to an in-process kfake broker, whose CPU the process's
//     then includes (the path is named kafka-inproc).
//
// Reported: cpu-ratio (the path's CPU over changes', user + system, of
// the whole process), events/s and cpu-ns/event of the path,
// changes-cpu-ns/event, events/batch. Run, for example:
//
//	go test ./internal/daemontest -run '^$' -bench EngineToSink -count 5
func BenchmarkEngineToSink(b *testing.B) {
	meta, n := ratioTable(b)
	broker := os.Getenv("ICECDC_BENCH_KAFKA")
	kafkaName := "kafka"
	if broker == "" {
		kafkaName = "kafka-inproc"
	}
	for _, path := range []string{"discard", "file", kafkaName} {
		for _, format := range []string{"debezium-json", "debezium-connect-json"} {
			b.Run(path+"/"+format, func(b *testing.B) {
				var cpuChanges, cpuPath time.Duration
				var events, batches int64
				var wall time.Duration
				for b.Loop() {
					c0 := cpuTime(b)
					ratioChanges(b, meta, n)
					c1 := cpuTime(b)
					cpuChanges += c1 - c0

					b.StopTimer()
					var sink cdc.Sink
					var closeSink func()
					switch path {
					case "discard":
					case "file":
						fs, err := file.Open(filepath.Join(b.TempDir(), "events.jsonl"))
						if err != nil {
							b.Fatal(err)
						}
						sink, closeSink = fs, func() { fs.Close(context.Background()) }
					default:
						addrs := []string{broker}
						var cl *kfake.Cluster
						if broker == "" {
							var err error
							if cl, err = kfake.NewCluster(kfake.NumBrokers(1)); err != nil {
								b.Fatal(err)
							}
							addrs = cl.ListenAddrs()
						}
						ks, err := kafka.New(kafka.Config{Brokers: addrs, Pipeline: "bench", Topic: fmt.Sprintf("bench-%s-%d", format, time.Now().UnixNano()),
							Compression: os.Getenv("ICECDC_BENCH_KAFKA_COMPRESSION"), Logger: slog.New(slog.DiscardHandler)})
						if err != nil {
							b.Fatal(err)
						}
						sink, closeSink = ks, func() {
							ks.Close(context.Background())
							if cl != nil {
								cl.Close()
							}
						}
					}
					b.StartTimer()
					t0, c2 := time.Now(), cpuTime(b)
					batches += ratioRun(b, meta, n, sink, ratioEncoder(b, format))
					cpuPath += cpuTime(b) - c2
					wall += time.Since(t0)
					events += n
					b.StopTimer()
					if closeSink != nil {
						closeSink()
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(cpuPath)/float64(cpuChanges), "cpu-ratio")
				b.ReportMetric(float64(events)/wall.Seconds(), "events/s")
				b.ReportMetric(float64(cpuPath.Nanoseconds())/float64(events), "cpu-ns/event")
				b.ReportMetric(float64(cpuChanges.Nanoseconds())/float64(events), "changes-cpu-ns/event")
				b.ReportMetric(float64(events)/float64(batches), "events/batch")
			})
		}
	}
}
