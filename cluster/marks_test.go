package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/icecdc/icecdc/sinks/kafka"
)

// TestMarks: a member's marks are kept in the group (LoadMarks reads what
// SaveMarks wrote, a partition without one is missing), the Assigned hook
// is told the member's partitions, and a member that has left the group
// commits no mark any more.
func TestMarks(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ready := make(chan struct{})
	cfg := Config{Type: TypeKafka, Group: "marks", Partitions: 4, SessionTimeout: 2 * time.Second, MinReplicas: 1,
		InstanceID: "a", Kafka: kafka.Config{Brokers: c.ListenAddrs()}}.WithDefaults(nil)
	var assigned []int32
	m, err := New(Options{Pipeline: "p", Version: "1.0.0", Fingerprint: "abc", Config: cfg,
		Kafka: kafka.Config{Brokers: c.ListenAddrs()}, Ready: ready,
		Assigned: func(parts []int32) { assigned = append(assigned, parts...) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("the member stopped before joining: %v", err)
	case <-time.After(time.Minute): // a hang guard only
		t.Fatal("the member did not join in a minute")
	}
	if len(assigned) != 4 {
		t.Fatalf("Assigned was told %v, want the 4 partitions", assigned)
	}
	if err := m.SaveMarks(t.Context(), map[int32]string{0: "zero", 2: "two"}); err != nil {
		t.Fatal(err)
	}
	got, err := m.LoadMarks(t.Context(), []int32{0, 1, 2})
	if err != nil || len(got) != 2 || got[0] != "zero" || got[2] != "two" {
		t.Fatalf("marks %v, %v; want 0: zero, 2: two, none for 1", got, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := m.SaveMarks(context.Background(), map[int32]string{0: "late"}); err == nil {
		t.Fatal("a member that left the group committed a mark")
	}
}
