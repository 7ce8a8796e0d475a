package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Heartbeats produces Debezium's heartbeat records to their own topic
// (__debezium-heartbeat.<topic.prefix>) with a client of its own: never
// inside the event transactions of exactly-once delivery, and never
// between a table's event records, so a heartbeat cannot reorder or
// interleave a table's events.
type Heartbeats struct {
	p     *producer
	topic string
}

// NewHeartbeats returns a producer of heartbeat records to topic, made
// from the sink's connection settings (brokers, TLS, SASL, client id).
// Like New, it does not contact the brokers.
func NewHeartbeats(cfg Config, topic string) (*Heartbeats, error) {
	cfg = cfg.withDefaults()
	if err := validTopicName(topic); err != nil {
		return nil, fmt.Errorf("heartbeat topic %q: %w", topic, err)
	}
	cfg.Delivery = AtLeastOnce
	p, err := newProducer(cfg)
	if err != nil {
		return nil, err
	}
	return &Heartbeats{p: p, topic: topic}, nil
}

// Topic returns the heartbeat topic.
func (h *Heartbeats) Topic() string { return h.topic }

// Send produces one heartbeat record and waits for its ack. The topic is
// created, with one partition, on the first send.
func (h *Heartbeats) Send(ctx context.Context, key, value []byte) error {
	if h.p.closed.Load() {
		return errClosed
	}
	if err := h.p.ensureTopic(ctx, h.topic, 1, nil); err != nil {
		return err
	}
	return h.p.produce(ctx, []*kgo.Record{{Topic: h.topic, Key: key, Value: value}})
}

// Close flushes and closes the client.
func (h *Heartbeats) Close(ctx context.Context) error { return h.p.close(ctx) }
