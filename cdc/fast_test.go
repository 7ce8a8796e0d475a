package cdc_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/state"
)

// The fast rung: the pipeline against cdctest's scripted source, a
// recording sink and a real state store. The real-table tests
// (pipeline_test.go, continuity_test.go) stay as the scenario rung.

type fast struct {
	t     *testing.T
	src   *cdctest.Source
	sink  *cdctest.Sink
	store *state.Store
	chunk int
	once  bool
	enc   cdc.Encoder
}

func newFast(t *testing.T) *fast {
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &fast{t: t, src: cdctest.New(cdctest.Info("shop", "orders")), sink: &cdctest.Sink{}, store: store, once: true}
}

// run runs the pipeline (Once unless f.once is false) and returns its error.
func (f *fast) run(start string) error {
	f.t.Helper()
	st, err := cdc.ParseStart(start)
	if err != nil {
		f.t.Fatal(err)
	}
	enc := f.enc
	if enc == nil {
		enc = newEncoder("p")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard only
	defer cancel()
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: f.src, Start: st}},
		Encoder: enc, Sink: f.sink, Store: f.store, Poll: time.Millisecond, ChunkSize: f.chunk,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond, Once: f.once}
	return p.Run(ctx)
}

// begin commits a first snapshot and runs the pipeline from latest, so
// that the table's checkpoint stands at it and the next commits are new.
func (f *fast) begin() {
	f.t.Helper()
	f.src.Append(cdctest.Inserts(1, 1)...)
	if err := f.run("latest"); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fast) checkpoint() cdc.Checkpoint {
	f.t.Helper()
	cp, _, err := f.store.Load(context.Background(), "p", "shop.orders")
	if err != nil {
		f.t.Fatal(err)
	}
	return cp
}

// wantIDs is the event ids of snapshots' events, in order.
func wantIDs(info cdc.TableInfo, snaps []cdc.SnapshotInfo, evs [][]cdc.Event) []string {
	var ids []string
	for i, si := range snaps {
		for _, e := range evs[i] {
			ids = append(ids, cdc.EventID(info.UUID, si.SequenceNumber, e.RowID, e.Op))
		}
	}
	return ids
}

