package kafka

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newCluster starts an in-process kfake cluster of three brokers that
// lives as long as the test.
func newCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(3)}, opts...)...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// testConfig is a sink config for c. The shorter backoff and metadata
// age keep retries after injected faults quick (franz-go refreshes
// metadata at most every 5s by default, so each NOT_LEADER costs up to
// 5s); nothing else differs from production.
func testConfig(c *kfake.Cluster) Config {
	return Config{
		Brokers:  c.ListenAddrs(),
		Pipeline: "shop-cdc",
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		clientOpts: []kgo.Opt{
			kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }),
			kgo.MetadataMinAge(50 * time.Millisecond),
		},
	}
}

// newSink makes a sink for cfg and closes it when the test ends.
func newSink(t testing.TB, cfg Config) cdc.Sink {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// reader reads the event topics of a kfake cluster back, as the contract
// suite's Reader and for the tests here. It injects faults too.
type reader struct {
	c         *kfake.Cluster
	cfg       Config // has its defaults
	committed bool   // read as a read_committed consumer
	single    bool   // event topics have one partition: total order
}

func newReader(c *kfake.Cluster, cfg Config) *reader {
	cfg = cfg.withDefaults()
	return &reader{c: c, cfg: cfg, committed: cfg.Delivery == ExactlyOnce, single: cfg.TopicPartitions == 1}
}

// eventTopics lists the topics the sink wrote events to.
func (r *reader) eventTopics(ctx context.Context) ([]string, error) {
	base, err := r.cfg.commonOpts()
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(base...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	var topics []string
	for _, name := range details.Names() {
		if name != r.cfg.CheckpointTopic && name != r.cfg.TransactionTopic {
			topics = append(topics, name)
		}
	}
	return topics, nil
}

// records returns every record of the event topics, tombstones included.
func (r *reader) records(ctx context.Context, committed bool) ([]*kgo.Record, error) {
	topics, err := r.eventTopics(ctx)
	if err != nil || len(topics) == 0 {
		return nil, err
	}
	base, err := r.cfg.commonOpts()
	if err != nil {
		return nil, err
	}
	var out []*kgo.Record
	err = readToEnd(ctx, base, committed, topics, func(rec *kgo.Record) { out = append(out, rec) })
	return out, err
}

func (r *reader) ReadAll(ctx context.Context) ([]sinktest.Received, error) {
	recs, err := r.records(ctx, r.committed)
	if err != nil {
		return nil, err
	}
	var out []sinktest.Received
	for _, rec := range recs {
		if rec.Value == nil {
			continue // a tombstone is not an event
		}
		got := sinktest.Received{ID: header(rec, headerID), Key: rec.Key, Value: rec.Value}
		if op := header(rec, headerOp); len(op) == 1 {
			got.Op = cdc.Op(op[0])
		}
		out = append(out, got)
	}
	return out, nil
}

func (r *reader) TotalOrder() bool { return r.single }

// FailPermanently refuses every later produce request as a broker whose
// ACLs deny the topic would.
func (r *reader) FailPermanently() {
	r.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.TopicAuthorizationFailed, Count: -1})
}

// FailTransiently fails the next n produce requests as a broker that just
// lost leadership of the partitions would.
func (r *reader) FailTransiently(n int) {
	r.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotLeaderForPartition, Count: n})
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// sent collects the messages of batches.
func sent(bs ...*cdc.Batch) []cdc.Message {
	var out []cdc.Message
	for _, b := range bs {
		out = append(out, b.Messages...)
	}
	return out
}

// checkRead reads everything back and checks it against want: each
// message exactly once, in order per key (and in total order when the
// reader says so).
func checkRead(t *testing.T, ctx context.Context, r *reader, want []cdc.Message) {
	t.Helper()
	got, err := r.ReadAll(ctx)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if problems := sinktest.Compare(want, got, false, r.TotalOrder()); len(problems) > 0 {
		t.Fatalf("read back %d messages, sent %d:\n  %s", len(got), len(want), strings.Join(problems, "\n  "))
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
