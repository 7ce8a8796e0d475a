package scenario

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// FileFields are the numbers and the path a manifest entry records about its
// file that [RewriteEntries] can change. Pointers are nil where the entry
// has no value.
type FileFields struct {
	Path                       string
	RecordCount, FileSize      int64
	FirstRowID                 *int64
	ContentOffset, ContentSize *int64
}

// RewriteEntries rewrites in place the manifests that snapshot snap wrote,
// passing each of snap's own entries (its snapshot id) through edit. The
// manifests are written with iceberg-go's manifest writer, so they stay
// well-formed while lying about their files: for tests of corrupt or
// hostile metadata. iceberg-go's builder refuses negative record counts
// and file sizes, so those cannot be written.
func RewriteEntries(ctx context.Context, tbl *table.Table, snap table.Snapshot, edit func(df iceberg.DataFile, f *FileFields)) error {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("rewrite entries: file io %T cannot write", fs)
	}
	list, err := snap.Manifests(fs)
	if err != nil {
		return err
	}
	meta := tbl.Metadata()
	for _, m := range list {
		if m.SnapshotID() != snap.SnapshotID {
			continue
		}
		entries, err := m.FetchEntries(fs, false)
		if err != nil {
			return err
		}
		spec := meta.PartitionSpecByID(int(m.PartitionSpecID()))
		if spec == nil {
			return fmt.Errorf("manifest %s: no partition spec %d", m.FilePath(), m.PartitionSpecID())
		}
		var buf bytes.Buffer
		w, err := iceberg.NewManifestWriter(m.Version(), &buf, *spec, meta.CurrentSchema(), m.SnapshotID(),
			iceberg.WithManifestWriterContent(m.ManifestContent()))
		if err != nil {
			return err
		}
		for _, e := range entries {
			df := e.DataFile()
			if e.SnapshotID() == snap.SnapshotID {
				if df, err = editDataFile(*spec, df, edit); err != nil {
					return fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
			}
			seq, sid := e.SequenceNum(), e.SnapshotID()
			ne := iceberg.NewManifestEntry(e.Status(), &sid, &seq, e.FileSequenceNum(), df)
			switch e.Status() {
			case iceberg.EntryStatusADDED:
				err = w.Add(ne)
			case iceberg.EntryStatusDELETED:
				err = w.Delete(ne)
			default:
				err = w.Existing(ne)
			}
			if err != nil {
				return fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
		if err := wfs.WriteFile(m.FilePath(), buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// editDataFile copies df with the fields edit changed.
func editDataFile(spec iceberg.PartitionSpec, df iceberg.DataFile, edit func(iceberg.DataFile, *FileFields)) (iceberg.DataFile, error) {
	f := FileFields{Path: df.FilePath(), RecordCount: df.Count(), FileSize: df.FileSizeBytes(),
		FirstRowID: df.FirstRowID(), ContentOffset: df.ContentOffset(), ContentSize: df.ContentSizeInBytes()}
	edit(df, &f)
	b, err := iceberg.NewDataFileBuilder(spec, df.ContentType(), f.Path, df.FileFormat(), df.Partition(), nil, nil, f.RecordCount, f.FileSize)
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).LowerBoundValues(df.LowerBoundValues()).UpperBoundValues(df.UpperBoundValues())
	if v := df.SplitOffsets(); v != nil {
		b.SplitOffsets(v)
	}
	if v := df.EqualityFieldIDs(); v != nil {
		b.EqualityFieldIDs(v)
	}
	if v := df.SortOrderID(); v != nil {
		b.SortOrderID(*v)
	}
	if v := df.KeyMetadata(); v != nil {
		b.KeyMetadata(v)
	}
	if v := df.ReferencedDataFile(); v != nil {
		b.ReferencedDataFile(*v)
	}
	if f.FirstRowID != nil {
		b.FirstRowID(*f.FirstRowID)
	}
	if f.ContentOffset != nil {
		b.ContentOffset(*f.ContentOffset)
	}
	if f.ContentSize != nil {
		b.ContentSizeInBytes(*f.ContentSize)
	}
	return b.Build(), nil
}

// RewriteManifestList rewrites snapshot snap's manifest list in place with
// its first_row_id set to firstRowID: the data manifests in it, and the
// data files in them that store no first_row_id, inherit row ids from it.
// It is written with iceberg-go's manifest list writer.
func RewriteManifestList(ctx context.Context, tbl *table.Table, snap table.Snapshot, firstRowID int64) error {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("rewrite manifest list: file io %T cannot write", fs)
	}
	list, err := snap.Manifests(fs)
	if err != nil {
		return err
	}
	files := make([]iceberg.ManifestFile, len(list))
	for i, m := range list {
		// Rebuilt without first_row_id, which the writer assigns.
		files[i] = iceberg.NewManifestFile(m.Version(), m.FilePath(), m.Length(), m.PartitionSpecID(), m.SnapshotID()).
			SequenceNum(m.SequenceNum(), m.MinSequenceNum()).Content(m.ManifestContent()).
			AddedFiles(m.AddedDataFiles()).ExistingFiles(m.ExistingDataFiles()).DeletedFiles(m.DeletedDataFiles()).
			AddedRows(m.AddedRows()).ExistingRows(m.ExistingRows()).DeletedRows(m.DeletedRows()).
			Partitions(m.Partitions()).KeyMetadata(m.KeyMetadata()).Build()
	}
	var buf bytes.Buffer
	w, err := iceberg.NewManifestListWriterV3(&buf, snap.SnapshotID, snap.SequenceNumber, firstRowID, snap.ParentSnapshotID)
	if err != nil {
		return err
	}
	if err := w.AddManifests(files); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return wfs.WriteFile(snap.ManifestList, buf.Bytes())
}