// TestFastChunks checks that a commit is cut into ChunkSize batches, each
// with the checkpoint of its last event, the last one Done.
func TestFastChunks(t *testing.T) {
	f := newFast(t)
	f.chunk = 2
	f.begin()
	evs := cdctest.Inserts(10, 5)
	si := f.src.Append(evs...)
	if err := f.run("latest"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range f.sink.Batches() {
		got = append(got, fmt.Sprintf("%d:%d:%v", len(b.IDs), b.Checkpoint.Next, b.Checkpoint.Done))
	}
	if want := []string{"2:2:false", "2:4:false", "1:5:true"}; !slices.Equal(got, want) {
		t.Fatalf("batches (events:next:done) %v, want %v", got, want)
	}
	if ids := f.sink.IDs(); !slices.Equal(ids, wantIDs(f.src.Table, []cdc.SnapshotInfo{si}, [][]cdc.Event{evs})) {
		t.Fatalf("delivered %v", ids)
	}
	if cp := f.checkpoint(); cp.SnapshotID != si.ID || !cp.Done {
		t.Fatalf("checkpoint %s, want snapshot %d done", cp, si.ID)
	}
}

// TestFastRetry checks that a failed Write is retried from the
// checkpoint, that the checkpoint never moves past what the sink
// confirmed, and that nothing is lost or delivered twice.
func TestFastRetry(t *testing.T) {
	f := newFast(t)
	f.chunk = 2
	f.begin()
	e1, e2 := cdctest.Inserts(10, 3), cdctest.Inserts(20, 4)
	s1, s2 := f.src.Append(e1...), f.src.Append(e2...)
	var moved []string
	f.sink.Fail = func(n int, b *cdc.Batch) error {
		// The stored checkpoint is the one of the last confirmed batch.
		if bs := f.sink.Batches(); len(bs) > 0 {
			if cp := f.checkpoint(); cp != bs[len(bs)-1].Checkpoint {
				moved = append(moved, fmt.Sprintf("write %d: stored %s, last confirmed %s", n, cp, bs[len(bs)-1].Checkpoint))
			}
		}
		if n == 3 || n == 4 {
			return errors.New("the destination is away for a moment")
		}
		return nil
	}
	if err := f.run("latest"); err != nil {
		t.Fatal(err)
	}
	if len(moved) > 0 {
		t.Fatalf("the checkpoint moved before the sink confirmed: %v", moved)
	}
	want := wantIDs(f.src.Table, []cdc.SnapshotInfo{s1, s2}, [][]cdc.Event{e1, e2})
	if ids := f.sink.IDs(); !slices.Equal(ids, want) {
		t.Fatalf("delivered %v, want each event once, in order: %v", ids, want)
	}
	if f.sink.Writes() != len(f.sink.Batches())+2 {
		t.Fatalf("%d writes for %d batches, want the two failed ones retried", f.sink.Writes(), len(f.sink.Batches()))
	}
}

// TestFastSourceRetry checks that a commit the source fails to compute
// twice is delivered once when it succeeds.
func TestFastSourceRetry(t *testing.T) {
	f := newFast(t)
	f.begin()
	evs := cdctest.Inserts(10, 3)
	si := f.src.Append(evs...)
	fails := 2
	f.src.OnCommit = func(cdc.SnapshotInfo) error {
		if fails > 0 {
			fails--
			return errors.New("table shop.orders: read manifest list: connection reset")
		}
		return nil
	}
	if err := f.run("latest"); err != nil {
		t.Fatal(err)
	}
	if ids := f.sink.IDs(); !slices.Equal(ids, wantIDs(f.src.Table, []cdc.SnapshotInfo{si}, [][]cdc.Event{evs})) {
		t.Fatalf("delivered %v", ids)
	}
	if n := f.src.Calls("Commit"); n != 3 {
		t.Fatalf("%d Commit calls, want 3 (two failed)", n)
	}
}

// TestFastResumeAtEventIndex checks that a run stopped inside a snapshot
// resumes at the event after the last confirmed one.
func TestFastResumeAtEventIndex(t *testing.T) {
	f := newFast(t)
	f.chunk = 2
	f.begin()
	evs := cdctest.Inserts(10, 5)
	si := f.src.Append(evs...)
	f.sink.Fail = func(n int, b *cdc.Batch) error {
		if n == 2 {
			return cdc.Permanent(errors.New("stop here"))
		}
		return nil
	}
	if err := f.run("latest"); !cdc.IsPermanent(err) {
		t.Fatalf("first run: %v, want the permanent stop", err)
	}
	if cp := f.checkpoint(); cp.SnapshotID != si.ID || cp.Next != 2 || cp.Done {
		t.Fatalf("checkpoint after the first batch: %s, want snapshot %d next 2", cp, si.ID)
	}
	f.sink.Fail = nil
	if err := f.run("latest"); err != nil {
		t.Fatal(err)
	}
	want := wantIDs(f.src.Table, []cdc.SnapshotInfo{si}, [][]cdc.Event{evs})
	if ids := f.sink.IDs(); !slices.Equal(ids, want) {
		t.Fatalf("delivered %v, want %v", ids, want)
	}
}

// TestFastHistoryLoss checks that a table whose unread snapshots were
// expired stops with ErrHistory, naming the reset, and delivers nothing
// after the gap.
func TestFastHistoryLoss(t *testing.T) {
	f := newFast(t)
	f.begin()
	a := f.src.Append(cdctest.Inserts(10, 1)...)
	b := f.src.Append(cdctest.Inserts(20, 1)...)
	f.src.Append(cdctest.Inserts(30, 1)...)
	f.src.Expire(a.ID, b.ID)
	err := f.run("latest")
	if !errors.Is(err, cdc.ErrHistory) || !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), "icecdc reset --table shop.orders") {
		t.Fatalf("run after the expiry: %v, want ErrHistory naming the reset", err)
	}
	if n := len(f.sink.IDs()); n != 0 {
		t.Fatalf("%d events delivered past the gap", n)
	}
}

// TestFastContinuity checks that a branch rolled back behind the
// checkpoint stops the table instead of delivering the older head.
func TestFastContinuity(t *testing.T) {
	f := newFast(t)
	f.src.Append(cdctest.Inserts(1, 1)...)
	f.src.Append(cdctest.Inserts(10, 1)...)
	last := f.src.Append(cdctest.Inserts(20, 1)...)
	if err := f.run("earliest"); err != nil {
		t.Fatal(err)
	}
	before := len(f.sink.IDs())
	f.src.Expire(last.ID)
	err := f.run("earliest")
	if !errors.Is(err, cdc.ErrHistory) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("run after the rollback: %v, want ErrHistory saying the table was rolled back", err)
	}
	if n := len(f.sink.IDs()); n != before {
		t.Fatalf("%d events delivered after the rollback", n-before)
	}
}

// badEncoder fails every event's value, naming the event as encoders do.
type badEncoder struct{}

func (badEncoder) AppendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	return dst, nil
}

func (badEncoder) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	return dst, fmt.Errorf("encode event %s: field id: not a long", cdc.EventID(c.Table.UUID, c.Snapshot.SequenceNumber, e.RowID, e.Op))
}

