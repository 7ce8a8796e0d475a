package daemontest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/registry"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/sinks/webhook"
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
//     then includes (the path is named kafka-inproc); debezium-avro
//     registers its schemas in an in-process schema registry (srfake);
//   - webhook/debezium-json: the webhook sink, batched (its default
//     500 events or 1 MiB a request), to a receiver on loopback in the
//     same process that reads each body and answers 204; the receiver's
//     CPU counts too.
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
	jsons := []string{"debezium-json", "debezium-connect-json"}
	paths := []struct {
		name    string
		formats []string
	}{
		{"discard", jsons}, {"file", jsons},
		{kafkaName, append(jsons, "debezium-avro")},
		{"webhook", []string{"debezium-json"}},
	}
	for _, path := range paths {
		for _, format := range path.formats {
			b.Run(path.name+"/"+format, func(b *testing.B) {
				var r ratioTotals
				for b.Loop() {
					c0 := cpuTime(b)
					ratioChanges(b, meta, n)
					r.changes += cpuTime(b) - c0

					b.StopTimer()
					sink, enc, closeSink := ratioSink(b, path.name, format, broker)
					b.StartTimer()
					t0, c2 := time.Now(), cpuTime(b)
					r.batches += ratioRun(b, meta, n, sink, enc)
					r.path += cpuTime(b) - c2
					r.wall += time.Since(t0)
					r.events += n
					b.StopTimer()
					closeSink()
					b.StartTimer()
				}
				r.report(b)
			})
		}
	}
}

// ratioTotals adds up BenchmarkEngineToSink's iterations.
type ratioTotals struct {
	changes, path, wall time.Duration
	events, batches     int64
}

func (r *ratioTotals) report(b *testing.B) {
	b.ReportMetric(float64(r.path)/float64(r.changes), "cpu-ratio")
	b.ReportMetric(float64(r.events)/r.wall.Seconds(), "events/s")
	b.ReportMetric(float64(r.path.Nanoseconds())/float64(r.events), "cpu-ns/event")
	b.ReportMetric(float64(r.changes.Nanoseconds())/float64(r.events), "changes-cpu-ns/event")
	b.ReportMetric(float64(r.events)/float64(r.batches), "events/batch")
}

// ratioSink opens the sink of a BenchmarkEngineToSink path (nil for
// discard) and the encoder of format for it, and returns what closes them.
func ratioSink(b *testing.B, path, format, broker string) (cdc.Sink, cdc.Encoder, func()) {
	switch path {
	case "discard":
		return nil, ratioEncoder(b, format), func() {}
	case "file":
		fs, err := file.Open(filepath.Join(b.TempDir(), "events.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		return fs, ratioEncoder(b, format), func() { fs.Close(context.Background()) }
	case "webhook":
		return ratioWebhook(b, format)
	}
	return ratioKafka(b, format, broker)
}

// ratioKafka opens the Kafka sink to broker (an in-process kfake when
// empty), on a topic of its own, and format's encoder for that topic.
func ratioKafka(b *testing.B, format, broker string) (cdc.Sink, cdc.Encoder, func()) {
	var closers []func()
	addrs := []string{broker}
	if broker == "" {
		cl, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			b.Fatal(err)
		}
		closers = append(closers, cl.Close)
		addrs = cl.ListenAddrs()
	}
	cfg := kafka.Config{Brokers: addrs, Pipeline: "bench", Topic: fmt.Sprintf("bench-%s-%d", format, time.Now().UnixNano()),
		Compression: os.Getenv("ICECDC_BENCH_KAFKA_COMPRESSION"), Logger: slog.New(slog.DiscardHandler)}
	var enc cdc.Encoder
	if format == "debezium-avro" {
		reg := srfake.New()
		closers = append(closers, reg.Close)
		rc, err := registry.New(registry.Config{URL: reg.URL()})
		if err != nil {
			b.Fatal(err)
		}
		enc, err = debezium.NewAvro(debezium.Envelope{Pipeline: "bench", Version: "bench"}, debezium.ConnectOptions{}, debezium.AvroOptions{
			Registry: rc,
			Subject: func(topic, record string, isKey bool) string {
				return registry.Subject(registry.StrategyTopic, topic, record, isKey)
			},
			Topic: func(t *cdc.TableInfo) (string, error) { return kafka.TopicName(cfg, *t) },
		})
		if err != nil {
			b.Fatal(err)
		}
	} else {
		enc = ratioEncoder(b, format)
	}
	ks, err := kafka.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return ks, enc, func() {
		ks.Close(context.Background())
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
}

// ratioWebhook opens the webhook sink, with its default batching, to a
// receiver on loopback that reads every body and answers 204.
func ratioWebhook(b *testing.B, format string) (cdc.Sink, cdc.Encoder, func()) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	ws, err := webhook.New(webhook.Config{URL: srv.URL, Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	if err != nil {
		srv.Close()
		b.Fatal(err)
	}
	return ws, ratioEncoder(b, format), func() {
		ws.Close(context.Background())
		srv.Close()
	}
}
