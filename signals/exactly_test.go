package signals_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/state"
)

// rig is a daemon's tables, state file and sink that outlive its runs:
// each run is a pipeline and a signal channel over them, stopped as
// SIGTERM stops the daemon.
type rig struct {
	t       *testing.T
	brokers []string
	path    string
	srcs    map[string]*cdctest.Source
	specs   []string
	sink    *cdctest.Sink
	log     *syncBuffer
	failing map[string]*atomic.Bool // a table's catalog fails while set
}

func newRig(t *testing.T, brokers []string, tables ...string) *rig {
	r := &rig{t: t, brokers: brokers, path: filepath.Join(t.TempDir(), "state.db"), srcs: map[string]*cdctest.Source{},
		specs: tables, sink: &cdctest.Sink{}, log: &syncBuffer{}, failing: map[string]*atomic.Bool{}}
	for i, name := range tables {
		ns, tn, _ := strings.Cut(name, ".")
		info := cdctest.Info(ns, tn)
		info.UUID = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		src := cdctest.New(info)
		src.Append(cdctest.Inserts(1, 100)...)
		fail := &atomic.Bool{}
		src.OnRefresh = func() error {
			if fail.Load() {
				return errors.New("catalog down")
			}
			return nil
		}
		r.srcs[name], r.failing[name] = src, fail
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", r.log.String())
		}
	})
	return r
}

// run starts a run; stop ends it and waits for it.
func (r *rig) run(window int) (stop func()) {
	t := r.t
	store, err := state.Open(r.path, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var specs []cdc.TableSpec
	for _, name := range r.specs {
		specs = append(specs, cdc.TableSpec{Name: name, Source: r.srcs[name], Start: cdc.Start{Kind: cdc.StartEarliest}})
	}
	log := slog.New(slog.NewJSONHandler(io.MultiWriter(r.log), nil))
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	n := &signals.Notifier{Connector: "icecdc", Log: log, Client: cl, Topic: "notes"}
	p := &cdc.Pipeline{Name: "p", Tables: specs, Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p"}}, Sink: r.sink, Store: store,
		Poll: time.Millisecond, ChunkSize: 10, RetryInitial: time.Millisecond, RetryMax: time.Millisecond,
		Notify: n.Notice, Log: log, RowFilters: rowfilter.Language{}}
	ch := &signals.Channel{Opts: []kgo.Opt{kgo.SeedBrokers(r.brokers...)}, Topic: "icecdc-signal", Group: "kafka-signal", Key: "icecdc",
		Tables: r.specs, Target: p, Notify: n, Log: log, Window: window}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := p.Run(ctx); err != nil && ctx.Err() == nil {
			t.Errorf("pipeline: %v", err)
		}
	}()
	go func() {
		defer wg.Done()
		select {
		case <-p.Serving(): // not Ready: a failing table does not hold signals back
		case <-ctx.Done():
			return
		}
		if err := ch.Run(ctx); err != nil {
			t.Errorf("signal channel: %v", err)
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			cl.Flush(context.Background())
			cl.Close()
			store.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitLog waits until the log holds n lines with s; the deadline is a
// hang guard only.
func (r *rig) waitLog(s string, n int) {
	r.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); strings.Count(r.log.String(), s) < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the log has %d lines with %s, want %d", strings.Count(r.log.String(), s), s, n)
		}
	}
}

func (r *rig) rows(table string) int { return rCount(r.sink, r.srcs[table].Table.UUID) }

// count is how many notifications of id have type typ.
func count(all []signals.Notification, id, typ string) int {
	n := 0
	for _, x := range all {
		if x.ID == id && x.Type == typ {
			n++
		}
	}
	return n
}

func snap(id, table string) string {
	return fmt.Sprintf(`{"id": %q, "type": "execute-snapshot", "data": {"data-collections": [%q]}}`, id, table)
}

