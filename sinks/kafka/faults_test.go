package kafka

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRetryableFaults injects the failures a healthy cluster produces
// while brokers restart or move leadership, and checks that Write rides
// them out inside franz-go: every Write succeeds, and each event is in the
// topic exactly once, in order. Exactly once even at least once: a
// REQUEST_TIMED_OUT that the broker answers after appending makes the
// producer send the batch again, and only idempotence keeps the copy out.
func TestRetryableFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inject func(t *testing.T, c *kfake.Cluster) (stop func())
	}{
		{"NotLeaderForPartition", func(t *testing.T, c *kfake.Cluster) func() {
			return faultProduce(t, c, kerr.NotLeaderForPartition, 6)
		}},
		{"RequestTimedOutAfterAppend", func(t *testing.T, c *kfake.Cluster) func() {
			return faultProduce(t, c, kerr.RequestTimedOut, 6)
		}},
		{"NotEnoughReplicasAfterAppend", func(t *testing.T, c *kfake.Cluster) func() {
			return faultProduce(t, c, kerr.NotEnoughReplicasAfterAppend, 6)
		}},
		{"NotEnoughReplicas", func(t *testing.T, c *kfake.Cluster) func() {
			return faultProduce(t, c, kerr.NotEnoughReplicas, 6)
		}},
		{"LeaderChanges", moveLeaders},
		{"DelayedResponses", delayProduce},
		{"DroppedConnections", dropProduceConnections},
	} {
		for _, delivery := range []string{AtLeastOnce, ExactlyOnce} {
			t.Run(tc.name+"/"+delivery, func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				c := newCluster(t)
				cfg := testConfig(c)
				cfg.Delivery = delivery
				cfg.TopicPartitions = 3
				s := newSink(t, cfg)
				r := newReader(c, cfg)

				st := sinktest.NewStream("shop", "orders")
				var batches []*cdc.Batch
				for range 5 {
					batches = append(batches, st.Snapshot(200, 100)...)
				}
				if err := s.Write(ctx, batches[0]); err != nil { // creates the topic
					t.Fatalf("Write: %v", err)
				}
				stop := tc.inject(t, c)
				for _, b := range batches[1:] {
					if err := s.Write(ctx, b); err != nil {
						t.Fatalf("Write %s under %s: %v", b.Checkpoint, tc.name, err)
					}
				}
				stop()
				checkRead(t, ctx, r, sent(batches...))
			})
		}
	}
}

// faultProduce fails the next n produce requests with err, and checks at
// the end that they were hit.
func faultProduce(t *testing.T, c *kfake.Cluster, err *kerr.Error, n int) func() {
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "icecdc.shop.orders", Err: err, Count: n})
	return func() {
		if hits := h.Hits(); hits != n {
			t.Errorf("%s injected %d times, want %d", err.Message, hits, n)
		}
	}
}

// moveLeaders moves partition leadership between brokers while Writes
// run, so that produce requests reach brokers that no longer lead their
// partitions and are answered NOT_LEADER_FOR_PARTITION.
func moveLeaders(t *testing.T, c *kfake.Cluster) func() {
	var seen, moves atomic.Int32
	var wg sync.WaitGroup
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if seen.Add(1)%3 == 0 && moves.Load() < 6 {
			moves.Add(1)
			// Control functions run on the cluster's loop, which the
			// move needs too: it happens right after this request.
			wg.Go(c.ShufflePartitionLeaders)
		}
		return nil, nil, false
	})
	return func() {
		wg.Wait()
		if moves.Load() < 3 {
			t.Errorf("leaders moved only %d times", moves.Load())
		}
	}
}

// delayProduce holds every other produce request for a while before the
// broker handles it, so that later requests queue up behind it on the
// same connection, as behind a slow disk.
func delayProduce(t *testing.T, c *kfake.Cluster) func() {
	var seen, delayed atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if seen.Add(1)%2 == 0 {
			delayed.Add(1)
			c.SleepControl(func() { time.Sleep(30 * time.Millisecond) })
		}
		return nil, nil, false
	})
	return func() {
		if delayed.Load() == 0 {
			t.Error("no produce request was delayed")
		}
	}
}

