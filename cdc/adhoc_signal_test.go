package cdc_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/state"
)

// notices records a pipeline's snapshot notices.
type notices struct {
	mu  sync.Mutex
	got []snapreq.SnapshotNotice
}

func (n *notices) add(x snapreq.SnapshotNotice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, x)
}

// types returns the notice types of request id, in order.
func (n *notices) types(id string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, x := range n.got {
		if x.ID == id && x.Type != snapreq.NoticeInProgress {
			out = append(out, x.Type)
		}
	}
	return out
}

// rRows returns the row values of the r events of snapshot snap the sink
// got, with their event indexes.
func rRows(s *cdctest.Sink, snap int64) (ids []int64, indexes []int) {
	for _, w := range s.Batches() {
		if w.Checkpoint.SnapshotID != snap {
			continue
		}
		for i, eid := range w.IDs {
			if !strings.HasSuffix(eid, ":r") {
				continue
			}
			var id int64
			var idx int
			v := w.Values[i]
			fmt.Sscanf(v[strings.Index(v, `"id":`)+5:], "%d", &id)
			fmt.Sscanf(v[strings.Index(v, `"event_index":`)+14:], "%d", &idx)
			ids = append(ids, id)
			indexes = append(indexes, idx)
		}
	}
	return ids, indexes
}

