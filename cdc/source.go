package cdc

import "context"

// Source is one followed table.
type Source interface {
	// Info names the table and gives the schema of its events.
	Info() TableInfo
	// Refresh reloads the table's metadata so that new snapshots show.
	Refresh(ctx context.Context) error
	// Snapshots lists the followed branch's snapshots with
	// afterSeq < sequence number <= toSeq (toSeq <= 0: no bound), ascending.
	Snapshots(ctx context.Context, afterSeq, toSeq int64) ([]SnapshotInfo, error)
	// Commit computes the ordered events of one snapshot.
	Commit(ctx context.Context, s SnapshotInfo) (*Commit, error)
}
