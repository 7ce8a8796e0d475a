package source

import (
	"context"
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

// layout is what a data file's Parquet footer says about reading it in
// parts: the row count of each row group, and whether the file stores the
// lineage columns (a file written by an append does not; compaction,
// copy-on-write and updates do).
type layout struct {
	rows                    []int64
	storesRowID, storesLUSN bool
	// allRowIDs: the file stores a non-null _row_id in every row, by its
	// row groups' statistics (false when any lacks them).
	allRowIDs bool
	// stats are the smallest and largest value of the file's top-level
	// int, long and string columns by field id, from its row groups'
	// statistics (a column without them in some row group is absent): what
	// the manifest's bounds are checked against before they prune.
	stats map[int]colStats
	// plainGeo: the file's geometry or geography columns read as plain
	// binary (see geo.go).
	plainGeo bool
}

// colStats is a column's range of values in a data file, by its Parquet
// statistics: int32 or int64 values, exactly; or strings, which a writer
// may have truncated (the range then still encloses every value).
type colStats struct {
	min, max any
	exact    bool
}

// readLayout reads the footer of a Parquet data file. iceberg-go reads
// whole files or planned splits only, so the row groups holding given
// positions are found here, with arrow-go. The footer's row count must be
// the manifest's record_count, and the file's size its
// file_size_in_bytes: record_count sizes the bitmaps of the file's
// positions and row ids, so it is trusted only once the file agrees. The
// footer is read with one ranged read of the file's tail and kept in
// footers, so that the scans of the file, and later commits, do not read
// it again (a footer found there is checked again, without a read).
func readLayout(fs iceio.IO, df iceberg.DataFile, footers *footerCache) (layout, error) {
	if df.FileFormat() != iceberg.ParquetFile {
		return layout{}, fmt.Errorf("data file %s: format %s is not supported (Parquet only)", df.FilePath(), df.FileFormat())
	}
	ft := footers.get(df.FilePath())
	if ft == nil {
		f, err := fs.Open(df.FilePath())
		if err != nil {
			return layout{}, fileError("open", "data file", df.FilePath(), err)
		}
		defer f.Close()
		size, atStart, err := fileSize(f)
		if err != nil {
			return layout{}, fileError("read", "data file", df.FilePath(), err)
		}
		if size != df.FileSizeBytes() {
			return layout{}, fmt.Errorf("data file %s: manifest file_size_in_bytes %d disagrees with the file's %d bytes", df.FilePath(), df.FileSizeBytes(), size)
		}
		if ft, err = readFooter(f, size, atStart); err != nil {
			return layout{}, fmt.Errorf("read footer of data file %s: %w", df.FilePath(), err)
		}
	} else if ft.size != df.FileSizeBytes() {
		return layout{}, fmt.Errorf("data file %s: manifest file_size_in_bytes %d disagrees with the file's %d bytes", df.FilePath(), df.FileSizeBytes(), ft.size)
	}
	pr, err := file.NewParquetReader(&footerReader{f: ft})
	if err != nil {
		return layout{}, fmt.Errorf("read footer of data file %s: %w", df.FilePath(), err)
	}
	var l layout
	var total int64
	for i := 0; i < pr.NumRowGroups(); i++ {
		n := pr.MetaData().RowGroup(i).NumRows()
		if n < 0 {
			return layout{}, fmt.Errorf("data file %s: row group %d has %d rows", df.FilePath(), i, n)
		}
		l.rows = append(l.rows, n)
		total += n
	}
	if total != df.Count() || pr.NumRows() != df.Count() {
		return layout{}, fmt.Errorf("data file %s: manifest record_count %d disagrees with the file's %d rows", df.FilePath(), df.Count(), pr.NumRows())
	}
	if l.plainGeo, err = plainGeo(pr.MetaData()); err != nil {
		return layout{}, fmt.Errorf("read footer of data file %s: %w", df.FilePath(), err)
	}
	if !ft.shredChecked.Load() {
		cols, err := shreddedVariants(pr.MetaData())
		if err != nil {
			return layout{}, fmt.Errorf("read footer of data file %s: %w", df.FilePath(), err)
		}
		if cols != nil {
			if err := checkShredded(context.Background(), fs, df.FilePath(), pr.MetaData(), cols); err != nil {
				return layout{}, err
			}
		}
		ft.shredChecked.Store(true)
	}
	sc := pr.MetaData().Schema
	for i := 0; i < sc.NumColumns(); i++ {
		switch id := sc.Column(i).SchemaNode().FieldID(); id {
		case iceberg.RowIDFieldID:
			l.storesRowID = true
			l.allRowIDs = noNulls(pr, i)
		case iceberg.LastUpdatedSequenceNumberFieldID:
			l.storesLUSN = true
		default:
			if st, ok := columnStats(pr, i); ok && sc.Column(i).ColumnPath().String() == sc.Column(i).Name() {
				if l.stats == nil {
					l.stats = map[int]colStats{}
				}
				l.stats[int(id)] = st
			}
		}
	}
	footers.put(df.FilePath(), ft)
	return l, nil
}

// noNulls reports whether column col has no null in any row group, by the
// row groups' statistics.
func noNulls(pr *file.Reader, col int) bool {
	for rg := 0; rg < pr.NumRowGroups(); rg++ {
		cc, err := pr.MetaData().RowGroup(rg).ColumnChunk(col)
		if err != nil {
			return false
		}
		st, err := cc.Statistics()
		if err != nil || st == nil || !st.HasNullCount() || st.NullCount() != 0 {
			return false
		}
	}
	return true
}

// columnStats folds the statistics of column col over the row groups;
// false when a row group holding a value of it has no minimum and maximum
// (or the column's type is not int32, int64 or a byte array).
func columnStats(pr *file.Reader, col int) (colStats, bool) {
	var out colStats
	for rg := 0; rg < pr.NumRowGroups(); rg++ {
		cc, err := pr.MetaData().RowGroup(rg).ColumnChunk(col)
		if err != nil {
			return colStats{}, false
		}
		st, err := cc.Statistics()
		if err != nil || st == nil {
			return colStats{}, false
		}
		if !st.HasMinMax() {
			if st.HasNullCount() && st.NullCount() == cc.NumValues() {
				continue // only nulls: no value to bound
			}
			return colStats{}, false
		}
		var lo, hi any
		switch st := st.(type) {
		case *metadata.Int32Statistics:
			lo, hi, out.exact = st.Min(), st.Max(), true
		case *metadata.Int64Statistics:
			lo, hi, out.exact = st.Min(), st.Max(), true
		case *metadata.ByteArrayStatistics:
			lo, hi = string(st.Min()), string(st.Max())
		default:
			return colStats{}, false
		}
		if out.min == nil || less(lo, out.min) {
			out.min = lo
		}
		if out.max == nil || less(out.max, hi) {
			out.max = hi
		}
	}
	return out, out.min != nil
}

// fileSize is the size of an open file: its Stat, or failing that the
// end its Seek finds (then the file is no longer at its start).
func fileSize(f iceio.File) (size int64, atStart bool, _ error) {
	if st, err := f.Stat(); err == nil {
		return st.Size(), true, nil
	}
	size, err := f.Seek(0, io.SeekEnd)
	return size, false, err
}

// span is a run of row groups [first, last] and the file position of its
// first row.
type span struct {
	first, last int
	pos         int64
}

// spansFor returns the runs of row groups that hold any of positions
// (nil: all of them, one span).
func (l layout) spansFor(positions *roaring64.Bitmap) []span {
	var out []span
	var pos int64
	for rg, n := range l.rows {
		want := positions == nil || n > 0 && rangeHasAny(positions, uint64(pos), uint64(pos+n))
		if want {
			if k := len(out) - 1; k >= 0 && out[k].last == rg-1 {
				out[k].last = rg
			} else {
				out = append(out, span{first: rg, last: rg, pos: pos})
			}
		}
		pos += n
	}
	return out
}

func rangeHasAny(b *roaring64.Bitmap, lo, hi uint64) bool {
	it := b.Iterator()
	it.AdvanceIfNeeded(lo)
	return it.HasNext() && it.PeekNext() < hi
}

// rowGroupFile presents a data file with one split offset per row group,
// numbered 0, 1, 2 …, so that a scan task with Start=a and Length=b-a
// reads exactly row groups a..b-1: iceberg-go selects the row groups
// whose split offset falls in [Start, Start+Length).
type rowGroupFile struct {
	iceberg.DataFile
	offsets []int64
}

func (f rowGroupFile) SplitOffsets() []int64 { return f.offsets }

// tasks builds the scan tasks reading the spans of a file, and the spans
// they read (the whole file is one span from position 0).
func (l layout) tasks(m dataFileMeta, spans []span) ([]table.FileScanTask, []span) {
	seq := m.dataSeq
	whole := len(spans) == 1 && spans[0].first == 0 && spans[0].last == len(l.rows)-1
	if whole || len(l.rows) == 0 || int64(len(l.rows)) >= m.file.FileSizeBytes() {
		all := span{first: 0, last: len(l.rows) - 1}
		return []table.FileScanTask{{File: m.file, FirstRowID: m.firstRowID, DataSequenceNumber: &seq, Length: m.file.FileSizeBytes()}}, []span{all}
	}
	offsets := make([]int64, len(l.rows))
	for i := range offsets {
		offsets[i] = int64(i)
	}
	f := rowGroupFile{DataFile: m.file, offsets: offsets}
	out := make([]table.FileScanTask, 0, len(spans))
	for _, s := range spans {
		out = append(out, table.FileScanTask{File: f, FirstRowID: m.firstRowID, DataSequenceNumber: &seq,
			Start: int64(s.first), Length: int64(s.last - s.first + 1)})
	}
	return out, spans
}

// liveRows are the rows of a data file streamLive yields: m's rows at the
// positions in live, read at snap with sc, as events of kind op; check,
// when set, vets each row first.
type liveRows struct {
	snap  *table.Snapshot
	sc    *iceberg.Schema
	m     dataFileMeta
	lay   layout
	live  *roaring64.Bitmap
	op    cdc.Op
	check func(fileRow) error
}

// streamLive reads the rows of lr from the skip-th of them on, and yields
// them as events, a record batch at a time, numbered from index. It
// returns the index after the last. Row groups before the first wanted
// row are not read.
func (t *fileReader) streamLive(ctx context.Context, lr liveRows, skip, index int, yield func([]cdc.Event) error) (int, error) {
	m, live, op, check := lr.m, lr.live, lr.op, lr.check
	if skip > 0 {
		pos, err := live.Select(uint64(skip))
		if err != nil {
			return index, fmt.Errorf("data file %s: live row %d: %w", m.path(), skip, err)
		}
		live = live.Clone()
		live.RemoveRange(0, pos)
	}
	next := index
	_, err := t.scanFile(ctx, lr.snap, lr.sc, m, readOpts{lay: lr.lay, positions: live, arrow: true, each: func(rows []fileRow) error {
		if len(rows) == 0 {
			return nil
		}
		evs := make([]cdc.Event, len(rows))
		for k, fr := range rows {
			if check != nil {
				if err := check(fr); err != nil {
					return err
				}
			}
			evs[k] = cdc.Event{Op: op, RowID: fr.rowID, LUSN: fr.lusn, After: fr.row, AfterArrow: fr.img, AfterPos: fr.at, Index: next + k}
		}
		next += len(evs)
		return yield(evs)
	}}, func(pos, _, _ int64, hasID bool) (bool, error) {
		if !hasID && live.Contains(uint64(pos)) {
			return false, fmt.Errorf("row at position %d has no row id", pos)
		}
		return live.Contains(uint64(pos)), nil
	})
	return next, err
}
