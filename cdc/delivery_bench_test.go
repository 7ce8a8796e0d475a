package cdc_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/registry"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/shape"
	"github.com/icecdc/icecdc/state"
	"github.com/icecdc/icecdc/subscribe"
	"github.com/icecdc/icecdc/values"
)

// deliveryEvents is the size of the one commit each iteration of
// BenchmarkDelivery delivers.
const deliveryEvents = 100_000

// deliveryInfo is the orders table of the delivery benchmark: the four
// columns a typical business event carries, keyed by order_id.
var deliveryInfo = cdc.TableInfo{Catalog: "test", Namespace: "shop", Name: "orders", UUID: "9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55",
	Schema: iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64}),
	KeyFields: []string{"order_id"}}

var deliveryStatuses = []string{"new", "paid", "shipped", "delivered", "cancelled"}

// deliveryCommit is one commit of n events of the orders table: a third
// each of inserts, updates and deletes, mixed.
func deliveryCommit(n int) []cdc.Event {
	evs := make([]cdc.Event, n)
	for i := range evs {
		row := values.Row{int64(1_000_000 + i), "customer-" + strconv.Itoa(i%977), deliveryStatuses[i%len(deliveryStatuses)], float64(i%10_000) + 0.99}
		switch i % 3 {
		case 0:
			evs[i] = cdc.Event{Op: cdc.OpCreate, After: row}
		case 1:
			before := append(values.Row(nil), row...)
			before[2] = "new"
			evs[i] = cdc.Event{Op: cdc.OpUpdate, Before: before, After: row}
		default:
			evs[i] = cdc.Event{Op: cdc.OpDelete, Before: row}
		}
		evs[i].RowID, evs[i].LUSN = int64(i), 1
	}
	return evs
}

// discardSink counts what it is given and keeps nothing of it (a
// NonRetainingSink, as the file, stdout and Kafka sinks are, so the
// pipeline reuses its encoding buffers).
type discardSink struct {
	events, batches, bytes atomic.Int64
}

func (s *discardSink) Write(_ context.Context, b *cdc.Batch) error {
	n := 0
	for _, m := range b.Messages {
		n += len(m.Key) + len(m.Value)
	}
	s.bytes.Add(int64(n))
	s.batches.Add(1)
	s.events.Add(int64(len(b.Messages)))
	return nil
}
func (s *discardSink) Close(context.Context) error { return nil }
func (s *discardSink) RetainsNoBatch()             {}

// memStore keeps checkpoints in memory: the baseline that takes the
// state file's durable writes out of the measurement (stage=encode).
type memStore struct {
	mu  sync.Mutex
	cps map[string]cdc.Checkpoint
}

func (m *memStore) Load(_ context.Context, pipeline, table string) (cdc.Checkpoint, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cp, ok := m.cps[pipeline+"\x00"+table]
	return cp, ok, nil
}

func (m *memStore) Save(_ context.Context, pipeline, table string, cp cdc.Checkpoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cps == nil {
		m.cps = map[string]cdc.Checkpoint{}
	}
	m.cps[pipeline+"\x00"+table] = cp
	return nil
}

func (m *memStore) Close() error { return nil }

// countingStore counts the saves that reach the state file.
type countingStore struct {
	cdc.Store
	saves atomic.Int64
}

func (s *countingStore) Save(ctx context.Context, pipeline, table string, cp cdc.Checkpoint) error {
	s.saves.Add(1)
	return s.Store.Save(ctx, pipeline, table, cp)
}

