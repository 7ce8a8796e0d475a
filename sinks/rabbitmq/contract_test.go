package rabbitmq

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

var queues atomic.Int64

// TestContract runs the sink contract suite against the real broker,
// each sub-test on its own exchange with one queue bound to every
// routing key. Faults are the broker's own refusals: the exchange
// deleted (404, permanent) and a second bound queue of length 0 that
// rejects publishes (nack, transient), deleted after n failed Writes.
func TestContract(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
		ch := broker(t)
		n := queues.Add(1)
		r := &reader{ch: ch, exchange: fmt.Sprintf("sinktest-%d", n), queue: fmt.Sprintf("sinktest-q-%d", n)}
		r.bind(t)
		s, err := New(Config{URL: brokerURL, Exchange: r.exchange, Pipeline: "sinktest"})
		if err != nil {
			t.Fatal(err)
		}
		return &faultSink{Sink: s, r: r}, r
	})
}

type reader struct {
	ch              *amqp.Channel
	exchange, queue string

	mu      sync.Mutex
	got     []sinktest.Received
	failFor int
}

func (r *reader) bind(t *testing.T) {
	t.Helper()
	if err := r.ch.ExchangeDeclare(r.exchange, "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ch.QueueDeclare(r.queue, true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.ch.QueueBind(r.queue, "#", r.exchange, false, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = r.ch.QueueDelete(r.queue, false, false, false) })
}

// ReadAll takes what the queue holds now and returns everything taken.
func (r *reader) ReadAll(context.Context) ([]sinktest.Received, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		d, ok, err := r.ch.Get(r.queue, true)
		if err != nil {
			return nil, err
		}
		if !ok {
			return append([]sinktest.Received(nil), r.got...), nil
		}
		rc, err := received(d)
		if err != nil {
			return nil, err
		}
		r.got = append(r.got, rc)
	}
}

func received(d amqp.Delivery) (sinktest.Received, error) {
	id, _ := d.Headers[HeaderID].(string)
	if id != d.MessageId || d.DeliveryMode != amqp.Persistent {
		return sinktest.Received{}, fmt.Errorf("message %q: header id %q, delivery mode %d", d.MessageId, id, d.DeliveryMode)
	}
	var op cdc.Op
	if o, _ := d.Headers[HeaderOp].(string); len(o) == 1 {
		op = cdc.Op(o[0])
	}
	key, _ := d.Headers[HeaderKey].(string)
	return sinktest.Received{ID: id, Op: op, Key: []byte(key), Value: d.Body}, nil
}

// TotalOrder: one queue keeps the order of the publishes.
func (r *reader) TotalOrder() bool { return true }

// FailPermanently deletes the exchange.
func (r *reader) FailPermanently() {
	if err := r.ch.ExchangeDelete(r.exchange, false, false); err != nil {
		panic(err)
	}
}

// FailTransiently binds a queue that rejects every publish, until n
// Writes failed.
func (r *reader) FailTransiently(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFor = n
	args := amqp.Table{"x-max-length": int32(0), "x-overflow": "reject-publish"}
	if _, err := r.ch.QueueDeclare(r.queue+"-gate", false, false, false, false, args); err != nil {
		panic(err)
	}
	if err := r.ch.QueueBind(r.queue+"-gate", "#", r.exchange, false, nil); err != nil {
		panic(err)
	}
}

func (r *reader) failed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failFor == 0 {
		return
	}
	if r.failFor--; r.failFor == 0 {
		if _, err := r.ch.QueueDelete(r.queue+"-gate", false, false, false); err != nil {
			panic(err)
		}
	}
}

// faultSink counts the sink's failed Writes for the transient fault.
type faultSink struct {
	*Sink
	r *reader
}

func (f *faultSink) Write(ctx context.Context, b *cdc.Batch) error {
	err := f.Sink.Write(ctx, b)
	if err != nil {
		f.r.failed()
	}
	return err
}
