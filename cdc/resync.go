package cdc

import (
	"context"
	"fmt"
)

// HistoryLossPolicy is what a table does when its history no longer
// continues from its checkpoint (docs/delivery.md): expired snapshots, a
// rollback, a re-created table.
type HistoryLossPolicy int

const (
	// StopOnHistoryLoss stops the table with an error saying what
	// happened and what to run (the default).
	StopOnHistoryLoss HistoryLossPolicy = iota
	// ResyncOnHistoryLoss re-emits the head's rows as 'r' events marked
	// source.resync, resumable by index as an initial read, then streams
	// on from the head.
	ResyncOnHistoryLoss
)

// ParseHistoryLossPolicy parses stop | resync (empty means stop).
func ParseHistoryLossPolicy(s string) (HistoryLossPolicy, error) {
	switch s {
	case "", "stop":
		return StopOnHistoryLoss, nil
	case "resync":
		return ResyncOnHistoryLoss, nil
	}
	return 0, fmt.Errorf("%q: want stop or resync", s)
}

// resync moves the checkpoint to a read of the branch head after cause
// (an ErrHistory) found the history from the checkpoint gone. The new
// position begins a new epoch, so it is stored even where it lies before
// the old one (a rollback). Events between the old checkpoint and the
// head are lost by definition; the read gives consumers the head's rows.
func (f *follower) resync(ctx context.Context, cause error) error {
	src := f.spec.Source
	if _, err := src.Refresh(ctx); err != nil {
		return err
	}
	info := src.Info()
	cp := Checkpoint{TableUUID: info.UUID, Done: true, Epoch: f.cp.Epoch + 1, SignalMark: f.cp.SignalMark}
	head, ok := src.Head()
	if ok {
		cp.SnapshotID, cp.Seq, cp.TimestampMs = head.ID, head.SequenceNumber, head.TimestampMs
		if head.HasLineage {
			cp.Done, cp.Initial, cp.Resync = false, true, true
		}
	}
	if err := f.saveCP(context.WithoutCancel(ctx), cp); err != nil {
		return err
	}
	f.p.Metrics.Resyncs.WithLabelValues(f.spec.Name).Inc()
	f.logger().Warn("history lost: resyncing from the branch head (on_history_loss: resync); its rows follow as 'r' events with source.resync",
		"cause", cause.Error(), "from", f.cp.String(), "to", cp.String())
	f.cp, f.cpFrom, f.synced = cp, "a resync after lost history", false
	return nil
}