// BenchmarkDelivery measures the pipeline's per-event path without the
// engine: one commit of 100,000 events (inserts, updates and deletes of
// a four-column table) read from a scripted source and delivered, with
// `run --once`'s pipeline, into a sink that keeps nothing. Each
// sub-benchmark adds one stage to the one before, so the differences are
// what each stage costs per event:
//
//   - stage=encode: encoding into the batch buffers and the hand-off to
//     the sender, checkpoints kept in memory;
//   - stage=ack: the same with the checkpoints in the state file (bbolt,
//     fsynced), one save per batch (saves/batch);
//   - stage=shape: plus shaping (a masked and an excluded column);
//   - stage=subscribe: plus a column subscription;
//   - format=…: stage=ack for each format (debezium-avro against an
//     in-process registry, asked once per schema); debezium-connect-json
//     carries its schema in every record (about 3.5 KB an event), so
//     chunk_bytes (4 MiB) cuts its batches at about 1,200 events: once more
//     with the former default of 1 MiB (about 300).
//
// The row filter of a signal's additional-conditions is measured on its
// own (BenchmarkRowFilter). Run, for example:
//
//	go test ./cdc -run '^$' -bench Delivery -count 3
func BenchmarkDelivery(b *testing.B) {
	json := func(testing.TB) cdc.Encoder {
		return &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "bench", Version: "bench"}}
	}
	shaping, err := shape.Parse(map[string]string{
		"column.mask.with.4.chars": `shop\.orders\.customer`,
		"column.exclude.list":      `shop\.orders\.amount`,
	})
	if err != nil {
		b.Fatal(err)
	}
	connect := func(t testing.TB) cdc.Encoder {
		enc, err := debezium.NewConnectJSON(debezium.Envelope{Pipeline: "bench", Version: "bench"}, debezium.ConnectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	type stage struct {
		name    string
		enc     func(testing.TB) cdc.Encoder
		durable bool
		shaping cdc.Policy
		columns subscribe.Columns
		chunk   int // ChunkBytes; 0: the default
	}
	stages := []stage{
		{name: "stage=encode", enc: json},
		{name: "stage=ack", enc: json, durable: true},
		{name: "stage=shape", enc: json, durable: true, shaping: shaping},
		{name: "stage=subscribe", enc: json, durable: true, shaping: shaping, columns: []string{"status"}},
		{name: "format=debezium-connect-json", durable: true, enc: connect},
		{name: "format=debezium-connect-json/chunk_bytes=1MiB", durable: true, enc: connect, chunk: 1 << 20},
		{name: "format=debezium-avro", durable: true, enc: func(t testing.TB) cdc.Encoder {
			reg := srfake.New()
			t.Cleanup(reg.Close)
			cl, err := registry.New(registry.Config{URL: reg.URL()})
			if err != nil {
				t.Fatal(err)
			}
			enc, err := debezium.NewAvro(debezium.Envelope{Pipeline: "bench", Version: "bench"}, debezium.ConnectOptions{}, debezium.AvroOptions{
				Registry: cl,
				Subject: func(topic, record string, isKey bool) string {
					return registry.Subject(registry.StrategyTopic, topic, record, isKey)
				},
				Topic: func(t *cdc.TableInfo) (string, error) { return "icecdc." + t.Namespace + "." + t.Name, nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			return enc
		}},
	}
	for _, st := range stages {
		b.Run(st.name, func(b *testing.B) {
			enc := st.enc(b)
			var events, batches, bytes, saves, mallocs, allocBytes int64
			var cpu time.Duration
			cpuOK := true
			for b.Loop() {
				b.StopTimer()
				src := cdctest.New(deliveryInfo)
				src.Append(deliveryCommit(deliveryEvents)...)
				sink := &discardSink{}
				var store cdc.Store = &memStore{}
				var counted *countingStore
				if st.durable {
					s, err := state.Open(filepath.Join(b.TempDir(), "state.db"), state.Options{})
					if err != nil {
						b.Fatal(err)
					}
					counted = &countingStore{Store: s}
					store = counted
				}
				var policies []cdc.Policy
				if st.shaping != nil {
					policies = append(policies, st.shaping)
				}
				if st.columns != nil {
					policies = append(policies, st.columns)
				}
				p := &cdc.Pipeline{Name: "bench", Encoder: enc, Sink: sink, Store: store, Once: true, ChunkBytes: st.chunk,
					Tables:       []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}, Policies: policies}},
					Poll:         time.Millisecond,
					RetryInitial: time.Millisecond, RetryMax: time.Millisecond}
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				cpu0, ok0 := processCPUTime()
				b.StartTimer()
				if err := p.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu1, ok1 := processCPUTime()
				cpu += cpu1 - cpu0
				cpuOK = cpuOK && ok0 && ok1
				runtime.ReadMemStats(&m1)
				mallocs += int64(m1.Mallocs - m0.Mallocs)
				allocBytes += int64(m1.TotalAlloc - m0.TotalAlloc)
				if st.columns == nil && sink.events.Load() != deliveryEvents {
					b.Fatalf("delivered %d events, want %d", sink.events.Load(), deliveryEvents)
				}
				cp, ok, err := store.Load(context.Background(), "bench", "shop.orders")
				if err != nil || !ok || !cp.Done {
					b.Fatalf("checkpoint %s (%v, %v), want the commit done", cp, ok, err)
				}
				events += deliveryEvents
				batches += sink.batches.Load()
				bytes += sink.bytes.Load()
				if counted != nil {
					saves += counted.saves.Load()
					counted.Close()
				}
				b.StartTimer()
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(events)/s, "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			if cpuOK {
				// The process's CPU time (user + system, every goroutine):
				// steadier than wall time on a shared machine.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
			}
			b.ReportMetric(float64(mallocs)/float64(events), "allocs/event")
			b.ReportMetric(float64(allocBytes)/float64(events), "B/event")
			b.ReportMetric(float64(bytes)/float64(events), "bytes/event")
			b.ReportMetric(float64(events)/float64(batches), "events/batch")
			if st.durable {
				b.ReportMetric(float64(saves)/float64(batches), "saves/batch")
			}
		})
	}
}

// BenchmarkRowFilter measures a signal's additional-conditions filter
// per row: the work the pipeline adds per event of a filtered read.
func BenchmarkRowFilter(b *testing.B) {
	f, err := rowfilter.Parse(`status = 'paid' OR (amount > 5000 AND customer <> 'customer-7')`)
	if err != nil {
		b.Fatal(err)
	}
	bf, err := f.Bind(deliveryInfo.Schema)
	if err != nil {
		b.Fatal(err)
	}
	evs := deliveryCommit(4096)
	kept := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := &evs[i%len(evs)]
		r := e.After
		if r == nil {
			r = e.Before
		}
		if bf.Keep(r) {
			kept++
		}
		i++
	}
	if kept == 0 || kept == i {
		b.Fatalf("the filter kept %d of %d rows", kept, i)
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "events/s")
}
