package nats

import (
	"context"
	"encoding/base64"
	"errors"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestContract runs the sink contract suite against a real JetStream
// server, one per sub-test. Faults are the server's own refusals: a
// stream whose max_msg_size no event fits (permanent) and a full stream
// that discards new messages (transient), lifted after n failed Writes.
func TestContract(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
		srv := startServer(t, nil)
		s, err := New(Config{URLs: []string{srv.ClientURL()}, Pipeline: "sinktest", Batch: BatchConfig{MaxPending: 64}})
		if err != nil {
			t.Fatal(err)
		}
		r := &reader{js: client(t, srv.ClientURL()), stream: DefaultStream}
		return &faultSink{Sink: s, r: r}, r
	})
}

type reader struct {
	js     jetstream.JetStream
	stream string

	mu      sync.Mutex
	failFor int // failed Writes until the stream takes messages again
	limit   int64
}

// ReadAll returns the stream's messages as events.
func (r *reader) ReadAll(ctx context.Context) ([]sinktest.Received, error) {
	msgs, err := streamMessages(ctx, r.js, r.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil // nothing written yet
	}
	if err != nil {
		return nil, err
	}
	out := make([]sinktest.Received, len(msgs))
	for i, m := range msgs {
		key := []byte(m.Header.Get(HeaderKey))
		if m.Header.Get(HeaderKeyEncoding) == "base64" {
			if key, err = base64.StdEncoding.DecodeString(string(key)); err != nil {
				return nil, err
			}
		}
		var op cdc.Op
		if o := m.Header.Get(HeaderOp); len(o) == 1 {
			op = cdc.Op(o[0])
		}
		out[i] = sinktest.Received{ID: m.Header.Get(HeaderID), Op: op, Key: key, Value: m.Data}
		if m.Header.Get(HeaderMsgID) != out[i].ID {
			return nil, errorf("message %d: Nats-Msg-Id %q is not its id %q", m.Sequence, m.Header.Get(HeaderMsgID), out[i].ID)
		}
	}
	return out, nil
}

// TotalOrder: one stream keeps the order of every publish.
func (r *reader) TotalOrder() bool { return true }

func (r *reader) update(edit func(*jetstream.StreamConfig)) {
	ctx := context.Background()
	st, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		panic(err)
	}
	cfg := st.CachedInfo().Config
	edit(&cfg)
	if _, err := r.js.UpdateStream(ctx, cfg); err != nil {
		panic(err)
	}
}

// FailPermanently makes the stream refuse every message as too large.
func (r *reader) FailPermanently() {
	r.update(func(c *jetstream.StreamConfig) { c.MaxMsgSize = 1 })
}

// FailTransiently fills the stream: it discards new messages until n
// Writes failed, then takes them again.
func (r *reader) FailTransiently(n int) {
	ctx := context.Background()
	st, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		panic(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	r.failFor, r.limit = n, info.Config.MaxMsgs
	r.mu.Unlock()
	r.update(func(c *jetstream.StreamConfig) {
		c.MaxMsgs, c.Discard = int64(info.State.Msgs), jetstream.DiscardNew
	})
}

// failed counts a failed Write, lifting the limit after the last.
func (r *reader) failed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failFor == 0 {
		return
	}
	if r.failFor--; r.failFor == 0 {
		r.update(func(c *jetstream.StreamConfig) { c.MaxMsgs, c.Discard = r.limit, jetstream.DiscardOld })
	}
}

// faultSink counts the sink's failed Writes for the reader's transient
// fault.
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
