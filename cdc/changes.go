package cdc

import (
	"context"
	"log/slog"
)

// Changes computes the commits of src's snapshots with
// fromSeq < sequence number <= toSeq (toSeq <= 0: up to the head) in
// ascending order and hands each to emit. Anomalies are logged, never
// emitted as events.
func Changes(ctx context.Context, src Source, fromSeq, toSeq int64, log *slog.Logger, emit func(*Commit) error) error {
	snaps, err := src.Snapshots(ctx, fromSeq, toSeq)
	if err != nil {
		return err
	}
	for _, s := range snaps {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, err := src.Commit(ctx, s)
		if err != nil {
			return err
		}
		LogAnomalies(log, c)
		if err := emit(c); err != nil {
			return err
		}
	}
	return nil
}

// LogAnomalies reports a commit's lineage anomalies, one warning each.
func LogAnomalies(log *slog.Logger, c *Commit) {
	if log == nil {
		return
	}
	for _, a := range c.Anomalies {
		log.Warn("lineage anomaly: no event emitted", "table", c.Table.Namespace+"."+c.Table.Name,
			"snapshot_id", c.Snapshot.ID, "sequence_number", c.Snapshot.SequenceNumber,
			"kind", a.Kind, "file", a.File, "position", a.Position, "row_id", a.RowID)
	}
}