// TestSignalsDoneOnceAcrossRestarts: signals done are not done again
// after a restart, though a signal before them (for a table whose
// catalog fails) holds the committed offset back: s1 waits for
// shop.orders, s2 and s3 read shop.items; a restart passes over s2 and
// s3 (the commit's metadata names them done), and so does a restart
// from a commit without that metadata (the table's checkpoint names the
// last signal it took, and it takes them in order); s1 is done once its
// table's catalog answers. On main, s2 ran again after each restart
// (the checkpoint remembered s3 only).
func TestSignalsDoneOnceAcrossRestarts(t *testing.T) {
	brokers := signalBroker(t)
	r := newRig(t, brokers, "shop.orders", "shop.items")

	stop := r.run(0)
	r.waitLog("reading signals", 1)
	r.waitLog(`"msg":"commit delivered"`, 2)
	r.failing["shop.orders"].Store(true)
	produce(t, brokers, "icecdc", snap("s1", "shop.orders"), snap("s2", "shop.items"), snap("s3", "shop.items"))
	waitNote(t, brokers, "s3", snapreq.NoticeCompleted)
	stop()
	if got := committed(t, brokers, "kafka-signal"); got != 0 {
		t.Fatalf("committed offset %d, want 0 (s1 is not done)", got)
	}
	if n := r.rows("shop.items"); n != 200 {
		t.Fatalf("shop.items: %d rows read, want 200 (s2, s3)", n)
	}

	// A restart, shop.orders failing still: s2 and s3 are passed over.
	stop = r.run(0)
	produce(t, brokers, "icecdc", snap("s4", "shop.items"))
	all := waitNote(t, brokers, "s4", snapreq.NoticeCompleted)
	stop()
	if n := r.rows("shop.items"); n != 300 {
		t.Errorf("after a restart shop.items has %d rows read, want 300 (s2, s3, s4 once each)", n)
	}
	for _, id := range []string{"s2", "s3"} {
		if n := count(all, id, snapreq.NoticeStarted); n != 1 {
			t.Errorf("signal %s started %d times, want 1", id, n)
		}
	}

	// The commit without its metadata (an older icecdc's, or one lost
	// between a snapshot's start and its commit): the tables' marks
	// still pass over s2, s3 and s4; s1 runs once shop.orders answers.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "icecdc-signal", Partition: 0, At: 0, LeaderEpoch: -1})
	if err := kadm.NewClient(cl).CommitAllOffsets(t.Context(), "kafka-signal", offs); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	r.failing["shop.orders"].Store(false)
	r.run(0)
	produce(t, brokers, "icecdc", snap("s5", "shop.items"))
	waitNote(t, brokers, "s5", snapreq.NoticeCompleted)
	all = waitNote(t, brokers, "s1", snapreq.NoticeCompleted)
	if n := r.rows("shop.items"); n != 400 {
		t.Errorf("after a restart from offset 0 shop.items has %d rows read, want 400 (s2 to s5 once each)", n)
	}
	if n := r.rows("shop.orders"); n != 100 {
		t.Errorf("shop.orders has %d rows read, want 100 (s1 once)", n)
	}
	for _, id := range []string{"s1", "s2", "s3", "s4", "s5"} {
		if n := count(all, id, snapreq.NoticeStarted); n != 1 {
			t.Errorf("signal %s started %d times, want 1", id, n)
		}
	}
	waitCommitted(t, brokers, 5, "past every signal")
}

// TestSignalWindow: with a window of 4, signals for a table whose
// catalog fails are read 4 at a time, not all at once (the channel
// stops fetching, it drops nothing); once the table answers, each is
// done once, in the topic's order. On main every signal was read and
// held at once (100,000 took 2 GB).
func TestSignalWindow(t *testing.T) {
	brokers := signalBroker(t)
	r := newRig(t, brokers, "shop.orders")
	r.run(4)
	r.waitLog("reading signals", 1)
	r.waitLog(`"msg":"commit delivered"`, 1)
	r.failing["shop.orders"].Store(true)
	var values []string
	for i := range 20 {
		values = append(values, snap(fmt.Sprintf("w%02d", i), "shop.orders"))
	}
	produce(t, brokers, "icecdc", values...)
	r.waitLog("the window of pending signals is full", 1)
	if n := strings.Count(r.log.String(), `"msg":"signal"`); n != 4 {
		t.Fatalf("%d signals read while 4 may wait", n)
	}
	r.failing["shop.orders"].Store(false)
	all := waitNote(t, brokers, "w19", snapreq.NoticeCompleted)
	var order []string
	for _, x := range all {
		if x.Type == snapreq.NoticeStarted {
			order = append(order, x.ID)
		}
	}
	if want := strings.Join(slicesOf("w%02d", 20), ","); strings.Join(order, ",") != want {
		t.Errorf("started %v, want each once in order", order)
	}
	if n := r.rows("shop.orders"); n != 2000 {
		t.Errorf("%d rows read, want 2000", n)
	}
}