// TestErrorPrefixesOnce checks that each layer names its object once:
// the table, the snapshot, the event.
func TestErrorPrefixesOnce(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(f *fast)
		prefixes []string
	}{{
		name: "load",
		setup: func(f *fast) {
			f.src.OnRefresh = func() error {
				// A source names its table with a TableError.
				return &cdc.TableError{Table: "shop.orders", Err: errors.New("load metadata s3://wh/shop/orders/metadata/00002.metadata.json: access denied")}
			}
		},
		prefixes: []string{"table shop.orders:", "load metadata"},
	}, {
		name: "snapshot",
		setup: func(f *fast) {
			f.src.OnCommit = func(si cdc.SnapshotInfo) error {
				return cdc.Permanent(&cdc.TableError{Table: "shop.orders", Err: fmt.Errorf("snapshot %d: its manifest list is not Avro", si.ID)})
			}
		},
		prefixes: []string{"table shop.orders:", "snapshot "},
	}, {
		name: "named in its text",
		setup: func(f *fast) {
			f.src.OnRefresh = func() error {
				return cdc.Permanent(cdc.NamedIn("shop.orders", errors.New("table shop.orders does not exist in sql catalog; did you mean shop.order?")))
			}
		},
		prefixes: []string{"shop.orders ", "does not exist"},
	}, {
		name:     "encoder",
		setup:    func(f *fast) { f.enc = badEncoder{} },
		prefixes: []string{"table shop.orders:", "encode event"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFast(t)
			f.begin()
			f.src.Append(cdctest.Inserts(10, 2)...)
			c.setup(f)
			err := f.run("latest")
			if err == nil {
				t.Fatal("the run succeeded")
			}
			msg := err.Error()
			for _, p := range c.prefixes {
				if n := strings.Count(msg, p); n != 1 {
					t.Errorf("%q appears %d times in %q, want once", p, n, msg)
				}
			}
			if strings.Contains(msg, cdc.ErrPermanent.Error()) {
				t.Errorf("%q carries the permanence marker's text", msg)
			}
		})
	}
}

// TestFastEncoderErrorReturns checks that an encoder failing on the first
// event of a commit stops the table with its error: deliver's sender used
// to read its channel after deliver had cleared it, when it started late,
// and then waited for ever.
func TestFastEncoderErrorReturns(t *testing.T) {
	for i := range 30 {
		f := newFast(t)
		f.begin()
		f.src.Append(cdctest.Inserts(10, 1)...)
		f.enc = badEncoder{}
		done := make(chan error, 1)
		go func() { done <- f.run("latest") }()
		select {
		case err := <-done:
			if !cdc.IsPermanent(err) || !strings.Contains(err.Error(), "not a long") {
				t.Fatalf("run %d: %v, want the encoder's permanent error", i, err)
			}
		case <-time.After(20 * time.Second): // a hang guard only
			t.Fatalf("run %d: the pipeline did not return after the encoder failed", i)
		}
	}
}

// flakyEncoder fails the first values it encodes with an error marked
// cdc.Retry (a schema registry away for a moment), then encodes as enc.
type flakyEncoder struct {
	cdc.Encoder
	failures int
}

func (f *flakyEncoder) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	if f.failures > 0 {
		f.failures--
		return dst, fmt.Errorf("encode event %s: %w", cdc.EventID(c.Table.UUID, c.Snapshot.SequenceNumber, e.RowID, e.Op),
			cdc.Retry(errors.New("schema registry http://registry:8081: HTTP 503")))
	}
	return f.Encoder.AppendValue(dst, c, e, tsMs)
}

// TestFastEncoderRetry: an encoder's error marked cdc.Retry is retried
// from the checkpoint, as a sink's transient error is, and every event is
// delivered once, in order; without the mark the table stops.
func TestFastEncoderRetry(t *testing.T) {
	f := newFast(t)
	f.chunk = 2
	f.begin()
	evs := cdctest.Inserts(10, 5)
	si := f.src.Append(evs...)
	f.enc = &flakyEncoder{Encoder: newEncoder("p"), failures: 2}
	if err := f.run("latest"); err != nil {
		t.Fatalf("run: %v, want the encoder's retried errors to pass", err)
	}
	if ids := f.sink.IDs(); !slices.Equal(ids, wantIDs(f.src.Table, []cdc.SnapshotInfo{si}, [][]cdc.Event{evs})) {
		t.Fatalf("delivered %v, want each event once, in order", ids)
	}
	if cp := f.checkpoint(); cp.SnapshotID != si.ID || !cp.Done {
		t.Fatalf("checkpoint %s, want snapshot %d done", cp, si.ID)
	}
}
