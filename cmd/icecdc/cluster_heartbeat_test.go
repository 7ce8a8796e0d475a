package main

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cluster"
	"github.com/icecdc/icecdc/sinks/kafka"
)

// TestClusterHeartbeats: in cluster mode the heartbeats come from one
// member at a time, the owner of the coordination topic's partition 0,
// as one stream (key {serverName}); when that member leaves, another
// member's heartbeats go on within the session timeout, and the stream
// never holds two heartbeats closer than half an interval (the members
// do not both write it, not even around the handover). Three members
// join; the first two to own partition 0 leave in turn. With
// exactly-once delivery the heartbeats have their own producer, outside
// the tables' transactions.
func TestClusterHeartbeats(t *testing.T) {
	kf, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	brokers := kf.ListenAddrs()
	const intervalMs = 50
	const session = 2 * time.Second
	cfg := &Config{Name: "shop-cdc", Format: defaultFormat("kafka"),
		Sink:     SinkConfig{Type: "kafka", Kafka: kafka.Config{Brokers: brokers, Delivery: "exactly-once"}},
		Debezium: DebeziumConfig{TopicPrefix: "shop", HeartbeatIntervalMs: intervalMs}}
	enc, err := newEncoder(cfg.Format, cfg.Debezium, cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	type running struct {
		m    *cluster.Member
		gate *heartbeatGate
		stop func()
	}
	start := func(instance string) *running {
		t.Helper()
		r := &running{gate: &heartbeatGate{}}
		ready := make(chan struct{})
		cc := cluster.Config{Type: cluster.TypeKafka, Group: "beats", Partitions: 4, SessionTimeout: session, MinReplicas: 1,
			InstanceID: instance, Kafka: kafka.Config{Brokers: brokers}}.WithDefaults(nil)
		r.m, err = cluster.New(cluster.Options{Pipeline: cfg.Name, Version: "1.0.0", Fingerprint: "abc", Config: cc,
			Kafka: kafka.Config{Brokers: brokers}, Log: log, Ready: ready,
			Assigned: func(parts []int32) {
				if slices.Contains(parts, 0) {
					r.gate.set(true)
				}
			},
			Revoked: func(parts []int32, _ bool) {
				if slices.Contains(parts, 0) {
					r.gate.set(false)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopBeats, err := startGatedHeartbeats(ctx, cfg, enc, nil, log, r.gate)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- r.m.Run(ctx) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("member %s stopped before joining: %v", instance, err)
		case <-time.After(time.Minute): // a hang guard only
			t.Fatalf("member %s did not join in a minute", instance)
		}
		r.stop = func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("member %s: %v", instance, err)
			}
			stopBeats()
		}
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topic := cfg.Debezium.heartbeatTopic()
	read := func() []*kgo.Record {
		recs, err := readCommitted(ctx, brokers, topic)
		if err != nil && ctx.Err() == nil {
			return nil // not created yet
		}
		return recs
	}
	waitBeats := func(what string, n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); len(read()) < n; time.Sleep(20 * time.Millisecond) { // a hang guard only
			if time.Now().After(deadline) {
				t.Fatalf("no %d heartbeats %s in a minute: %d", n, what, len(read()))
			}
		}
	}
	owner := func(rs []*running) int {
		for i, r := range rs {
			r.gate.mu.Lock()
			on := r.gate.on
			r.gate.mu.Unlock()
			if on {
				return i
			}
		}
		return -1
	}
	live := []*running{start("a"), start("b"), start("c")}
	defer func() {
		for _, r := range live {
			r.stop()
		}
	}()
	var leftAt []time.Time
	for range 2 {
		waitBeats("before a leave", len(read())+10)
		var k int
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) { // a hang guard only
			if k = owner(live); k >= 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no member owns partition 0")
			}
		}
		r := live[k]
		live = slices.Delete(live, k, k+1)
		leftAt = append(leftAt, time.Now())
		r.stop()
	}
	waitBeats("after the leaves", len(read())+10)
	recs := read()
	key := string(recs[0].Key)
	// runs are the stream's stretches by one producer (one member).
	type run struct {
		producer    int64
		first, last time.Time
		n           int
	}
	runs := []run{{producer: recs[0].ProducerID, first: recs[0].Timestamp, last: recs[0].Timestamp, n: 1}}
	for i := 1; i < len(recs); i++ {
		r, prev := recs[i], recs[i-1]
		if string(r.Key) != key {
			t.Fatalf("heartbeat %d has key %s, heartbeat 0 %s: one stream has one key", i, r.Key, key)
		}
		if gap := r.Timestamp.Sub(prev.Timestamp); gap > session {
			t.Errorf("heartbeats %d and %d %v apart, more than the session timeout %v", i-1, i, gap, session)
		}
		if cur := &runs[len(runs)-1]; r.ProducerID == cur.producer {
			cur.last = r.Timestamp
			cur.n++
			continue
		}
		runs = append(runs, run{producer: r.ProducerID, first: r.Timestamp, last: r.Timestamp, n: 1})
	}
	// The stream passed from owner to owner (the joins may move
	// partition 0 too), at least once for each leave, and a member began
	// only after the one before it had written its last heartbeat: never
	// two members at once.
	if len(runs) < 3 {
		t.Fatalf("heartbeats in %d runs %+v, want a run for each owner of partition 0 (two left at %v)", len(runs), runs, leftAt)
	}
	for i, r := range runs {
		if r.producer < 0 {
			t.Fatalf("run %d: heartbeats without a producer id", i)
		}
		if i > 0 && r.first.Before(runs[i-1].last) {
			t.Errorf("run %d (producer %d) began at %v, before run %d (producer %d) ended at %v: two members wrote heartbeats at once",
				i, r.producer, r.first, i-1, runs[i-1].producer, runs[i-1].last)
		}
	}
	// And the stream does not multiply: at most one heartbeat an
	// interval, and one more for each handover (the next owner's ticker
	// runs in its own phase).
	span := recs[len(recs)-1].Timestamp.Sub(recs[0].Timestamp)
	if most := int(span/(intervalMs*time.Millisecond)) + len(runs); len(recs) > most {
		t.Errorf("%d heartbeats in %v, at most %d expected at one an interval", len(recs), span, most)
	}
	t.Logf("%d heartbeats in %d runs of one member each", len(recs), len(runs))
}
