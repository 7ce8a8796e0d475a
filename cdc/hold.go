package cdc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Holder is a Source that can keep its table's undelivered snapshots from
// being expired by other engines (docs/delivery.md: a retention hold, as a
// replication slot keeps WAL).
//
// Iceberg's snapshot expiry (Java's RemoveSnapshots, Spark's
// expire_snapshots, iceberg-go's ExpireSnapshots) keeps a tag's one
// snapshot but a branch's ancestors, as many as the branch's own
// min-snapshots-to-keep, whatever age or count the call asks for. A tag on
// the checkpoint would keep that snapshot and let the commits after it
// go; so the hold is a branch at the head the source last loaded, keeping
// every snapshot back to the checkpoint's.
type Holder interface {
	// Hold points the branch ref at the loaded head and sets its
	// min-snapshots-to-keep so that every snapshot from snapshot from
	// (0: every retained one) to the head is kept, replacing what the ref
	// held before. A concurrent commit makes it fail with an error
	// wrapping ErrHoldBusy; a catalog that refuses ref updates, with one
	// wrapping ErrPermanent.
	Hold(ctx context.Context, ref string, from int64) (Held, error)
	// HoldLatest is Hold at the head the catalog has now rather than the
	// loaded one; when that head is still snapshot unless it commits
	// nothing and moved is false. It leaves the loaded metadata as it is
	// and may run while another method of the source does.
	HoldLatest(ctx context.Context, ref string, from, unless int64) (held Held, moved bool, err error)
	// Release removes the ref; a table without it is left as it is.
	Release(ctx context.Context, ref string) error
}

// Held is what a hold keeps.
type Held struct {
	Head      SnapshotInfo // the ref's snapshot
	Oldest    SnapshotInfo // the oldest snapshot kept
	Snapshots int          // min-snapshots-to-keep of the ref
}

// ErrHoldBusy is a hold update that lost a race with another commit to
// the table; it is tried again at the next move.
var ErrHoldBusy = errors.New("another commit to the table came first")

// HoldRef is the name of the pipeline's retention ref on its tables.
func HoldRef(pipeline string) string { return "icecdc-" + pipeline }

// heldState is a follower's view of its table's hold.
type heldState struct {
	active   bool
	head     int64 // the ref's snapshot
	headSeq  int64 // and its sequence number
	from     int64 // the checkpoint snapshot it keeps from
	at       time.Time
	oldestMs int64 // commit time of the oldest snapshot kept
	// due is when a move the interval held back (or a busy table
	// refused) is to be tried again; zero when none waits. The table's
	// wait ends by then (idle), whether or not another commit comes.
	due time.Time
}

// hold places the table's retention hold, or moves it to the current
// checkpoint and head. It is placed at once when the follower starts and
// moved at most every Pipeline.HoldInterval after that, never per chunk:
// each move is a commit to the table.
func (f *follower) hold(ctx context.Context) error {
	if !f.spec.Hold {
		return nil
	}
	h, ok := f.spec.Source.(Holder)
	if !ok {
		return Permanent(errors.New("hold: the table's source cannot hold snapshots (a metadata file has no catalog to commit a ref to)"))
	}
	// Nothing is due unless this call holds a move back below: a move
	// that waits on a reload (the branch past the loaded head) or on a
	// loaded head must not end the table's waits early again and again.
	f.held.due = time.Time{}
	head, ok := f.spec.Source.Head()
	if !ok {
		return nil
	}
	from := f.cp.SnapshotID
	if f.held.active && f.held.head == head.ID && f.held.from == from {
		return nil
	}
	if f.held.active && time.Since(f.held.at) < f.p.HoldInterval {
		f.held.due = f.held.at.Add(f.p.HoldInterval)
		return nil
	}
	if f.held.active && head.SequenceNumber < f.held.headSeq {
		// The hold was moved past the loaded head during a sink write
		// (keepHold): never back. It moves on once the table is reloaded.
		return nil
	}
	ref := HoldRef(f.p.Name)
	got, err := h.Hold(ctx, ref, from)
	if errors.Is(err, ErrHoldBusy) {
		f.logger().Debug("retention hold not moved: another commit came first; trying again after hold_interval", "ref", ref, "err", err)
		f.held.due = time.Now().Add(f.p.HoldInterval)
		return nil
	}
	if err != nil {
		verb := "placed"
		if f.held.active {
			verb = "moved"
		}
		return fmt.Errorf("retention hold %s could not be %s: %w", ref, verb, err)
	}
	if !f.held.active {
		f.logger().Info("retention hold placed", "ref", ref, "head", got.Head.ID, "oldest_snapshot", got.Oldest.ID, "snapshots", got.Snapshots)
	}
	f.held = heldState{active: true, head: head.ID, headSeq: head.SequenceNumber, from: from, at: time.Now(), oldestMs: got.Oldest.TimestampMs}
	f.held.report(f)
	return nil
}

// keepHold moves the table's hold while a sink write is in flight, and
// returns the function that stops it (and waits for it). A sink that
// retries inside its Write (a webhook receiver or a broker that is down)
// keeps the table from loading, and so from holding, the commits made
// meanwhile: they would be kept by the table's own retention only, the
// very commits a hold is for. So every HoldInterval of a write, the hold
// moves to the head the catalog has now, from the checkpoint.
func (f *follower) keepHold(ctx context.Context) (stop func()) {
	h, ok := f.spec.Source.(Holder)
	if !f.spec.Hold || !ok || !f.held.active {
		return func() {}
	}
	ref, from, cur := HoldRef(f.p.Name), f.cp.SnapshotID, f.held
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(f.p.HoldInterval)
		defer tick.Stop()
		warned := false
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			got, moved, err := h.HoldLatest(ctx, ref, from, cur.head)
			switch {
			case err != nil && ctx.Err() == nil && !errors.Is(err, ErrHoldBusy) && !warned:
				warned = true
				f.logger().Warn("retention hold not moved during a sink write; tried again every hold_interval", "ref", ref, "err", err)
			case moved:
				f.logger().Info("retention hold moved during a sink write", "ref", ref, "head", got.Head.ID, "oldest_snapshot", got.Oldest.ID, "snapshots", got.Snapshots)
				cur = heldState{active: true, head: got.Head.ID, headSeq: got.Head.SequenceNumber, from: from, at: time.Now(), oldestMs: got.Oldest.TimestampMs}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		f.held = cur
		f.held.report(f)
	}
}

// report sets the age of the oldest held snapshot.
func (h heldState) report(f *follower) {
	if h.active && h.oldestMs > 0 {
		f.p.Metrics.HoldAge.WithLabelValues(f.spec.Name).Set(time.Since(time.UnixMilli(h.oldestMs)).Seconds())
	}
}
