package cdc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A table with Net delivers, at each poll, the net changes (NetChanges) of
// the backlog present then: the snapshots after its checkpoint up to the
// head, cut into ranges where the schema changes and where a range would
// hold more than NetMaxRows rows. A range's net events are delivered in
// chunks like a commit's; while they are, the checkpoint names the range
// (after NetFrom, up to snapshot SnapshotID) and the net events delivered
// (Next), so a restart computes the very same range again and resumes
// after the last confirmed chunk, whatever the head did meanwhile. Once
// the range is delivered the checkpoint is its last snapshot, done.
//
// A single snapshot that alone holds more than NetMaxRows events is
// delivered as it is (its events are already one per row), streamed and
// checkpointed as without Net.

// DefaultNetMaxRows is the changed rows a net range holds at most when
// NetMaxRows is not set.
const DefaultNetMaxRows = 100_000

// catchUpNet finishes a net range a checkpoint left open, and with Net
// delivers the whole backlog; done is true when it did, false when the
// caller continues without Net.
func (f *follower) catchUpNet(ctx context.Context) (done bool, err error) {
	src := f.spec.Source
	if f.cp.Net && !f.cp.Done {
		if err := f.finishNetRange(ctx); err != nil {
			return false, err
		}
	}
	if !f.spec.Net {
		return false, nil
	}
	if !f.cp.Done && !f.cp.Initial {
		// A position inside one snapshot, left by a run without Net:
		// that snapshot is finished as it was begun.
		snaps, err := src.Snapshots(ctx, f.cp.Seq-1, f.cp.Seq)
		if err != nil {
			return false, f.historyHint(err)
		}
		if err := f.checkContinuity(snaps); err != nil {
			return false, fmt.Errorf("%w (the checkpoint was read from %s)", err, f.cpFrom)
		}
		c, err := f.commit(ctx, snaps[0])
		if err != nil {
			return false, err
		}
		if err := f.deliver(ctx, c, f.cp.Next, SnapshotNone); err != nil {
			return false, err
		}
	}
	snaps, err := src.Snapshots(ctx, f.cp.Seq, 0)
	if err != nil {
		return false, f.historyHint(err)
	}
	if err := f.checkContinuity(snaps); err != nil {
		return false, fmt.Errorf("%w (the checkpoint was read from %s)", err, f.cpFrom)
	}
	f.lag(snaps)
	limit := f.spec.NetMaxRows
	if limit <= 0 {
		limit = DefaultNetMaxRows
	}
	if err := f.hold(ctx); err != nil {
		return false, err
	}
	for first := true; len(snaps) > 0; first = false {
		if !first {
			// Between two ranges: where an on-demand snapshot's rows may
			// go, and where the hold may move.
			if err := f.serveSnapshots(ctx); err != nil {
				return false, err
			}
			if err := f.hold(ctx); err != nil {
				return false, err
			}
		}
		t0 := time.Now()
		used, err := f.netRange(ctx, snaps, limit)
		if err != nil {
			return false, err
		}
		f.p.Metrics.CommitDuration.WithLabelValues(f.spec.Name).Observe(time.Since(t0).Seconds())
		snaps = snaps[used:]
		f.lag(snaps)
	}
	if err := f.hold(ctx); err != nil {
		return false, err
	}
	f.synced = true
	return true, nil
}

// finishNetRange delivers the rest of the net range the checkpoint is
// inside of: the range is computed again from its first snapshot.
func (f *follower) finishNetRange(ctx context.Context) error {
	snaps, err := f.spec.Source.Snapshots(ctx, f.cp.NetFrom, f.cp.Seq)
	if err != nil {
		return f.historyHint(err)
	}
	if len(snaps) == 0 || snaps[len(snaps)-1].ID != f.cp.SnapshotID {
		return fmt.Errorf("%w: the net range of checkpoint %s no longer ends with snapshot %d: the table was rolled back; to follow the new head, run 'icecdc reset --table %s' and restart",
			ErrHistory, f.cp, f.cp.SnapshotID, f.spec.Name)
	}
	n, err := f.newNet()
	if err != nil {
		return err
	}
	for _, si := range snaps {
		c, err := f.commit(ctx, si)
		if err != nil {
			return err
		}
		if err := n.Add(ctx, c); err != nil {
			return Permanent(err)
		}
	}
	return f.deliverNet(ctx, n, f.cp.NetFrom, snaps[len(snaps)-1], f.cp.Next)
}

