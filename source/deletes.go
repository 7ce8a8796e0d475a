package source

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// deleteIndex answers "which deletes were live for data file F" for the
// rare cases a snapshot's own entries do not say: a data file removed
// without its vector, and v2 position-delete files left from before an
// upgrade to v3. Manifests and position-delete files are immutable, so
// both are cached by path for the life of the follower.
type deleteIndex struct {
	mu        sync.Mutex
	manifests map[string][]iceberg.ManifestEntry      // delete manifest → its live entries
	posFiles  map[string]map[string]*roaring64.Bitmap // position-delete file → data file → positions
}

func newDeleteIndex() *deleteIndex {
	return &deleteIndex{
		manifests: map[string][]iceberg.ManifestEntry{},
		posFiles:  map[string]map[string]*roaring64.Bitmap{},
	}
}

// liveDeletes returns the live delete entries of the manifest list list;
// the delete manifests not cached yet are read concurrently.
func (t *Table) liveDeletes(ctx context.Context, fs iceio.IO, list []iceberg.ManifestFile) ([]iceberg.ManifestEntry, error) {
	di := t.dels
	var missing []iceberg.ManifestFile
	seen := map[string]bool{}
	di.mu.Lock()
	for _, m := range list {
		if m.ManifestContent() != iceberg.ManifestContentDeletes || seen[m.FilePath()] {
			continue
		}
		seen[m.FilePath()] = true
		if _, ok := di.manifests[m.FilePath()]; !ok {
			missing = append(missing, m)
		}
	}
	di.mu.Unlock()
	reads, err := t.readManifests(ctx, missing, func(m iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error] {
		return m.Entries(fs, true)
	}, nil)
	if err != nil {
		return nil, err
	}
	for i, m := range missing {
		if err := reads[i].err; err != nil {
			return nil, decodeError("manifest", m.FilePath(), err)
		}
		for _, e := range reads[i].entries {
			if err := checkEntry(e, -1); err != nil { // delete files have no row ids
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
		}
		di.mu.Lock()
		di.manifests[m.FilePath()] = reads[i].entries
		di.mu.Unlock()
	}
	var out []iceberg.ManifestEntry
	di.mu.Lock()
	defer di.mu.Unlock()
	for _, m := range list {
		if m.ManifestContent() == iceberg.ManifestContentDeletes {
			out = append(out, di.manifests[m.FilePath()]...)
		}
	}
	return out, nil
}

// oldDeletes are the deletes of one data file live in the parent snapshot.
type oldDeletes struct {
	dv  iceberg.ManifestEntry // nil when the file had no vector
	pos *roaring64.Bitmap     // from v2 position-delete files; nil when none
}

// lookup finds, among the parent's live delete entries, the vector of each
// data file in paths and (when v2 may have left position deletes) their
// positions. Deletes apply to data files whose data sequence number is ≤
// theirs. The position-delete files are read concurrently first.
func (t *Table) lookupDeletes(ctx context.Context, fs iceio.IO, live []iceberg.ManifestEntry, files map[string]dataFileMeta, wantDV, wantPos bool) (map[string]oldDeletes, error) {
	di := t.dels
	out := map[string]oldDeletes{}
	if !wantDV && !wantPos {
		return out, nil
	}
	if wantPos {
		var pos []iceberg.DataFile
		for _, e := range live {
			if df := e.DataFile(); df.ContentType() == iceberg.EntryContentPosDeletes && !table.IsDeletionVector(df) {
				pos = append(pos, df)
			}
		}
		// Errors are met again, in order, by the loop below.
		if err := t.pool.each(ctx, len(pos), func(i int) error {
			di.readPosFile(ctx, fs, pos[i])
			return nil
		}); err != nil {
			return nil, err
		}
	}
	for _, e := range live {
		df := e.DataFile()
		if df.ContentType() != iceberg.EntryContentPosDeletes {
			continue
		}
		if table.IsDeletionVector(df) {
			if !wantDV || df.ReferencedDataFile() == nil {
				continue
			}
			p := *df.ReferencedDataFile()
			if m, ok := files[p]; ok && m.dataSeq <= e.SequenceNum() {
				od := out[p]
				od.dv = e
				out[p] = od
			}
			continue
		}
		if !wantPos {
			continue
		}
		byData, err := di.readPosFile(ctx, fs, df)
		if err != nil {
			return nil, err
		}
		for p, m := range files {
			bm, ok := byData[p]
			if !ok || m.dataSeq > e.SequenceNum() {
				continue
			}
			od := out[p]
			if od.pos == nil {
				od.pos = roaring64.New()
			}
			od.pos.Or(bm)
			out[p] = od
		}
	}
	return out, nil
}

// readPosFile reads a v2 position-delete file (file_path, pos). It is
// read with arrow-go directly: iceberg-go reads these only inside a scan.
func (di *deleteIndex) readPosFile(ctx context.Context, fs iceio.IO, df iceberg.DataFile) (_ map[string]*roaring64.Bitmap, err error) {
	di.mu.Lock()
	m, ok := di.posFiles[df.FilePath()]
	di.mu.Unlock()
	if ok {
		return m, nil
	}
	defer recoverAs(&err, "position delete file %s", df.FilePath())
	if df.FileFormat() != iceberg.ParquetFile {
		return nil, fmt.Errorf("position delete file %s: format %s not supported", df.FilePath(), df.FileFormat())
	}
	f, err := fs.Open(df.FilePath())
	if err != nil {
		return nil, fileError("open", "position delete file", df.FilePath(), err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", df.FilePath(), err)
	}
	defer pr.Close()
	ar, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", df.FilePath(), err)
	}
	tbl, err := ar.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", df.FilePath(), err)
	}
	defer tbl.Release()
	if tbl.NumRows() != df.Count() {
		return nil, fmt.Errorf("position delete file %s: manifest record_count %d disagrees with the file's %d rows", df.FilePath(), df.Count(), tbl.NumRows())
	}
	pathIdx := tbl.Schema().FieldIndices("file_path")
	posIdx := tbl.Schema().FieldIndices("pos")
	if len(pathIdx) == 0 || len(posIdx) == 0 {
		return nil, fmt.Errorf("position delete file %s: no file_path/pos columns", df.FilePath())
	}
	out := map[string]*roaring64.Bitmap{}
	paths, poss := tbl.Column(pathIdx[0]).Data().Chunks(), tbl.Column(posIdx[0]).Data().Chunks()
	for c := range paths {
		pos, ok := poss[c].(*array.Int64)
		if !ok {
			return nil, fmt.Errorf("position delete file %s: pos is %s, want int64", df.FilePath(), poss[c].DataType())
		}
		for i := 0; i < pos.Len(); i++ {
			p := stringAt(paths[c], i)
			bm := out[p]
			if bm == nil {
				bm = roaring64.New()
				out[p] = bm
			}
			bm.Add(uint64(pos.Value(i)))
		}
	}
	di.mu.Lock()
	di.posFiles[df.FilePath()] = out
	di.mu.Unlock()
	return out, nil
}

func stringAt(a interface{}, i int) string {
	switch s := a.(type) {
	case *array.String:
		return s.Value(i)
	case *array.LargeString:
		return s.Value(i)
	case *array.Binary:
		return string(s.Value(i))
	}
	return ""
}
