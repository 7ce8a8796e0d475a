package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/kafka"
)

// TestReleasedTablesLeaveTheMembersSeries: a member that gives tables up
// to a member joining serves no series for them any more (neither
// icecdc_cluster_table_owned nor, through Options.Released, the
// pipeline's), so that over the group's moves a member's series follow
// the tables it owns, not every table that ever passed through it.
func TestReleasedTablesLeaveTheMembersSeries(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const parts = 4
	var tables []Table
	used := map[int32]bool{}
	for i := 0; len(tables) < parts; i++ {
		name := fmt.Sprintf("shop.r%02d", i)
		if p := Partition(name, parts); !used[p] {
			used[p] = true
			// No table can be opened here: the member retries it, as it
			// does a table whose catalog is away, until it gives it up.
			tables = append(tables, Table{TableSpec: cdc.TableSpec{Name: name}, Open: func() (cdc.Source, error) {
				return nil, errors.New("catalog away")
			}})
		}
	}
	group := fmt.Sprintf("release-%d-%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type started struct {
		m        *Member
		reg      *prometheus.Registry
		mu       sync.Mutex
		released []string
		done     chan error
	}
	start := func(instance string) *started {
		t.Helper()
		s := &started{reg: prometheus.NewRegistry(), done: make(chan error, 1)}
		ready := make(chan struct{})
		cfg := Config{Type: TypeKafka, Group: group, Partitions: parts, SessionTimeout: 10 * time.Second, MinReplicas: 1,
			InstanceID: instance, Kafka: kafka.Config{Brokers: c.ListenAddrs()}}.WithDefaults(nil)
		s.m, err = New(Options{Pipeline: "p", Version: "1.0.0", Fingerprint: "abc", Config: cfg, Tables: tables,
			Kafka: kafka.Config{Brokers: c.ListenAddrs()}, Ready: ready, Metrics: NewMetrics(s.reg),
			RetryInitial: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
			Released: func(table string) {
				s.mu.Lock()
				s.released = append(s.released, table)
				s.mu.Unlock()
			}})
		if err != nil {
			t.Fatal(err)
		}
		go func() { s.done <- s.m.Run(ctx) }()
		select {
		case <-ready:
		case err := <-s.done:
			t.Fatalf("member %s stopped before joining: %v", instance, err)
		case <-time.After(time.Minute): // a hang guard only
			t.Fatalf("member %s did not join in a minute", instance)
		}
		return s
	}
	// ownedSeries lists the tables of the member's icecdc_cluster_table_owned
	// series, whatever their value.
	ownedSeries := func(s *started) []string {
		t.Helper()
		fams, err := s.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range fams {
			if f.GetName() != "icecdc_cluster_table_owned" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "table" {
						out = append(out, l.GetValue())
					}
				}
			}
		}
		slices.Sort(out)
		return out
	}

	first := start("first-0")
	if got := first.m.Owned(); len(got) != parts {
		t.Fatalf("the only member owns %v, want all %d tables", got, parts)
	}
	second := start("second-0")
	var mine, theirs []string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) { // a hang guard only
		mine, theirs = first.m.Owned(), second.m.Owned()
		first.mu.Lock()
		released := slices.Sorted(slices.Values(first.released))
		first.mu.Unlock()
		if len(mine) == parts/2 && len(theirs) == parts/2 && slices.Equal(released, theirs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no balanced handover in a minute: the first member owns %v and released %v, the second owns %v", mine, released, theirs)
		}
	}
	if got := ownedSeries(first); !slices.Equal(got, mine) {
		t.Errorf("the first member serves icecdc_cluster_table_owned for %v, want only its own %v (it gave %v up)", got, mine, theirs)
	}
	if got := ownedSeries(second); !slices.Equal(got, theirs) {
		t.Errorf("the second member serves icecdc_cluster_table_owned for %v, want its own %v", got, theirs)
	}
	cancel()
	for _, s := range []*started{first, second} {
		if err := <-s.done; err != nil {
			t.Fatalf("run: %v", err)
		}
	}
}