// netRange delivers the net changes of the first snapshots of snaps that
// share a schema and hold at most limit events, and returns how many it
// took. A first snapshot larger than limit is delivered alone, as it is.
func (f *follower) netRange(ctx context.Context, snaps []SnapshotInfo, limit int) (used int, err error) {
	n, err := f.newNet()
	if err != nil {
		return 0, err
	}
	for used < len(snaps) {
		si := snaps[used]
		if used > 0 && si.SchemaID != snaps[0].SchemaID {
			break
		}
		c, err := f.commit(ctx, si)
		if err != nil {
			return 0, err
		}
		if used == 0 && c.Len() > limit {
			// Too large to reduce, and one event per row already.
			return 1, f.deliver(ctx, c, 0, SnapshotNone)
		}
		if used > 0 && n.Len()+c.Len() > limit {
			break // the next range begins with it
		}
		if err := n.Add(ctx, c); err != nil {
			return 0, Permanent(err)
		}
		used++
	}
	return used, f.deliverNet(ctx, n, f.cp.Seq, snaps[used-1], 0)
}

// newNet is the reducer of a net range.
func (f *follower) newNet() (NetChanges, error) {
	if f.p.NewNet == nil {
		return nil, Permanent(errors.New("net changes, but the pipeline has no reducer (Pipeline.NewNet)"))
	}
	return f.p.NewNet(), nil
}

// commit computes one snapshot's commit and reports its anomalies.
func (f *follower) commit(ctx context.Context, si SnapshotInfo) (*Commit, error) {
	c, err := f.spec.Source.Commit(ctx, si)
	if errors.Is(err, ErrHistory) {
		return nil, fmt.Errorf("%w; to skip this snapshot, run 'icecdc reset --table %s' and restart with start: snapshot:%d", err, f.spec.Name, si.ID)
	}
	if err != nil {
		return nil, err
	}
	for _, a := range c.Anomalies {
		f.p.Metrics.Anomalies.WithLabelValues(f.spec.Name, a.Kind).Inc()
	}
	LogAnomalies(f.logger(), c)
	return c, nil
}

func (f *follower) historyHint(err error) error {
	if errors.Is(err, ErrHistory) {
		return fmt.Errorf("%w; the checkpoint is %s (in %s): to resync, run 'icecdc reset --table %s' and restart with start: latest or initial",
			err, f.cp, f.cpFrom, f.spec.Name)
	}
	return err
}

// deliverNet delivers the net events of the range after sequence number
// from up to snapshot end, skipping the first skip of them, in chunks of
// one commit each, and checkpoints after each confirmed chunk.
func (f *follower) deliverNet(ctx context.Context, n NetChanges, from int64, end SnapshotInfo, skip int) error {
	commits := n.Commits()
	total := 0
	for _, c := range commits {
		total += len(c.Events)
	}
	if skip > total {
		return Permanent(fmt.Errorf("checkpoint %s: the range has only %d net events", f.cp, total))
	}
	save := func(cp Checkpoint) error {
		// Stored even when a shutdown began: the chunk was confirmed.
		if err := f.saveCP(context.WithoutCancel(ctx), cp); err != nil {
			return err
		}
		f.cp = cp
		f.p.Metrics.CheckpointSeq.WithLabelValues(f.spec.Name).Set(float64(cp.Seq))
		return nil
	}
	uuid, epoch := f.spec.Source.Info().UUID, f.cp.Epoch
	pos := func(next int) Checkpoint {
		cp := Checkpoint{TableUUID: uuid, SnapshotID: end.ID, Seq: end.SequenceNumber, TimestampMs: end.TimestampMs, Next: next, Epoch: epoch, Signal: f.cp.Signal, SignalMark: f.cp.SignalMark}
		if next >= total {
			cp.Done = true
		} else {
			cp.Net, cp.NetFrom = true, from
		}
		return cp
	}
	g := 0 // net events before commits[k]
	for _, c := range commits {
		m := len(c.Events)
		for lo := max(skip-g, 0); lo < m; {
			hi := min(lo+f.chunkLimit(), m)
			cp := pos(g + hi)
			if err := f.write(ctx, chunk{c: c, evs: c.Events[lo:hi], lo: lo, total: m, cp: cp, marker: SnapshotNone}); err != nil {
				return err
			}
			if err := save(cp); err != nil {
				return err
			}
			lo = hi
		}
		g += m
	}
	if !f.cp.Done || f.cp.SnapshotID != end.ID {
		return save(pos(total)) // a range whose rows all cancelled out
	}
	return nil
}
