package cdc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Holder is a Source that can keep its table's undelivered snapshots from
// being expired by other engines (DESIGN §4: a retention hold, as a
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
	from     int64 // the checkpoint snapshot it keeps from
	at       time.Time
	oldestMs int64 // commit time of the oldest snapshot kept
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
		return fmt.Errorf("%w: hold: the table's source cannot hold snapshots (a metadata file has no catalog to commit a ref to)", ErrPermanent)
	}
	head, ok := f.spec.Source.Head()
	if !ok {
		return nil
	}
	from := f.cp.SnapshotID
	if f.held.active && (f.held.head == head.ID && f.held.from == from || time.Since(f.held.at) < f.p.HoldInterval) {
		return nil
	}
	ref := HoldRef(f.p.Name)
	got, err := h.Hold(ctx, ref, from)
	if errors.Is(err, ErrHoldBusy) {
		f.log.Debug("retention hold not moved: another commit came first; trying again at the next move", "ref", ref, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("retention hold %s: %w", ref, err)
	}
	if !f.held.active {
		f.log.Info("retention hold placed", "ref", ref, "head", got.Head.ID, "oldest_snapshot", got.Oldest.ID, "snapshots", got.Snapshots)
	}
	f.held = heldState{active: true, head: head.ID, from: from, at: time.Now(), oldestMs: got.Oldest.TimestampMs}
	f.held.report(f)
	return nil
}

// report sets the age of the oldest held snapshot.
func (h heldState) report(f *follower) {
	if h.active && h.oldestMs > 0 {
		f.p.Metrics.HoldAge.WithLabelValues(f.spec.Name).Set(time.Since(time.UnixMilli(h.oldestMs)).Seconds())
	}
}
