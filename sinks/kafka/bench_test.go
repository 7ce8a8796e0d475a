package kafka

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// BenchmarkWriteKfake measures events per second through Write into an
// in-process kfake cluster of three brokers, with batches of 500 events
// whose values are about 300 bytes, to topics of 10 partitions. kfake
// stores and acks in memory, so this is the cost of the sink and
// franz-go (batching, compression, request round trips over loopback),
// not of a broker's disk or replication.
func BenchmarkWriteKfake(b *testing.B) {
	const batchSize, valueBytes = 500, 300
	for _, delivery := range []string{AtLeastOnce, ExactlyOnce} {
		b.Run(delivery, func(b *testing.B) {
			c := newCluster(b)
			cfg := testConfig(c)
			cfg.Delivery = delivery
			cfg.TopicPartitions = 10
			s := newSink(b, cfg)
			batches := benchBatches(20, batchSize, valueBytes)
			ctx := context.Background()
			if err := s.Write(ctx, batches[0]); err != nil { // creates the topic
				b.Fatal(err)
			}
			b.SetBytes(batchSize * valueBytes)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := s.Write(ctx, batches[i%len(batches)]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// benchBatches makes n batches of size events each, with values of
// valueBytes: ids and keys from a sinktest.Stream, values replaced by a
// JSON document of the wanted size (a full Debezium envelope is larger).
// The filler is random words, so that snappy compresses it about as much
// as real row values rather than to nothing.
func benchBatches(n, size, valueBytes int) []*cdc.Batch {
	st := sinktest.NewStream("shop", "orders")
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu 0 1 2 3 4 5 6 7 8 9")
	filler := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteString(strconv.Itoa(rng.IntN(1000)))
			sb.WriteByte(' ')
		}
		return sb.String()[:n]
	}
	var out []*cdc.Batch
	for len(out) < n {
		for _, b := range st.Snapshot(size*3, size) {
			for i := range b.Messages {
				m := &b.Messages[i]
				head := fmt.Sprintf(`{"id":%q,"op":"%c","note":"`, m.ID, m.Op)
				m.Value = []byte(head + filler(max(valueBytes-len(head)-2, 0)) + `"}`)
			}
			if len(b.Messages) == size && len(out) < n {
				out = append(out, b)
			}
		}
	}
	return out
}
