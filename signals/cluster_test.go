package signals_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/cluster"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/snapreq"
)

// memberPipelines is a cluster member's Target: the pipelines of the
// tables it follows; a table it does not (or whose pipeline stopped or is
// starting) is ErrNotOwned, as the daemon's is.
type memberPipelines struct {
	mu sync.Mutex
	by map[string]*cdc.Pipeline
}

func (m *memberPipelines) get(table string) *cdc.Pipeline {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.by[table]
}

func notOwned(err error) error {
	if errors.Is(err, snapreq.ErrNotServing) && !errors.Is(err, snapreq.ErrNothingToRead) {
		return fmt.Errorf("%w: %v", signals.ErrNotOwned, err)
	}
	return err
}

func (m *memberPipelines) Snapshot(ctx context.Context, table string, req snapreq.SnapshotRequest) (cdc.SnapshotInfo, error) {
	p := m.get(table)
	if p == nil {
		return cdc.SnapshotInfo{}, signals.ErrNotOwned
	}
	si, err := p.Snapshot(ctx, table, req)
	return si, notOwned(err)
}

func (m *memberPipelines) ControlSnapshot(table string, c snapreq.SnapshotControl) error {
	p := m.get(table)
	if p == nil {
		return signals.ErrNotOwned
	}
	return notOwned(p.ControlSnapshot(table, c))
}