// dropProduceConnections closes the connection of a few produce requests
// before the broker handles them, as a broker restart would.
func dropProduceConnections(t *testing.T, c *kfake.Cluster) func() {
	var seen, dropped atomic.Int32
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if seen.Add(1)%3 == 0 && dropped.Load() < 4 {
			dropped.Add(1)
			return nil, errors.New("injected connection drop"), true
		}
		return nil, nil, false
	})
	return func() {
		if dropped.Load() == 0 {
			t.Error("no connection was dropped")
		}
	}
}

// TestPermanentErrors checks that what no retry fixes wraps
// cdc.ErrPermanent, and says what happened.
func TestPermanentErrors(t *testing.T) {
	st := sinktest.NewStream("shop", "orders")
	seed := st.Snapshot(20, 0)[0]
	next := st.Snapshot(20, 0)[0]

	for _, tc := range []struct {
		name   string
		setup  func(c *kfake.Cluster, cfg *Config)
		batch  func() *cdc.Batch
		reason string
	}{
		{
			name: "TopicAuthorization",
			setup: func(c *kfake.Cluster, _ *Config) {
				c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.TopicAuthorizationFailed, Count: -1})
			},
			batch:  func() *cdc.Batch { return next },
			reason: "TOPIC_AUTHORIZATION_FAILED",
		},
		{
			name: "MessageTooLargeForBroker",
			setup: func(c *kfake.Cluster, _ *Config) {
				c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.MessageTooLarge, Count: 1})
			},
			batch:  func() *cdc.Batch { return next },
			reason: "MESSAGE_TOO_LARGE",
		},
		{
			name:  "MessageTooLargeForClient",
			setup: func(*kfake.Cluster, *Config) {},
			batch: func() *cdc.Batch {
				b := *next
				b.Messages = append([]cdc.Message(nil), next.Messages...)
				b.Messages[3].Value = []byte(`{"after":{"note":"` + strings.Repeat("x", 2<<20) + `"}}`)
				return &b
			},
			reason: "MESSAGE_TOO_LARGE",
		},
		{
			name: "BadTopicName",
			setup: func(_ *kfake.Cluster, cfg *Config) {
				cfg.Topic = "icecdc.{namespace}.{table} v2"
			},
			batch:  func() *cdc.Batch { return next },
			reason: "is not allowed",
		},
	} {
		for _, delivery := range []string{AtLeastOnce, ExactlyOnce} {
			t.Run(tc.name+"/"+delivery, func(t *testing.T) {
				t.Parallel()
				ctx := testContext(t)
				c := newCluster(t)
				cfg := testConfig(c)
				cfg.Delivery = delivery
				if tc.name != "BadTopicName" {
					if err := newSink(t, cfg).Write(ctx, seed); err != nil {
						t.Fatalf("seed Write: %v", err)
					}
				}
				tc.setup(c, &cfg)
				s := newSink(t, cfg)
				err := s.Write(ctx, tc.batch())
				if !errors.Is(err, cdc.ErrPermanent) {
					t.Fatalf("Write error %v does not wrap cdc.ErrPermanent", err)
				}
				if !strings.Contains(err.Error(), tc.reason) {
					t.Fatalf("Write error %q does not say %q", err, tc.reason)
				}
			})
		}
	}
}

// TestCanceledWrite checks what a cancelled context does to a Write: the
// records not yet sent fail, the Write says so, and the batch written
// again afterwards keeps the order of the stream.
func TestCanceledWrite(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	s := newSink(t, cfg)
	st := sinktest.NewStream("shop", "orders")
	seed, b := st.Snapshot(50, 0)[0], st.Snapshot(50, 0)[0]
	if err := s.Write(ctx, seed); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	err := s.Write(canceled, b)
	if !errors.Is(err, context.Canceled) || errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write with a cancelled context: %v, want a transient context.Canceled", err)
	}
	if err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	checkRead(t, ctx, newReader(c, cfg), sent(seed, b))
}