// TestSignalSnapshot drives an on-demand snapshot as signals do: a read
// with a row filter keeps only the rows it holds for, at their own event
// indexes; a filter on an unknown column is refused and changes nothing;
// a pause holds the read and the table's stream, across a restart, until
// a resume; a stop ends the read and the stream goes on; a request read
// again under the same id is not read twice. Each step is notified.
func TestSignalSnapshot(t *testing.T) {
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src := cdctest.New(cdctest.Info("shop", "orders"))
	sink := &cdctest.Sink{}
	first := src.Append(cdctest.Inserts(1, 100)...)
	var ns notices
	var p *cdc.Pipeline
	start := func() (stop func()) {
		p = &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
			Encoder: newEncoder("p"), Sink: sink, Store: store, Poll: time.Millisecond, ChunkSize: 10,
			RetryInitial: time.Millisecond, RetryMax: time.Millisecond, Notify: ns.add, Ready: make(chan struct{}), RowFilters: rowfilter.Language{}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		<-p.Ready
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("pipeline: %v", err)
			}
		}
	}
	checkpoint := func() cdc.Checkpoint {
		cp, _, err := store.Load(context.Background(), "p", "shop.orders")
		if err != nil {
			t.Fatal(err)
		}
		return cp
	}
	caughtUp := func(snap int64) func() bool {
		return func() bool { cp := checkpoint(); return cp.Done && cp.SnapshotID == snap }
	}
	stop := start()
	waitFor(t, "the first commit delivered", caughtUp(first.ID))
	ctx := t.Context()

	// A filtered read.
	si, err := p.Snapshot(ctx, "shop.orders", snapreq.SnapshotRequest{ID: "s1", Kind: "incremental", Filter: "id > 50 AND NOT (id > 80) OR id IN (3, 7)"})
	if err != nil || si.ID != first.ID {
		t.Fatalf("Snapshot s1 = %+v, %v; want a read of snapshot %d", si, err, first.ID)
	}
	waitFor(t, "s1 completed", func() bool { return strings.HasSuffix(strings.Join(ns.types("s1"), ","), snapreq.NoticeCompleted) })
	if got := strings.Join(ns.types("s1"), ","); got != "STARTED,TABLE_SCAN_COMPLETED,COMPLETED" {
		t.Errorf("s1 notices %s", got)
	}
	ids, idx := rRows(sink, first.ID)
	if len(ids) != 32 || ids[0] != 3 || ids[1] != 7 || ids[2] != 51 || ids[31] != 80 {
		t.Fatalf("the filtered read emitted rows %v, want 3, 7 and 51..80", ids)
	}
	for i := range ids {
		if idx[i] != int(ids[i]-1) {
			t.Fatalf("row %d has event_index %d, want its place in the read, %d", ids[i], idx[i], ids[i]-1)
		}
	}

	// A filter on an unknown column: refused, nothing changes.
	before := checkpoint()
	_, err = p.Snapshot(ctx, "shop.orders", snapreq.SnapshotRequest{ID: "bad", Kind: "incremental", Filter: "price > 3"})
	if !errors.Is(err, snapreq.ErrBadSnapshotRequest) || !strings.Contains(err.Error(), `unknown column "price"`) || !strings.Contains(err.Error(), "shop.orders") {
		t.Fatalf("Snapshot with a filter on an unknown column: %v", err)
	}
	if after := checkpoint(); after != before {
		t.Fatalf("a refused request moved the checkpoint from %s to %s", before, after)
	}

	// A paused read holds the stream, across a restart.
	if err := p.ControlSnapshot("shop.orders", snapreq.PauseSnapshot); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Snapshot(ctx, "shop.orders", snapreq.SnapshotRequest{ID: "s2", Kind: "blocking"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "s2 paused", func() bool { return strings.Join(ns.types("s2"), ",") == "STARTED,PAUSED" })
	// The pause is seen: icecdc_snapshot_paused and /readyz's note.
	paused := func(want string) {
		t.Helper()
		v := testutil.ToFloat64(p.Metrics.SnapshotPaused.WithLabelValues("shop.orders"))
		notes := p.Health.PausedNotes()
		if want == "" && (v != 0 || len(notes) != 0) || want != "" && (v != 1 || len(notes) != 1 || !strings.Contains(notes[0], want) ||
			p.Health.Tables()[0].SnapshotPaused != want) {
			t.Errorf("icecdc_snapshot_paused %v, notes %q; want paused by %q", v, notes, want)
		}
	}
	paused("s2")
	second := src.Append(cdctest.Inserts(101, 5)...)
	stop()
	stop = start()
	calls := src.Calls("Refresh")
	waitFor(t, "polls after the restart", func() bool { return src.Calls("Refresh") > calls+20 })
	if cp := checkpoint(); !cp.Initial || !cp.Paused || cp.Next != 0 || cp.Signal != "s2" {
		t.Fatalf("a paused read restarted to %s (paused %v)", cp, cp.Paused)
	}
	paused("s2")
	if v := testutil.ToFloat64(p.Metrics.SnapshotsBehind.WithLabelValues("shop.orders")); v != 1 {
		t.Errorf("icecdc_snapshots_behind %v while a paused read holds a commit, want 1", v)
	}
	if ids, _ := rRows(sink, first.ID); len(ids) != 32 {
		t.Fatalf("the paused read emitted %d rows", len(ids)-32)
	}
	if err := p.ControlSnapshot("shop.orders", snapreq.ResumeSnapshot); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the commit after s2", caughtUp(second.ID))
	paused("")
	if got := strings.Join(ns.types("s2"), ","); got != "STARTED,PAUSED,RESUMED,TABLE_SCAN_COMPLETED,COMPLETED" {
		t.Errorf("s2 notices %s", got)
	}
	if ids, _ := rRows(sink, first.ID); len(ids) != 132 {
		t.Fatalf("the reads emitted %d rows, want 32 and 100", len(ids))
	}

	// A stopped read: the stream goes on after it.
	if err := p.ControlSnapshot("shop.orders", snapreq.PauseSnapshot); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Snapshot(ctx, "shop.orders", snapreq.SnapshotRequest{ID: "s3", Kind: "incremental"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "s3 paused", func() bool { return strings.Join(ns.types("s3"), ",") == "STARTED,PAUSED" })
	if err := p.ControlSnapshot("shop.orders", snapreq.StopSnapshot); err != nil {
		t.Fatal(err)
	}
	third := src.Append(cdctest.Inserts(106, 1)...)
	waitFor(t, "the commit after s3", caughtUp(third.ID))
	paused("")
	if got := strings.Join(ns.types("s3"), ","); got != "STARTED,PAUSED,ABORTED" {
		t.Errorf("s3 notices %s", got)
	}
	if ids, _ := rRows(sink, second.ID); len(ids) != 0 {
		t.Fatalf("the stopped read emitted %d rows", len(ids))
	}

	// s3 again (a signal read twice): the checkpoint names it, no read.
	if _, err := p.Snapshot(ctx, "shop.orders", snapreq.SnapshotRequest{ID: "s3", Kind: "incremental"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(ns.types("s3"), ","); got != "STARTED,PAUSED,ABORTED" {
		t.Errorf("s3 read again: notices %s", got)
	}
	if cp := checkpoint(); !cp.Done || cp.SnapshotID != third.ID {
		t.Fatalf("s3 read again moved the checkpoint to %s", cp)
	}
	stop()
}

// TestSignalStopSparesInitialRead: a stop or pause signal acts only on
// the reads signals began; the initial read of start: initial, asked
// before it starts, delivers every row.
func TestSignalStopSparesInitialRead(t *testing.T) {
	f := newFast(t)
	first := f.src.Append(cdctest.Inserts(1, 100)...)
	var p *cdc.Pipeline
	refreshes := 0
	f.src.OnRefresh = func() error {
		if refreshes++; refreshes == 2 { // the catch-up's, before the read
			p.ControlSnapshot("shop.orders", snapreq.StopSnapshot)
			p.ControlSnapshot("shop.orders", snapreq.PauseSnapshot)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard only
	defer cancel()
	p = &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: f.src, Start: cdc.Start{Kind: cdc.StartInitial}}},
		Encoder: newEncoder("p"), Sink: f.sink, Store: f.store, Poll: time.Millisecond, ChunkSize: 10,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond, Once: true}
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, _ := rRows(f.sink, first.ID); len(ids) != 100 {
		t.Fatalf("the initial read delivered %d rows, want 100", len(ids))
	}
}
