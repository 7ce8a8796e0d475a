package debezium

import (
	"io"
	"strconv"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// benchSchema is the orders table of the benchmark: the four columns a
// typical business event carries.
var benchSchema = iceberg.NewSchemaWithIdentifiers(0, []int{1},
	iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "status", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
)

var benchStatuses = []string{"new", "paid", "shipped", "delivered", "cancelled"}

func benchRow(i int) values.Row {
	return values.Row{
		int64(1_000_000 + i),
		"customer-" + strconv.Itoa(i%977),
		benchStatuses[i%len(benchStatuses)],
		float64(i%10_000) + 0.99,
	}
}

// benchCommit is one snapshot of n inserts into the orders table.
func benchCommit(n int) *cdc.Commit {
	c := &cdc.Commit{
		Table: cdc.TableInfo{Catalog: "local", Namespace: "shop", Name: "orders",
			UUID: "9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55", Schema: benchSchema},
		Snapshot: cdc.SnapshotInfo{ID: 3_051_729_675_574_597_004, SequenceNumber: 42,
			TimestampMs: 1_717_331_700_000, Operation: "append", HasLineage: true},
		Events: make([]cdc.Event, n),
	}
	for i := range c.Events {
		c.Events[i] = cdc.Event{Op: cdc.OpCreate, RowID: int64(5_000 + i), LUSN: 42, After: benchRow(i), Index: i}
	}
	return c
}

// BenchmarkEncodeInsert measures AppendValue alone, the cost the encoding
// adds per event: inserts of a four-column row into a reused buffer written
// to a discarding writer, on one goroutine.
func BenchmarkEncodeInsert(b *testing.B) {
	c := benchCommit(4096)
	f := &JSON{Envelope: Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}}
	var w io.Writer = io.Discard
	buf := make([]byte, 0, 4096)
	var total int64
	b.ReportAllocs()
	cpu0, cpuOK := processCPUTime()
	i := 0
	for b.Loop() {
		var err error
		buf, err = f.AppendValue(buf[:0], c, &c.Events[i%len(c.Events)], 1_717_331_701_234)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
		total += int64(len(buf))
		i++
	}
	cpu1, _ := processCPUTime()
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "events/s")
	if cpuOK && cpu1 > cpu0 {
		b.ReportMetric(float64(i)/(cpu1-cpu0).Seconds(), "events/cpu-s")
	}
	b.ReportMetric(float64(total)/float64(i), "bytes/event")
}

// TestEncodeInsertAllocs keeps the steady-state encoding free of heap
// allocations: at a million events per second every allocation shows in
// GC time.
func TestEncodeInsertAllocs(t *testing.T) {
	for _, keys := range [][]string{nil, {"order_id"}} {
		c := benchCommit(64)
		c.Table.KeyFields = keys
		f := &JSON{Envelope: Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}}
		buf := make([]byte, 0, 4096)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			e := &c.Events[i%len(c.Events)]
			var err error
			if buf, err = f.AppendValue(buf[:0], c, e, 1); err != nil {
				t.Fatal(err)
			}
			if buf, err = f.AppendKey(buf[:0], c, e); err != nil {
				t.Fatal(err)
			}
			i++
		})
		if allocs != 0 {
			t.Errorf("keys %v: AppendValue+AppendKey allocate %.1f times per event, want 0", keys, allocs)
		}
	}
}
