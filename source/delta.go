package source

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// delta is what one snapshot did itself: the entries of the manifests it
// wrote whose snapshot id is its own, in manifest order.
type delta struct {
	list []iceberg.ManifestFile // the snapshot's whole manifest list

	addedData, removedData []iceberg.ManifestEntry
	addedDVs, removedDVs   []iceberg.ManifestEntry
	addedPos, removedPos   []iceberg.ManifestEntry // v2 position-delete files
	addedEq, removedEq     []iceberg.ManifestEntry // equality-delete files
}

// readDelta reads the entries snapshot s added and removed; nextRowID
// bounds their row ids (see checkEntry). The manifests s wrote are read
// concurrently and their entries taken in manifest order.
func (t *Table) readDelta(ctx context.Context, fs iceio.IO, s *table.Snapshot, nextRowID int64) (*delta, error) {
	list, err := manifestList(fs, s)
	if err != nil {
		return nil, err
	}
	d := &delta{list: list}
	var own []iceberg.ManifestFile
	for _, m := range list {
		if m.SnapshotID() == s.SnapshotID {
			own = append(own, m)
		}
	}
	reads, err := t.readManifests(ctx, own, allEntries(fs), func(e iceberg.ManifestEntry) bool {
		return e.SnapshotID() == s.SnapshotID && e.Status() != iceberg.EntryStatusEXISTING
	})
	if err != nil {
		return nil, err
	}
	for i, m := range own {
		for _, e := range reads[i].entries {
			if err := checkEntry(e, nextRowID); err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			if err := d.add(e); err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			if e.Status() == iceberg.EntryStatusADDED && e.DataFile().ContentType() == iceberg.EntryContentData {
				t.files.remember(metaOf(e), m.FilePath())
			}
		}
		if err := reads[i].err; err != nil {
			return nil, decodeError("manifest", m.FilePath(), err)
		}
	}
	return d, nil
}

// manifestList reads snapshot s's manifest list.
func manifestList(fs iceio.IO, s *table.Snapshot) ([]iceberg.ManifestFile, error) {
	list, err := s.Manifests(fs)
	if err != nil {
		return nil, decodeError("manifest list", fmt.Sprintf("%s of snapshot %d", s.ManifestList, s.SnapshotID), err)
	}
	return list, nil
}

func (d *delta) add(e iceberg.ManifestEntry) error {
	added := e.Status() == iceberg.EntryStatusADDED
	df := e.DataFile()
	pick := func(a, r *[]iceberg.ManifestEntry) {
		if added {
			*a = append(*a, e)
		} else {
			*r = append(*r, e)
		}
	}
	switch df.ContentType() {
	case iceberg.EntryContentData:
		pick(&d.addedData, &d.removedData)
	case iceberg.EntryContentPosDeletes:
		if table.IsDeletionVector(df) {
			if df.ReferencedDataFile() == nil {
				return fmt.Errorf("deletion vector %s has no referenced_data_file", df.FilePath())
			}
			pick(&d.addedDVs, &d.removedDVs)
		} else {
			pick(&d.addedPos, &d.removedPos)
		}
	case iceberg.EntryContentEqDeletes:
		pick(&d.addedEq, &d.removedEq)
	default:
		return fmt.Errorf("file %s: unknown content type %v", df.FilePath(), df.ContentType())
	}
	return nil
}

// listPaths returns the paths of the snapshot's manifests.
func (d *delta) listPaths() []string {
	out := make([]string, len(d.list))
	for i, m := range d.list {
		out[i] = m.FilePath()
	}
	return out
}

// empty reports whether the snapshot changed no file.
func (d *delta) empty() bool {
	return len(d.addedData)+len(d.removedData)+len(d.addedDVs)+len(d.removedDVs)+
		len(d.addedPos)+len(d.removedPos)+len(d.addedEq)+len(d.removedEq) == 0
}

// dataFileMeta is what icecdc needs of a data file to read its rows with
// lineage: it is taken from a manifest entry read through the manifest
// list of the snapshot being processed (first_row_id inheritance differs
// between manifest lists).
type dataFileMeta struct {
	file       iceberg.DataFile
	firstRowID *int64
	dataSeq    int64
}

func metaOf(e iceberg.ManifestEntry) dataFileMeta {
	return dataFileMeta{file: e.DataFile(), firstRowID: e.DataFile().FirstRowID(), dataSeq: e.SequenceNum()}
}

func (m dataFileMeta) path() string { return m.file.FilePath() }
