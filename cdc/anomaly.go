package cdc

import "log/slog"

// LogAnomalies reports a commit's lineage anomalies, one warning each.
func LogAnomalies(log *slog.Logger, c *Commit) {
	if log == nil {
		return
	}
	for _, a := range c.Anomalies {
		if a.Kind == NotPaired {
			log.Warn("deletes and inserts not paired by key: the commit is larger than max_held_rows, its events are deletes and inserts", "table", c.Table.Namespace+"."+c.Table.Name,
				"snapshot_id", c.Snapshot.ID, "sequence_number", c.Snapshot.SequenceNumber, "kind", a.Kind, "detail", a.Detail)
			continue
		}
		log.Warn("lineage anomaly: no event emitted", "table", c.Table.Namespace+"."+c.Table.Name,
			"snapshot_id", c.Snapshot.ID, "sequence_number", c.Snapshot.SequenceNumber,
			"kind", a.Kind, "file", a.File, "position", a.Position, "row_id", a.RowID)
	}
}
