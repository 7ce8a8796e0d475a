package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
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