// clusterSeed is ICECDC_SIGNAL_SEED, else the clock's (logged, to rerun).
func clusterSeed(t *testing.T) uint64 {
	if s := os.Getenv("ICECDC_SIGNAL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ICECDC_SIGNAL_SEED=%q: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

// TestClusterSignalsSurviveMoves: members of a cluster (in this process,
// on kfake) share four tables, one per coordination partition; a signal
// asks for a snapshot of a random table and, right after it is produced,
// a member joins or leaves, so that the table moves between members
// while the signal is read, waits or runs. Every signal's snapshot must
// run to COMPLETED exactly once: one STARTED and one COMPLETED
// notification per signal, no ABORTED, whichever members read it.
func TestClusterSignalsSurviveMoves(t *testing.T) {
	seed := clusterSeed(t)
	t.Logf("seed %d (ICECDC_SIGNAL_SEED reruns it)", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	brokers := signalBroker(t, kfake.GroupMinSessionTimeout(time.Second))
	const parts = 4
	var names []string
	used := map[int32]bool{}
	for i := 0; len(names) < parts; i++ {
		name := fmt.Sprintf("shop.t%02d", i)
		if p := cluster.Partition(name, parts); !used[p] {
			used[p] = true
			names = append(names, name)
		}
	}
	var tables []cluster.Table
	for i, name := range names {
		info := cdctest.Info("shop", name[len("shop."):])
		info.UUID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		src := cdctest.New(info)
		src.Append(cdctest.Inserts(1, 100)...)
		tables = append(tables, cluster.Table{TableSpec: cdc.TableSpec{Name: name, Start: cdc.Start{Kind: cdc.StartEarliest}},
			Open: func() (cdc.Source, error) { return src, nil }})
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(io.MultiWriter(logs), nil))
	ncl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer ncl.Close()
	n := &signals.Notifier{Connector: "icecdc", Client: ncl, Topic: "notes", Errors: log}
	sink := &cdctest.Sink{}
	group := fmt.Sprintf("signals-%d", seed)

	type running struct {
		name string
		stop context.CancelFunc
		done chan struct{}
	}
	started := 0
	start := func() *running {
		t.Helper()
		started++
		r := &running{name: fmt.Sprintf("m%d", started), done: make(chan struct{})}
		mlog := log.With("member", r.name)
		targets := &memberPipelines{by: map[string]*cdc.Pipeline{}}
		ch := &signals.ClusterChannel{Opts: []kgo.Opt{kgo.SeedBrokers(brokers...)}, Topic: "icecdc-signal", Key: "icecdc",
			Tables: names, Target: targets, Notify: n, Log: mlog, RetryMax: 50 * time.Millisecond}
		cfg := cluster.Config{Type: cluster.TypeKafka, Group: group, Partitions: parts, SessionTimeout: 2 * time.Second, MinReplicas: 1,
			InstanceID: r.name, Kafka: kafka.Config{Brokers: brokers}}.WithDefaults(nil)
		m, err := cluster.New(cluster.Options{Pipeline: "p", Version: "1.0.0", Fingerprint: "abc", Config: cfg, Tables: tables,
			Kafka: kafka.Config{Brokers: brokers}, Sink: sink, Log: mlog,
			RetryInitial: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
			NewPipeline: func(spec cdc.TableSpec, s cdc.Sink, store cdc.Store) *cdc.Pipeline {
				p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{spec}, Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p"}},
					Sink: s, Store: store, Poll: 5 * time.Millisecond, ChunkSize: 10, RetryInitial: time.Millisecond, RetryMax: 10 * time.Millisecond,
					Notify: n.Notice, Log: mlog, RowFilters: rowfilter.Language{}}
				targets.mu.Lock()
				targets.by[spec.Name] = p
				targets.mu.Unlock()
				return p
			},
			Assigned: ch.Assigned, Revoked: ch.Revoked})
		if err != nil {
			t.Fatal(err)
		}
		ch.Marks = m
		ctx, cancel := context.WithCancel(context.Background())
		r.stop = cancel
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := ch.Run(ctx); err != nil {
				t.Errorf("%s: signals: %v", r.name, err)
			}
		}()
		go func() {
			defer wg.Done()
			if err := m.Run(ctx); err != nil {
				t.Errorf("%s: run: %v", r.name, err)
			}
		}()
		go func() {
			wg.Wait()
			close(r.done)
		}()
		return r
	}
	leave := func(r *running) {
		r.stop()
		<-r.done
	}
	live := []*running{start(), start()}
	defer func() {
		for _, r := range live {
			leave(r)
		}
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	}()

	// A table refuses a snapshot until its first commit is delivered (as
	// in one process): the signals come once every table's is.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) { // a hang guard only
		ok := true
		for _, tb := range tables {
			src, _ := tb.Open()
			n := 0
			for _, id := range sink.IDs() {
				if strings.HasPrefix(id, src.Info().UUID) {
					n++
				}
			}
			ok = ok && n >= 100

		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tables' first commits were not delivered in a minute")
		}
	}
	rounds := 10
	if s := os.Getenv("ICECDC_SIGNAL_ROUNDS"); s != "" {
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			t.Fatalf("ICECDC_SIGNAL_ROUNDS=%q: want a positive number", s)
		}
	}
	var ids []string
	for i := range rounds {
		id := fmt.Sprintf("s%02d", i)
		ids = append(ids, id)
		table := names[rng.IntN(len(names))]
		produce(t, brokers, "icecdc", fmt.Sprintf(`{"id": %q, "type": "execute-snapshot", "data": {"type": "incremental", "data-collections": [%q]}}`, id, table))
		join := len(live) < 2 || (len(live) < 3 && rng.IntN(2) == 0)
		if join {
			live = append(live, start())
			t.Logf("round %d: signal %s for %s, then member %s joins", i, id, table, live[len(live)-1].name)
		} else {
			k := rng.IntN(len(live))
			r := live[k]
			live = append(live[:k], live[k+1:]...)
			t.Logf("round %d: signal %s for %s, then member %s leaves", i, id, table, r.name)
			leave(r)
		}
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
	}
	for _, id := range ids {
		waitNote(t, brokers, id, snapreq.NoticeCompleted)
	}
	// The members go on a moment: a second run of a signal would start
	// now, with nothing else left to do.
	time.Sleep(time.Second)
	ncl.Flush(t.Context())
	count := map[string]map[string]int{}
	for _, x := range notes(t, brokers) {
		if count[x.ID] == nil {
			count[x.ID] = map[string]int{}
		}
		count[x.ID][x.Type]++
	}
	for _, id := range ids {
		c := count[id]
		if c[snapreq.NoticeStarted] != 1 || c[snapreq.NoticeCompleted] != 1 || c[snapreq.NoticeAborted] != 0 {
			t.Errorf("signal %s: notifications %v, want one STARTED and one COMPLETED, no ABORTED", id, c)
		}
	}
}
