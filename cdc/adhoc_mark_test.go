package cdc_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/state"
)

// TestSnapshotMarks: a table takes signals' requests in their topic's
// order and keeps the last one's mark in its checkpoint, through the
// read and the stream after it and across a restart: a request at or
// below the mark (read again after a crash, though another signal came
// after it) is answered as read already and reads nothing; one of
// another topic, or past the mark, is read. Serving is closed while the
// table cannot load its start (its catalog fails), Ready is not, and a
// request then waits in the table's queue until the table answers.
func TestSnapshotMarks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	src := cdctest.New(cdctest.Info("shop", "orders"))
	sink := &cdctest.Sink{}
	first := src.Append(cdctest.Inserts(1, 20)...)
	var failing atomic.Bool
	src.OnRefresh = func() error {
		if failing.Load() {
			return errors.New("catalog down")
		}
		return nil
	}
	var ns notices
	var p *cdc.Pipeline
	var store *state.Store
	start := func() (stop func()) {
		var err error
		if store, err = state.Open(path, state.Options{}); err != nil {
			t.Fatal(err)
		}
		p = &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
			Encoder: newEncoder("p"), Sink: sink, Store: store, Poll: time.Millisecond, ChunkSize: 10,
			RetryInitial: time.Millisecond, RetryMax: time.Millisecond, Notify: ns.add, Ready: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("pipeline: %v", err)
			}
			store.Close()
		}
	}
	checkpoint := func() cdc.Checkpoint {
		cp, _, err := store.Load(context.Background(), "p", "shop.orders")
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	reads := func() int {
		n := 0
		for _, id := range sink.IDs() {
			if strings.HasSuffix(id, ":r") {
				n++
			}
		}
		return n
	}
	mark := func(topic string, offset int64) *snapreq.SignalMark {
		return &snapreq.SignalMark{Topic: topic, Offset: offset, ID: "x"}
	}
	ask := func(id string, m *snapreq.SignalMark) cdc.SnapshotInfo {
		t.Helper()
		si, err := p.Snapshot(t.Context(), "shop.orders", snapreq.SnapshotRequest{ID: id, Kind: "incremental", Mark: m})
		if err != nil {
			t.Fatalf("Snapshot %s: %v", id, err)
		}
		return si
	}
	done := func(id string) func() bool {
		return func() bool { return strings.HasSuffix(strings.Join(ns.types(id), ","), snapreq.NoticeCompleted) }
	}

	stop := start()
	<-p.Ready
	waitFor(t, "the first commit delivered", func() bool { cp := checkpoint(); return cp.Done && cp.SnapshotID == first.ID })
	ask("a", mark("sig", 5))
	ask("b", mark("sig", 7))
	waitFor(t, "b completed", done("b"))
	if n := reads(); n != 40 {
		t.Fatalf("%d rows read, want 40 (a and b)", n)
	}
	// The stream after the read keeps the mark.
	second := src.Append(cdctest.Inserts(21, 21)...) // 41 rows now
	waitFor(t, "the next commit delivered", func() bool { cp := checkpoint(); return cp.Done && cp.SnapshotID == second.ID })
	if m := checkpoint().SignalMark; m == nil || m.Topic != "sig" || m.Offset != 7 {
		t.Fatalf("the checkpoint's mark is %+v, want sig@7", m)
	}
	stop()

	// A restart while the catalog fails: Serving, not Ready; a request
	// waits, and a is answered as read already once the table answers.
	failing.Store(true)
	stop = start()
	select {
	case <-p.Serving():
	case <-time.After(30 * time.Second): // a hang guard only
		t.Fatal("Serving not closed while the table fails to start")
	}
	select {
	case <-p.Ready:
		t.Fatal("Ready closed while the table fails to start")
	default:
	}
	if err := p.ControlSnapshot("shop.orders", snapreq.ResumeSnapshot); err != nil {
		t.Fatalf("a control while the table starts: %v", err)
	}
	answered := make(chan cdc.SnapshotInfo, 1)
	go func() {
		si, _ := p.Snapshot(t.Context(), "shop.orders", snapreq.SnapshotRequest{ID: "a", Kind: "incremental", Mark: mark("sig", 5)})
		answered <- si
	}()
	failing.Store(false)
	if si := <-answered; si.ID != second.ID {
		t.Errorf("a read again: %+v, want the checkpoint's snapshot %d answered", si, second.ID)
	}
	ask("b", mark("sig", 7))
	ask("between", mark("sig", 6)) // below the mark: taken before b
	ask("other-topic", mark("other", 5))
	ask("c", mark("sig", 9))
	waitFor(t, "c completed", done("c"))
	stop()
	if n := reads(); n != 40+2*41 {
		t.Errorf("%d rows read, want %d (a, b, then other-topic and c only); notices %+v", n, 40+2*41, ns.got)
	}
	for id, want := range map[string]int{"a": 1, "b": 1, "between": 0, "other-topic": 1, "c": 1} {
		if n := strings.Count(strings.Join(ns.types(id), ","), snapreq.NoticeStarted); n != want {
			t.Errorf("%s started %d times, want %d", id, n, want)
		}
	}
}

// TestPausedReadResumesWithoutCommit: a read paused in its first chunk
// on a caught-up table resumes (and a later one stops) on the signal
// alone, with no new commit to wake the table. On main the table took
// itself for synced and never looked at the read again: a resume or a
// stop waited for the table's next commit.
func TestPausedReadResumesWithoutCommit(t *testing.T) {
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src := cdctest.New(cdctest.Info("shop", "orders"))
	first := src.Append(cdctest.Inserts(1, 100)...)
	var ns notices
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Encoder: newEncoder("p"), Sink: &cdctest.Sink{}, Store: store, Poll: time.Millisecond, ChunkSize: 10,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond, Notify: ns.add, Ready: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	waitFor(t, "caught up", func() bool {
		cp, _, _ := store.Load(context.Background(), "p", "shop.orders")
		return cp.Done && cp.SnapshotID == first.ID
	})
	for _, c := range []struct {
		id      string
		control snapreq.SnapshotControl
		want    string
	}{{"r", snapreq.ResumeSnapshot, "STARTED,PAUSED,RESUMED,TABLE_SCAN_COMPLETED,COMPLETED"}, {"s", snapreq.StopSnapshot, "STARTED,PAUSED,ABORTED"}} {
		if err := p.ControlSnapshot("shop.orders", snapreq.PauseSnapshot); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Snapshot(t.Context(), "shop.orders", snapreq.SnapshotRequest{ID: c.id, Kind: "incremental"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, c.id+" paused", func() bool { return strings.Join(ns.types(c.id), ",") == "STARTED,PAUSED" })
		if err := p.ControlSnapshot("shop.orders", c.control); err != nil {
			t.Fatal(err)
		}
		waitFor(t, c.id+" ended", func() bool { return strings.Join(ns.types(c.id), ",") == c.want })
	}
}
