package cluster

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func newAdmin(t *testing.T, brokers int) (*kadm.Client, []string) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl), c.ListenAddrs()
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one saying %q", parts)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error of more than one line: %q", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not say %q", err, p)
		}
	}
}

func TestCheckpointTopicMustBeCompactedAndReplicated(t *testing.T) {
	ctx := context.Background()
	adm, _ := newAdmin(t, 3)
	// Created by the check: compacted, 3 replicas.
	if err := checkCheckpointTopic(ctx, adm, "cp.new", 0); err != nil {
		t.Fatalf("new topic: %v", err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "cp.deleting"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, checkCheckpointTopic(ctx, adm, "cp.deleting", 0), "checkpoint topic cp.deleting", "cleanup.policy", "compact")
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact}, "cp.single"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, checkCheckpointTopic(ctx, adm, "cp.single", 0), "checkpoint topic cp.single", "1 replica", "fewer than 3")
	if err := checkCheckpointTopic(ctx, adm, "cp.single", 1); err != nil {
		t.Fatalf("min_replicas 1: %v", err)
	}
}

func TestCoordinationTopicPartitionsMustMatch(t *testing.T) {
	ctx := context.Background()
	adm, _ := newAdmin(t, 1)
	if err := ensureCoordinationTopic(ctx, adm, "coord", 8); err != nil {
		t.Fatal(err)
	}
	if err := ensureCoordinationTopic(ctx, adm, "coord", 8); err != nil {
		t.Fatalf("same count again: %v", err)
	}
	wantErr(t, ensureCoordinationTopic(ctx, adm, "coord", 16), "coordination topic coord has 8 partitions", "cluster.partitions: 16")
}

// joinAs joins the group as a member whose client id says version and
// fingerprint, and waits until the group has it.
func joinAs(t *testing.T, brokers []string, group, id string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID(id), kgo.ConsumerGroup(group),
		kgo.ConsumeTopics("coord"), kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		if _, gen := cl.GroupMetadata(); gen > 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("member did not join")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPeersMustShareConfigAndVersion(t *testing.T) {
	ctx := context.Background()
	adm, brokers := newAdmin(t, 1)
	if err := ensureCoordinationTopic(ctx, adm, "coord", 4); err != nil {
		t.Fatal(err)
	}
	if err := checkPeers(ctx, adm, "g", "1.2.0", "aaaa", clientID("1.2.0", "aaaa", "me")); err != nil {
		t.Fatalf("empty group: %v", err)
	}
	joinAs(t, brokers, "g", clientID("1.2.0", "aaaa", "host-1"))
	if err := checkPeers(ctx, adm, "g", "1.2.0", "aaaa", clientID("1.2.0", "aaaa", "me")); err != nil {
		t.Fatalf("same config and version: %v", err)
	}
	if err := checkPeers(ctx, adm, "g", "1.3.0", "aaaa", clientID("1.3.0", "aaaa", "me")); err != nil {
		t.Fatalf("a newer member joining (rolling upgrade): %v", err)
	}
	wantErr(t, checkPeers(ctx, adm, "g", "1.2.0", "bbbb", clientID("1.2.0", "bbbb", "me")),
		"group g", "member host-1", "another pipeline configuration", "fingerprint aaaa")
	wantErr(t, checkPeers(ctx, adm, "g", "1.1.9", "aaaa", clientID("1.1.9", "aaaa", "me")),
		"group g", "member host-1", "runs icecdc 1.2.0, this one is 1.1.9")
	joinAs(t, brokers, "other", "some-consumer")
	wantErr(t, checkPeers(ctx, adm, "other", "1.2.0", "aaaa", clientID("1.2.0", "aaaa", "me")),
		"group other", "not an icecdc cluster member", `"some-consumer"`)
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		cmp  int
		ok   bool
	}{
		{"0.1.0-dev", "0.1.0", 0, true},
		{"0.1.0", "0.2.0", -1, true},
		{"v1.10.0", "1.9.3", 1, true},
		{"1.2", "1.2.0", 0, true},
		{"dev", "0.1.0", 0, false},
	} {
		cmp, ok := compareVersions(c.a, c.b)
		if cmp != c.cmp || ok != c.ok {
			t.Errorf("compareVersions(%q, %q) = %d, %v; want %d, %v", c.a, c.b, cmp, ok, c.cmp, c.ok)
		}
	}
}

func TestPartitionSpreadsTables(t *testing.T) {
	seen := map[int32]int{}
	for i := range 1000 {
		p := Partition("shop.t"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('a'+i/26%26)), 16)
		if p < 0 || p >= 16 {
			t.Fatalf("partition %d out of range", p)
		}
		seen[p]++
	}
	if len(seen) != 16 {
		t.Fatalf("1000 names hash to %d of 16 partitions", len(seen))
	}
	if Partition("shop.orders", 64) != Partition("shop.orders", 64) {
		t.Fatal("not deterministic")
	}
}

// A real broker may not know a topic it has just created for a moment
// (DescribeConfigs answers UNKNOWN_TOPIC_OR_PARTITION): the checks wait
// for it, and give up, naming the topic, only when their context ends.
func TestChecksWaitForANewTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	var unknown atomic.Int32   // answers still to fail
	var stopAfter atomic.Int32 // answers after which stop is called (0: never)
	var stop context.CancelFunc
	unknownAnswers := func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if unknown.Add(-1) < 0 {
			return nil, nil, false
		}
		if stopAfter.Add(-1) == 0 {
			stop() // the caller gives up while this answer is on its way
		}
		req := kreq.(*kmsg.DescribeConfigsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, r := range req.Resources {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
			rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil, true
	}
	c.ControlKey(int16(kmsg.DescribeConfigs), unknownAnswers)
	ctx := context.Background()
	unknown.Store(3)
	if err := checkCheckpointTopic(ctx, adm, "cp.slow", 1); err != nil {
		t.Fatalf("checkpoint topic known after 3 unknown answers: %v", err)
	}
	if unknown.Load() >= 0 {
		t.Fatalf("the check did not ask again after the unknown answers (%d left)", unknown.Load())
	}
	// A topic that never becomes known: the caller gives up after the
	// third answer, and the error is the answer, not the caller's.
	short, cancel := context.WithCancel(ctx)
	defer cancel()
	stop = cancel
	stopAfter.Store(3)
	unknown.Store(1 << 30)
	wantErr(t, checkCheckpointTopic(short, adm, "cp.never", 1), "checkpoint topic cp.never", "UNKNOWN_TOPIC_OR_PARTITION")
}

// A member hears of a rebalance only in its next heartbeat's answer: the
// interval bounds how long a graceful handover waits for the others.
func TestHeartbeatIntervalBoundsRebalanceNotice(t *testing.T) {
	for _, session := range []time.Duration{time.Second, 3 * time.Second, 6 * time.Second, 10 * time.Second, 45 * time.Second, 5 * time.Minute} {
		hb := heartbeatInterval(session)
		if hb > 500*time.Millisecond {
			t.Errorf("session %s: heartbeat every %s: a leaving member's tables would wait more than 500ms for the rebalance to be noticed", session, hb)
		}
		if hb > session/3 || hb <= 0 {
			t.Errorf("session %s: heartbeat every %s: want more than 0 and at most a third of the session timeout", session, hb)
		}
	}
}
