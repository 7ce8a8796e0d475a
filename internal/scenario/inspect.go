package scenario

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Entry is one manifest entry written by a snapshot, flattened for tests.
type Entry struct {
	Status  iceberg.ManifestEntryStatus
	Content iceberg.ManifestEntryContent
	// Path is the file path (a Puffin file for a deletion vector).
	Path string
	// ReferencedDataFile is the data file a deletion vector applies to.
	ReferencedDataFile string
	// DV tells a deletion vector from a Parquet position-delete file.
	DV bool
	// Records is the record count (for a vector: its cardinality).
	Records int64
	// FirstRowID is the entry's first_row_id as read through the
	// snapshot's own manifest list (nil when absent).
	FirstRowID *int64
	// DataSeq is the entry's data sequence number.
	DataSeq int64
	// EqualityFieldIDs is set for equality-delete files.
	EqualityFieldIDs []int
}

// OwnEntries returns the manifest entries that snapshot snap itself added or
// deleted (entry snapshot id == snap), in manifest-list order, read through
// snap's own manifest list. It is the "what did this commit change" view
// that tests assert on.
func OwnEntries(ctx context.Context, tbl *table.Table, snap table.Snapshot) ([]Entry, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	var out []Entry
	for _, m := range mfs {
		if m.SnapshotID() != snap.SnapshotID {
			continue
		}
		for e, err := range m.Entries(fs, false) {
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			if e.SnapshotID() != snap.SnapshotID {
				continue
			}
			df := e.DataFile()
			x := Entry{
				Status:           e.Status(),
				Content:          df.ContentType(),
				Path:             df.FilePath(),
				DV:               table.IsDeletionVector(df),
				Records:          df.Count(),
				FirstRowID:       df.FirstRowID(),
				DataSeq:          e.SequenceNum(),
				EqualityFieldIDs: df.EqualityFieldIDs(),
			}
			if ref := df.ReferencedDataFile(); ref != nil {
				x.ReferencedDataFile = *ref
			}
			out = append(out, x)
		}
	}

	return out, nil
}

// LiveDeletionVectors returns, for snapshot snap, the live deletion vectors
// (ADDED or EXISTING entries) keyed by the data file they reference. A key
// that is not a live data file of snap is a dangling vector.
func LiveDeletionVectors(ctx context.Context, tbl *table.Table, snap table.Snapshot) (map[string][]string, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	out := map[string][]string{}
	for _, m := range mfs {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			df := e.DataFile()
			if ref := df.ReferencedDataFile(); table.IsDeletionVector(df) && ref != nil {
				out[*ref] = append(out[*ref], df.FilePath())
			}
		}
	}

	return out, nil
}

// LiveDataFiles returns the paths of the live data files of snapshot snap.
func LiveDataFiles(ctx context.Context, tbl *table.Table, snap table.Snapshot) (map[string]bool, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	mfs, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	out := map[string]bool{}
	for _, m := range mfs {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			out[e.DataFile().FilePath()] = true
		}
	}

	return out, nil
}
