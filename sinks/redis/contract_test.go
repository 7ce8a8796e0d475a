package redis

import (
	"context"
	"slices"
	"sync"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestContract runs the sink contract suite against the real
// redis-server. Faults are the server's own refusals: a stream key
// holding a string (WRONGTYPE, permanent) and maxmemory reached (OOM,
// transient), lifted after n failed Writes.
func TestContract(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
		c := server(t)
		cfg := Config{URL: serverURL, Pipeline: "sinktest"}
		cfg.Batch.MaxEntries = 64
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := &reader{c: c}
		return &faultSink{Sink: s, r: r}, r
	})
}

type reader struct {
	c *goredis.Client

	mu      sync.Mutex
	failFor int
}

// ReadAll returns every stream's entries, streams in key order.
func (r *reader) ReadAll(ctx context.Context) ([]sinktest.Received, error) {
	keys, err := r.c.Keys(ctx, "icecdc:*").Result()
	if err != nil {
		return nil, err
	}
	slices.Sort(keys)
	var out []sinktest.Received
	for _, k := range keys {
		entries, err := r.c.XRange(ctx, k, "-", "+").Result()
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, received(e))
		}
	}
	return out, nil
}

func received(e goredis.XMessage) sinktest.Received {
	str := func(f string) string { s, _ := e.Values[f].(string); return s }
	var op cdc.Op
	if o := str(FieldOp); len(o) == 1 {
		op = cdc.Op(o[0])
	}
	return sinktest.Received{ID: str(FieldID), Op: op, Key: []byte(str(FieldKey)), Value: []byte(str(FieldValue))}
}

// TotalOrder: a stream keeps the order of its entries (the suite's
// single-table checks read one stream).
func (r *reader) TotalOrder() bool { return true }

// FailPermanently turns the table's stream key into a string.
func (r *reader) FailPermanently() {
	ctx := context.Background()
	r.c.Del(ctx, "icecdc:shop.orders")
	if err := r.c.Set(ctx, "icecdc:shop.orders", "not a stream", 0).Err(); err != nil {
		panic(err)
	}
}

// FailTransiently sets maxmemory below what the server uses, so that
// XADD is refused (OOM), until n Writes failed.
func (r *reader) FailTransiently(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFor = n
	if err := r.c.ConfigSet(context.Background(), "maxmemory", "1").Err(); err != nil {
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
		if err := r.c.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
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
