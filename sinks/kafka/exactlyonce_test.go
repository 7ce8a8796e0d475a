package kafka

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func exactlyOnce(t *testing.T, c *kfake.Cluster, cfg Config) *ExactlyOnceSink {
	t.Helper()
	cfg.Delivery = ExactlyOnce
	return newSink(t, cfg).(*ExactlyOnceSink)
}

func restored(t *testing.T, ctx context.Context, s *ExactlyOnceSink, table cdc.TableInfo) cdc.Checkpoint {
	t.Helper()
	cp, ok, err := s.Restore(ctx, "shop-cdc", table)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !ok {
		return cdc.Checkpoint{}
	}
	return cp
}

// TestExactlyOnceAbortMidBatch fails one partition's records in the middle
// of a transaction: the Write aborts and reports a transient error, the
// records that did reach other partitions stay invisible to read_committed
// consumers, the checkpoint does not move, and the retried Write delivers
// the batch once.
func TestExactlyOnceAbortMidBatch(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.Delivery = ExactlyOnce
	cfg.TopicPartitions = 3
	s := exactlyOnce(t, c, cfg)
	r := newReader(c, cfg)
	st := sinktest.NewStream("shop", "orders")
	a, b := st.Snapshot(100, 0)[0], st.Snapshot(300, 0)[0]

	if err := s.Write(ctx, a); err != nil {
		t.Fatal(err)
	}
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "icecdc.shop.orders", Partitions: []int32{1}, Err: kerr.TransactionAbortable})
	err := s.Write(ctx, b)
	if err == nil || errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write with a failed partition: %v, want a transient error", err)
	}
	if h.Hits() != 1 {
		t.Fatalf("fault hit %d times", h.Hits())
	}
	if got := restored(t, ctx, s, st.Table); got != a.Checkpoint {
		t.Fatalf("after the abort Restore = %s, want %s", got, a.Checkpoint)
	}
	all, err := r.records(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) <= len(a.Messages) {
		t.Fatalf("read_uncommitted sees %d records: the failure was not mid-batch", len(all))
	}
	checkRead(t, ctx, r, a.Messages)

	if err := s.Write(ctx, b); err != nil {
		t.Fatalf("retried Write: %v", err)
	}
	if got := restored(t, ctx, s, st.Table); got != b.Checkpoint {
		t.Fatalf("Restore = %s, want %s", got, b.Checkpoint)
	}
	checkRead(t, ctx, r, sent(a, b))
}

// TestExactlyOnceCommitFails fails the commit itself. With an error the
// broker may have applied the commit or not, the sink aborts (which
// settles it) and asks the checkpoint topic; here the commit did not
// land, so Write fails and the retry delivers once. A retryable error on
// the commit is retried inside franz-go.
func TestExactlyOnceCommitFails(t *testing.T) {
	for _, tc := range []struct {
		err     *kerr.Error
		failure bool
		renew   bool // franz-go gives up on the producer id: a new client takes over
	}{
		{kerr.UnknownServerError, true, false},
		{kerr.InvalidTxnState, true, true},
		{kerr.CoordinatorNotAvailable, false, false},
		{kerr.ConcurrentTransactions, false, false},
	} {
		t.Run(tc.err.Message, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			c := newCluster(t)
			cfg := testConfig(c)
			cfg.Delivery = ExactlyOnce
			var logs bytes.Buffer
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			s := exactlyOnce(t, c, cfg)
			r := newReader(c, cfg)
			st := sinktest.NewStream("shop", "orders")
			a, b := st.Snapshot(50, 0)[0], st.Snapshot(50, 0)[0]
			if err := s.Write(ctx, a); err != nil {
				t.Fatal(err)
			}
			h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, TopLevel: true, Err: tc.err})
			err := s.Write(ctx, b)
			if h.Hits() != 1 {
				t.Fatalf("fault hit %d times", h.Hits())
			}
			if !tc.failure {
				if err != nil {
					t.Fatalf("Write: %v", err)
				}
				checkRead(t, ctx, r, sent(a, b))
				return
			}
			if err == nil || errors.Is(err, cdc.ErrPermanent) {
				t.Fatalf("Write with a failed commit: %v, want a transient error", err)
			}
			if got := restored(t, ctx, s, st.Table); got != a.Checkpoint {
				t.Fatalf("after the failed commit Restore = %s, want %s", got, a.Checkpoint)
			}
			if err := s.Write(ctx, b); err != nil {
				t.Fatalf("retried Write: %v", err)
			}
			checkRead(t, ctx, r, sent(a, b))
			if renewed := strings.Contains(logs.String(), "restarted the kafka transactional producer"); renewed != tc.renew {
				t.Fatalf("producer restarted: %v, want %v; logs:\n%s", renewed, tc.renew, &logs)
			}
		})
	}
}

