package stdout

import (
	"fmt"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// BenchmarkAppendLines: the lines of a 2048-event batch of 600-byte
// debezium-json values with their event ids (sub-benchmark ids), against
// the copy of the values alone that a sink writing no id would make
// (copy): the cost of carrying the id in a file or stdout line.
func BenchmarkAppendLines(b *testing.B) {
	msgs := make([]cdc.Message, 2048)
	pad := strings.Repeat("x", 450)
	for i := range msgs {
		msgs[i] = cdc.Message{ID: cdc.EventID("7a537fa1-7834-46c9-896a-e5e81da433e9", 12, int64(i), cdc.OpUpdate),
			Value: fmt.Appendf(nil, `{"before":null,"after":{"order_id":%d,"note":"%s"},"op":"u","ts_ms":1796536545969,"source":{"table":"orders"}}`, i, pad)}
	}
	var buf []byte
	b.Run("ids", func(b *testing.B) {
		for b.Loop() {
			var err error
			if buf, err = AppendLines(buf[:0], msgs, cdc.Encoding{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/event")
	})
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			buf = buf[:0]
			for i := range msgs {
				buf = append(append(buf, msgs[i].Value...), '\n')
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(msgs)), "ns/event")
	})
}
