package rabbitmq

import (
	amqp "github.com/rabbitmq/amqp091-go"

	"context"
	"testing"

	"github.com/icecdc/icecdc/sinks/sinktest"
)

// BenchmarkWrite publishes batches of 1,000 debezium-json events to the
// rabbitmq-server TestMain started, routed to one durable queue, and
// awaits every confirm.
func BenchmarkWrite(b *testing.B) {
	if skip != "" {
		b.Skip(skip)
	}
	bindBench(b)
	s, err := New(Config{URL: brokerURL, Exchange: "bench"})
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

// bindBench binds a durable queue to exchange bench, emptied after.
func bindBench(b *testing.B) {
	conn, err := amqp.Dial(brokerURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		b.Fatal(err)
	}
	if err := ch.ExchangeDeclare("bench", "topic", true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	if _, err := ch.QueueDeclare("bench-q", true, false, false, false, nil); err != nil {
		b.Fatal(err)
	}
	if err := ch.QueueBind("bench-q", "#", "bench", false, nil); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = ch.QueueDelete("bench-q", false, false, false) })
}
