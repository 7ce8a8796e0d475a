package cluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/icecdc/icecdc/sinks/kafka"
)

// syncBuffer is a log sink that members write from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A group coordinator that moves or loads answers NOT_COORDINATOR (or
// COORDINATOR_NOT_AVAILABLE) for a while: the member's start checks wait
// it out, saying so, and the member joins; it does not exit.
func TestStartRetriesWhileTheCoordinatorMoves(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const failing = 12
	var describes, finds atomic.Int32
	c.ControlKey(int16(kmsg.DescribeGroups), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if describes.Add(1) > failing {
			return nil, nil, false
		}
		req := kreq.(*kmsg.DescribeGroupsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.FindCoordinator), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if finds.Add(1) > failing/4 {
			return nil, nil, false
		}
		req := kreq.(*kmsg.FindCoordinatorRequest)
		resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		for _, k := range req.CoordinatorKeys {
			rc := kmsg.NewFindCoordinatorResponseCoordinator()
			rc.Key, rc.ErrorCode = k, kerr.CoordinatorNotAvailable.Code
			resp.Coordinators = append(resp.Coordinators, rc)
		}
		return resp, nil, true
	})
	var logs syncBuffer
	ready := make(chan struct{})
	m, err := New(Options{Pipeline: "p", Version: "1.0.0", Fingerprint: "abc",
		Config: Config{Type: TypeKafka, Group: "g", SessionTimeout: 2 * time.Second, MinReplicas: 1,
			Kafka: kafka.Config{Brokers: c.ListenAddrs()}}.WithDefaults(nil),
		Kafka: kafka.Config{Brokers: c.ListenAddrs()}, Ready: ready,
		Log: slog.New(slog.NewTextHandler(&logs, nil)), RetryInitial: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the member stopped before joining (%d NOT_COORDINATOR answers given): %v", describes.Load(), err)
	case <-time.After(3 * time.Minute): // a hang guard only
		t.Fatalf("the member did not join in 3 minutes; log:\n%s", logs.String())
	}
	if describes.Load() <= failing {
		t.Fatalf("joined after %d describes, before the coordinator answered", describes.Load())
	}
	if !strings.Contains(logs.String(), "NOT_COORDINATOR") {
		t.Fatalf("no log line says the member waited for the coordinator:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
}

// A member that dies without leaving (a crash, SIGKILL) and restarts on
// the same host takes its place back at once: it gets the same
// group.instance.id (the host's lowest free slot), which removes the dead
// one from the group there and then; a dynamic member's restart would
// leave the dead one holding its tables until its session timed out (2
// minutes here: the restart would not be assigned within the minute the
// test waits).
func TestRestartedMemberTakesTheDeadOnesPlace(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	group := fmt.Sprintf("static-%d-%d", os.Getpid(), time.Now().UnixNano())
	cfg := Config{Type: TypeKafka, Group: group, Partitions: 4, SessionTimeout: 2 * time.Minute, MinReplicas: 1,
		InstanceID: "other-host-0", Kafka: kafka.Config{Brokers: c.ListenAddrs()}}.WithDefaults(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run := func(cfg Config) (*Member, chan error) {
		t.Helper()
		ready := make(chan struct{})
		m, err := New(Options{Pipeline: "p", Version: "1.0.0", Fingerprint: "abc", Config: cfg,
			Kafka: kafka.Config{Brokers: c.ListenAddrs()}, Ready: ready})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("member stopped before joining: %v", err)
		case <-time.After(time.Minute): // a hang guard only
			t.Fatal("member did not join in a minute")
		}
		return m, done
	}
	first, _ := run(cfg) // the group's leader

	// The member that will die: a static member with the instance id
	// this host's first member takes.
	host, _ := os.Hostname()
	dying, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ClientID(clientID("1.0.0", "abc", "dead-1")), kgo.ConsumerGroup(group), kgo.ConsumeTopics(cfg.Topic),
		kgo.InstanceID(host+"-0"), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.SessionTimeout(cfg.SessionTimeout),
		kgo.HeartbeatInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(dying)
	stable := func() int32 {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			go dying.PollFetches(ctx)
			gs, err := adm.DescribeGroups(ctx, group)
			if err != nil || gs[group].State != "Stable" || len(gs[group].Members) != 2 {
				continue
			}
			assigned := 0
			for _, m := range gs[group].Members {
				if a, ok := m.Assigned.AsConsumer(); ok && len(a.Topics) > 0 {
					assigned++
				}
			}
			if _, gen := dying.GroupMetadata(); assigned == 2 && gen == first.Generation() {
				return gen
			}
		}
		t.Fatal("the group did not settle with two assigned members in a minute")
		return 0
	}
	gen := stable()
	dying.Close() // a static member's close does not leave: as if it died

	restarted, _ := run(Config{Type: TypeKafka, Group: group, Partitions: 4, SessionTimeout: 2 * time.Minute, MinReplicas: 1,
		Kafka: kafka.Config{Brokers: c.ListenAddrs()}}.WithDefaults(nil))
	if restarted.instance != host+"-0" {
		t.Fatalf("restarted member's instance id %q, want %q (the host's first free slot)", restarted.instance, host+"-0")
	}
	gs, err := kadm.NewClient(first.cl).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range gs[group].Members {
		ids = append(ids, m.ClientID)
		if _, _, name, _ := parseClientID(m.ClientID); name == "dead-1" {
			t.Fatalf("the dead member is still in the group (generation %d before) after its restart joined: members %v", gen, ids)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("group members %v, want the first and the restarted one", ids)
	}
}

// Two members of a group on one host take two instance ids; a freed
// slot is taken again by the next.
func TestInstanceSlotsPerHost(t *testing.T) {
	group := fmt.Sprintf("slots-%d-%d", os.Getpid(), time.Now().UnixNano())
	a, releaseA, err := instanceSlot(group)
	if err != nil {
		t.Fatal(err)
	}
	b, releaseB, err := instanceSlot(group)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseB()
	if a == b {
		t.Fatalf("two members on one host got the same instance id %q", a)
	}
	releaseA()
	c, releaseC, err := instanceSlot(group)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseC()
	if c != a {
		t.Fatalf("after %q was freed the next member got %q", a, c)
	}
}

// Two members given one cluster.instance_id would fence each other in
// turn for ever; the one fenced stops with an error naming the setting.
func TestSharedInstanceIDStopsTheFencedMember(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cfg := Config{Type: TypeKafka, Group: "twins", Partitions: 4, SessionTimeout: 10 * time.Second, MinReplicas: 1,
		InstanceID: "twin", Kafka: kafka.Config{Brokers: c.ListenAddrs()}}.WithDefaults(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func() chan error {
		ready := make(chan struct{})
		m, err := New(Options{Pipeline: "p", Version: "1.0.0", Fingerprint: "abc", Config: cfg,
			Kafka: kafka.Config{Brokers: c.ListenAddrs()}, Ready: ready})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("member stopped before joining: %v", err)
		case <-time.After(time.Minute): // a hang guard only
			t.Fatal("member did not join in a minute")
		}
		return done
	}
	first := start()
	second := start()
	select {
	case err := <-first:
		wantErr(t, err, "group twins", "instance id twin", "cluster.instance_id", "FENCED_INSTANCE_ID")
	case err := <-second:
		t.Fatalf("the member that joined last stopped: %v", err)
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("neither member stopped in a minute: they share an instance id")
	}
}