func slicesOf(format string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// TestSignalsDoneKeptWhenNotReadAgain: a restart that stops before it
// read again as far as the commit's metadata said keeps what the
// metadata said of the rest: the signals it named done stay done. Here
// s2 to s4 are named done, s1 waits for a failing table in a window of
// one, so the run never reads past s1.
func TestSignalsDoneKeptWhenNotReadAgain(t *testing.T) {
	brokers := signalBroker(t)
	r := newRig(t, brokers, "shop.orders", "shop.items")
	produce(t, brokers, "icecdc", snap("s1", "shop.orders"), snap("s2", "shop.items"), snap("s3", "shop.items"), snap("s4", "shop.items"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const meta = "icecdc-signals/1 4" // s1 pending, s2 to s4 done
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "icecdc-signal", Partition: 0, At: 0, LeaderEpoch: -1, Metadata: meta})
	if err := adm.CommitAllOffsets(t.Context(), "kafka-signal", offs); err != nil {
		t.Fatal(err)
	}
	r.failing["shop.orders"].Store(true)
	stop := r.run(1)
	r.waitLog("the window of pending signals is full", 1)
	stop()
	got, err := adm.FetchOffsets(t.Context(), "kafka-signal")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := got.Lookup("icecdc-signal", 0); o.At != 0 || o.Metadata != meta {
		t.Fatalf("committed %d %q after a run that read s1 only, want 0 %q", o.At, o.Metadata, meta)
	}
	r.failing["shop.orders"].Store(false)
	r.run(0)
	produce(t, brokers, "icecdc", snap("s5", "shop.items"))
	// shop.items takes its signals in order: s2 to s4, read again,
	// would have started before s5.
	all := waitNote(t, brokers, "s5", snapreq.NoticeCompleted)
	for _, id := range []string{"s2", "s3", "s4"} {
		if n := count(all, id, snapreq.NoticeStarted); n != 0 {
			t.Errorf("%s, named done, started %d times", id, n)
		}
	}
}

// TestSignalStopDropsQueued: a stop-snapshot ends the running read and
// drops the signals before it that have not started, whether queued in
// the table (B) or still in the table's lane (C); the signal after it
// runs. Every signal is done (the offset is committed past them all).
func TestSignalStopDropsQueued(t *testing.T) {
	brokers := signalBroker(t)
	r := newRig(t, brokers, "shop.orders")
	r.run(0)
	r.waitLog(`"msg":"commit delivered"`, 1)
	produce(t, brokers, "icecdc", `{"id": "p", "type": "pause-snapshot"}`, snap("A", "shop.orders"), snap("B", "shop.orders"), snap("C", "shop.orders"))
	waitNote(t, brokers, "A", snapreq.NoticePaused)
	r.waitLog(`"msg":"signal","id":"C"`, 1)
	produce(t, brokers, "icecdc", `{"id": "stop", "type": "stop-snapshot"}`, snap("D", "shop.orders"))
	all := waitNote(t, brokers, "D", snapreq.NoticeCompleted)
	if n := count(all, "A", snapreq.NoticeAborted); n != 1 {
		t.Errorf("A aborted %d times, want 1", n)
	}
	for _, id := range []string{"B", "C"} {
		if n := count(all, id, snapreq.NoticeStarted); n != 0 {
			t.Errorf("%s, before the stop, started %d times", id, n)
		}
		if !strings.Contains(r.log.String(), `"msg":"signal: snapshot stopped before it started","id":"`+id+`"`) {
			t.Errorf("no line says %s was stopped before it started", id)
		}
	}
	waitCommitted(t, brokers, 6, "past every signal")
}
