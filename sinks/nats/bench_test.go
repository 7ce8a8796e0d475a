package nats

import (
	"context"
	"testing"

	"github.com/icecdc/icecdc/sinks/sinktest"
)

// BenchmarkWrite publishes batches of 1,000 debezium-json events to an
// in-process JetStream server (file storage) and awaits every ack.
func BenchmarkWrite(b *testing.B) {
	srv := startServerB(b)
	s, err := New(Config{URLs: []string{srv}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	st := sinktest.NewStream("shop", "orders")
	batches := st.Snapshot(1000*10, 1000)
	ctx := context.Background()
	events, bytes := 0, 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		batch := batches[i%len(batches)]
		if i > 0 && i%len(batches) == 0 {
			b.StopTimer()
			batches = st.Snapshot(1000*10, 1000) // new ids: not duplicates
			batch = batches[0]
			b.StartTimer()
		}
		if err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
		events += len(batch.Messages)
		for _, m := range batch.Messages {
			bytes += len(m.Value)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(bytes)/b.Elapsed().Seconds()/1e6, "MB/s")
}
