package cdc

import "context"

// Source is one followed table.
type Source interface {
	// Info names the table and gives the schema of its events.
	Info() TableInfo
	// Refresh reloads the table's metadata so that new snapshots show.
	// changed is false when the metadata is the one the previous successful
	// Refresh loaded: then nothing else was read, and nothing changed.
	Refresh(ctx context.Context) (changed bool, err error)
	// Snapshots lists the followed branch's snapshots with
	// afterSeq < sequence number <= toSeq (toSeq <= 0: no bound), ascending.
	// It fails with an error wrapping ErrHistory when a snapshot of that
	// range was expired, and with ErrPermanent when the snapshot graph is
	// malformed (a parent cycle, sequence numbers that do not increase).
	Snapshots(ctx context.Context, afterSeq, toSeq int64) ([]SnapshotInfo, error)
	// Retained lists the branch's ancestry that the table still holds,
	// ascending; whole is false when its oldest snapshot's parent expired.
	Retained(ctx context.Context) (snaps []SnapshotInfo, whole bool, err error)
	// Commit computes the ordered events of one snapshot.
	Commit(ctx context.Context, s SnapshotInfo) (*Commit, error)
	// Head returns the branch head; ok is false for a table with no snapshot.
	Head() (s SnapshotInfo, ok bool)
	// HasSnapshot reports whether the table metadata still holds a snapshot.
	HasSnapshot(id int64) bool
	// InitialRead returns the live rows of snapshot s as OpSnapshot events,
	// in manifest order of their data file, then position.
	InitialRead(ctx context.Context, s SnapshotInfo) (*Commit, error)
	// Close releases the source's catalog and file IO; the source is not
	// used afterwards.
	Close() error
}