// TestExactlyOnceSettlesLandedCommit covers the other outcome of an
// unknown commit: the commit landed. The next Write of the same batch
// (the pipeline's retry) must find its checkpoint and not send it again.
func TestExactlyOnceSettlesLandedCommit(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.Delivery = ExactlyOnce
	s := exactlyOnce(t, c, cfg)
	r := newReader(c, cfg)
	st := sinktest.NewStream("shop", "orders")
	a, b := st.Snapshot(50, 0)[0], st.Snapshot(50, 0)[0]
	if err := s.Write(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	before, err := r.records(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	s.unsettled = true // as if b's commit had returned an error
	// The pipeline restores after an error: the position is final.
	if got := restored(t, ctx, s, st.Table); got != b.Checkpoint {
		t.Fatalf("Restore = %s, want %s", got, b.Checkpoint)
	}
	if !s.unsettled {
		t.Fatal("Restore settled: the next Write would not check its batch")
	}
	// A pipeline that retries the same batch without restoring.
	if err := s.Write(ctx, b); err != nil {
		t.Fatalf("Write of a batch already committed: %v", err)
	}
	after, err := r.records(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("the batch was produced again: %d records, then %d", len(before), len(after))
	}
	if s.unsettled {
		t.Fatal("still unsettled")
	}
	c2 := st.Snapshot(50, 0)[0]
	if err := s.Write(ctx, c2); err != nil {
		t.Fatal(err)
	}
	checkRead(t, ctx, r, sent(a, b, c2))
}

// TestRestore checks checkpoints per table, across a restart, after
// compaction, and for an empty batch; and the checkpoint topic's shape.
func TestRestore(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.Delivery = ExactlyOnce
	s := exactlyOnce(t, c, cfg)
	orders, returns := sinktest.NewStream("shop", "orders"), sinktest.NewStream("shop", "returns")

	if cp, ok, err := s.Restore(ctx, "shop-cdc", orders.Table); err != nil || ok {
		t.Fatalf("Restore before any Write: %s, %v, %v", cp, ok, err)
	}
	var lastOrders, lastReturns cdc.Checkpoint
	for range 3 {
		for _, b := range orders.Snapshot(40, 15) {
			if err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			lastOrders = b.Checkpoint
		}
		for _, b := range returns.Snapshot(30, 0) {
			if err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
			lastReturns = b.Checkpoint
		}
	}
	empty := returns.Empty()
	if err := s.Write(ctx, empty); err != nil {
		t.Fatal(err)
	}
	lastReturns = empty.Checkpoint

	check := func(when string, s *ExactlyOnceSink) {
		t.Helper()
		if got := restored(t, ctx, s, orders.Table); got != lastOrders {
			t.Fatalf("%s: orders restored %s, want %s", when, got, lastOrders)
		}
		if got := restored(t, ctx, s, returns.Table); got != lastReturns {
			t.Fatalf("%s: returns restored %s, want %s", when, got, lastReturns)
		}
		if _, ok, err := s.Restore(ctx, "other-pipeline", orders.Table); err != nil || ok {
			t.Fatalf("%s: another pipeline's checkpoint: %v, %v", when, ok, err)
		}
	}
	check("after writes", s)
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := exactlyOnce(t, c, cfg)
	check("after a restart", restarted)
	c.Compact()
	check("after compaction", restarted)

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx, DefaultCheckpointTopic)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(topics[DefaultCheckpointTopic].Partitions); n != 1 {
		t.Fatalf("checkpoint topic has %d partitions", n)
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, DefaultCheckpointTopic)
	if err != nil {
		t.Fatal(err)
	}
	policy, err := cfgs.On(DefaultCheckpointTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range policy.Configs {
		if kv.Key == "cleanup.policy" && kv.MaybeValue() != "compact" {
			t.Fatalf("checkpoint topic cleanup.policy=%s", kv.MaybeValue())
		}
	}
}

// TestFencing runs a second sink with the same transactional id, as a
// second daemon on the same pipeline would: it fences the first, whose
// next Write must stop the table rather than fight over the topic.
func TestFencing(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.Delivery = ExactlyOnce
	first, second := exactlyOnce(t, c, cfg), exactlyOnce(t, c, cfg)
	st := sinktest.NewStream("shop", "orders")
	a, b, b2 := st.Snapshot(20, 0)[0], st.Snapshot(20, 0)[0], st.Snapshot(20, 0)[0]
	if err := first.Write(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := second.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	err := first.Write(ctx, b2)
	t.Logf("fenced Write: %v", err)
	if !errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write of a fenced producer: %v, want cdc.ErrPermanent", err)
	}
	checkRead(t, ctx, newReader(c, cfg), sent(a, b))
}

// TestCrashMidTransaction kills a sink in the middle of a transaction: its
// records are in the log but never committed. A new sink with the same
// transactional id restores the checkpoint before them, the broker aborts
// the orphan when the new producer starts, and the batch sent again is
// read once.
func TestCrashMidTransaction(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.Delivery = ExactlyOnce
	cfg.TopicPartitions = 3
	off := false
	cfg.Tombstones = &off // the count below is of events
	r := newReader(c, cfg)
	st := sinktest.NewStream("shop", "orders")
	a, b, b2 := st.Snapshot(50, 0)[0], st.Snapshot(50, 0)[0], st.Snapshot(50, 0)[0]

	crashed := exactlyOnce(t, c, cfg)
	if err := crashed.Write(ctx, a); err != nil {
		t.Fatal(err)
	}
	cl := crashed.p.client()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	ckpt, err := checkpointRecord(crashed.p.cfg, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := crashed.p.produceBatch(ctx, "icecdc.shop.orders", b, ckpt); err != nil {
		t.Fatal(err)
	}
	cl.Close() // no EndTransaction: the process died

	restarted := exactlyOnce(t, c, cfg)
	if got := restored(t, ctx, restarted, st.Table); got != a.Checkpoint {
		t.Fatalf("Restore after the crash = %s, want %s", got, a.Checkpoint)
	}
	for _, batch := range []*cdc.Batch{b, b2} {
		if err := restarted.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	all, err := r.records(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(sent(a, b, b, b2)) {
		t.Fatalf("read_uncommitted sees %d records, want the orphaned copy of b too", len(all))
	}
	checkRead(t, ctx, r, sent(a, b, b2))
}
