package debezium

import (
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/cdc"
)

// BenchmarkEncodeConnect measures debezium-connect-json and debezium-avro
// (against an in-memory registry, asked once per schema) against
// debezium-json in the same run: key and value of inserts into the orders
// table, into reused buffers. The schema part of each record is copied
// from the per-table cache, so the difference is mostly bytes.
// Rows come boxed (image=row) or as Arrow columns (image=arrow), as the
// source reads them from data files, and with the table's key field
// (key=order_id) rather than _row_id. debezium-avro-transcoded is how debezium-avro wrote records before it
// wrote them from the rows: the Connect JSON, read back into Avro.
func BenchmarkEncodeConnect(b *testing.B) {
	for _, img := range []struct {
		name string
		c    *cdc.Commit
	}{{"image=row", benchCommit(4096)}, {"image=arrow", benchArrowCommit(4096)}, {"image=arrow/key=order_id", keyed(benchArrowCommit(4096))}} {
		b.Run(img.name, func(b *testing.B) { benchEncodeConnect(b, img.c) })
	}
}

// keyed gives c's table its key field.
func keyed(c *cdc.Commit) *cdc.Commit {
	c.Table.KeyFields = []string{"order_id"}
	return c
}

func benchEncodeConnect(b *testing.B, c *cdc.Commit) {
	connect, err := NewConnectJSON(Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}, ConnectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	reg := srfake.New()
	defer reg.Close()
	avroFmt, _ := newAvroFormat(b, reg.URL(), ConnectOptions{}, AvroOptions{})
	for _, tc := range []struct {
		name string
		enc  interface {
			AppendKey([]byte, *cdc.Commit, *cdc.Event) ([]byte, error)
			AppendValue([]byte, *cdc.Commit, *cdc.Event, int64) ([]byte, error)
		}
	}{
		{"format=debezium-json", &JSON{Envelope: Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}}},
		{"format=debezium-connect-json", connect},
		{"format=debezium-avro", avroFmt},
		{"format=debezium-avro-transcoded", &transcodingAvro{f: avroFmt}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			key, val := make([]byte, 0, 4096), make([]byte, 0, 4096)
			var total int64
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e := &c.Events[i%len(c.Events)]
				var err error
				if key, err = tc.enc.AppendKey(key[:0], c, e); err != nil {
					b.Fatal(err)
				}
				if val, err = tc.enc.AppendValue(val[:0], c, e, 1_717_331_701_234); err != nil {
					b.Fatal(err)
				}
				total += int64(len(key) + len(val))
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/event")
			b.ReportMetric(float64(total)/float64(i), "bytes/event")
		})
	}
}

// transcodingAvro encodes as debezium-avro did before it wrote Avro from
// the rows, with reused buffers.
type transcodingAvro struct {
	f   *Avro
	msg []byte
}

func (t *transcodingAvro) AppendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	return appendTranscoded(dst, t.msg, t.f, c, e, "key", 0)
}

func (t *transcodingAvro) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	if t.msg == nil {
		t.msg = make([]byte, 0, 8192)
	}
	return appendTranscoded(dst, t.msg, t.f, c, e, "value", tsMs)
}
