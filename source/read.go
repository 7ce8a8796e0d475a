package source

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// fileRow is one row of a data file with its effective lineage.
type fileRow struct {
	pos   int64
	rowID int64
	lusn  int64
	row   values.Row // nil unless the visitor asked for values (or img holds them)
	// img, when set, holds the row's values as row pos-base of a record
	// batch's columns (readOpts.arrow), and row is nil.
	img *cdc.ArrowRows
	at  int
}

// rowVisitor is called for every row of a file in position order. hasID is
// false for rows without lineage (a file with no first_row_id). It returns
// whether the row's values are wanted.
type rowVisitor func(pos, rowID, lusn int64, hasID bool) (want bool, err error)

// readBatchRows is the number of rows decoded per record batch.
const readBatchRows = 8192

// readOpts say which part of a file scanFile reads.
type readOpts struct {
	lay       layout
	positions *roaring64.Bitmap // nil: every row; else only row groups holding one
	narrow    bool              // only the lineage columns (and one small data column)
	fields    []string          // when set, only these columns: the others read as null
	// each, when set, receives the wanted rows a record batch at a time
	// instead of scanFile returning them: a streamed read holds one batch.
	each func([]fileRow) error
	// arrow lets the wanted rows' values stay in the record batch
	// (fileRow.img) where that is exact and the batch is dense enough:
	// for events that are encoded from there (cdc.ArrowRows).
	arrow bool
}

// scanFile reads rows of one data file, with effective _row_id and
// _last_updated_sequence_number, through iceberg-go's reader (which maps
// columns by field id, fills defaults for columns the file lacks, and keeps
// stored lineage values over inherited ones). Row groups holding none of
// o.positions are skipped. No delete is applied: the caller decides by
// position. Rows the visitor wants are returned with their values.
func (t *fileReader) scanFile(ctx context.Context, snap *table.Snapshot, sc *iceberg.Schema, m dataFileMeta, o readOpts, visit rowVisitor) ([]fileRow, error) {
	path := m.path()
	// Record batches of a bounded size keep a streamed read's memory small.
	opts := []table.ScanOption{table.WithSnapshotID(snap.SnapshotID), table.WithRowLineage(), table.WithArrowBatchSize(readBatchRows)}
	if o.narrow {
		// A projection of the lineage columns alone fails in iceberg-go:
		// one data column rides along.
		opts = append(opts, table.WithSelectedFields(narrowColumn(sc)))
	}
	if len(o.fields) > 0 {
		opts = append(opts, table.WithSelectedFields(o.fields...))
	}
	reader := t.reader
	if o.lay.plainGeo && t.geoReader != nil {
		reader = t.geoReader
	}
	scan := reader.Scan(opts...)
	spans := o.lay.spansFor(o.positions)
	if len(o.lay.rows) > 0 && len(spans) == 0 {
		return nil, nil // no row group holds a wanted position
	}
	tasks, spans := o.lay.tasks(m, spans)
	whole := len(tasks) == 1 && tasks[0].Start == 0 && tasks[0].Length == m.file.FileSizeBytes()
	var (
		out   []fileRow
		total int64
	)
	for i, task := range tasks {
		_, it, err := scan.ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			return nil, fileError("read", "data file", path, err)
		}
		pos := spans[i].pos
		for rec, err := range it {
			if err != nil {
				return nil, fileError("read", "data file", path, err)
			}
			rows, err := visitBatch(rec, sc, pos, !o.narrow, o.arrow && !o.narrow, visit)
			n := rec.NumRows()
			rec.Release() // an image in rows holds its own reference
			if err != nil {
				return nil, fmt.Errorf("read data file %s: %w", path, err)
			}
			if o.each != nil {
				if err := o.each(rows); err != nil {
					return nil, err
				}
			} else {
				out = append(out, rows...)
			}
			pos += n
			total += n
		}
		if !whole {
			var want int64
			for rg := spans[i].first; rg <= spans[i].last; rg++ {
				want += o.lay.rows[rg]
			}
			if pos-spans[i].pos != want {
				return nil, fmt.Errorf("read data file %s: row groups %d..%d gave %d rows, footer says %d", path, spans[i].first, spans[i].last, pos-spans[i].pos, want)
			}
		}
	}
	if whole && total != m.file.Count() {
		return nil, fmt.Errorf("read data file %s: %d rows, manifest says %d", path, total, m.file.Count())
	}
	return out, nil
}

// narrowColumn picks the top-level primitive column cheapest to carry
// along a lineage-only read.
func narrowColumn(sc *iceberg.Schema) string {
	best, bestSize := sc.Fields()[0].Name, 1<<30
	for _, f := range sc.Fields() {
		size := 1 << 20
		switch f.Type.(type) {
		case iceberg.BooleanType:
			size = 1
		case iceberg.Int32Type, iceberg.DateType, iceberg.Float32Type:
			size = 4
		case iceberg.Int64Type, iceberg.Float64Type, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimeType:
			size = 8
		case iceberg.PrimitiveType:
			size = 64
		}
		if size < bestSize {
			best, bestSize = f.Name, size
		}
	}
	return best
}

// visitBatch calls visit for every row of rec, numbered from base, and
// returns the rows it wants, with their values when withValues is set: as
// Rows, or, when lazy is set and that is exact, in the batch's columns
// (fileRow.img).
func visitBatch(rec arrow.RecordBatch, sc *iceberg.Schema, base int64, withValues, lazy bool, visit rowVisitor) ([]fileRow, error) {
	ids, err := int64Column(rec, iceberg.RowIDColumnName)
	if err != nil {
		return nil, err
	}
	seqs, err := int64Column(rec, iceberg.LastUpdatedSequenceNumberColumnName)
	if err != nil {
		return nil, err
	}
	fields := sc.Fields()
	cols := make([]arrow.Array, len(fields))
	for k, f := range fields {
		if idx := rec.Schema().FieldIndices(f.Name); len(idx) > 0 {
			cols[k] = rec.Column(idx[0])
		}
	}
	if withValues && lazy && columnsFit(cols, fields) {
		return visitLazy(batchColumns{rec: rec, sc: sc, cols: cols, fields: fields, ids: ids, seqs: seqs}, base, visit)
	}
	var out []fileRow
	// The rows' values are cut from blocks of a few rows each, not
	// allocated one by one; a block grows as the batch's wanted rows do, so
	// a row held from a sparse batch keeps few others' slots alive.
	var arena []any
	block := 8
	for i := 0; i < int(rec.NumRows()); i++ {
		id, lusn, want, err := visitRow(ids, seqs, base, i, visit)
		if err != nil {
			return nil, err
		}
		if !want {
			continue
		}
		if !withValues {
			out = append(out, fileRow{pos: base + int64(i), rowID: id, lusn: lusn})
			continue
		}
		if len(arena) < len(fields) {
			arena = make([]any, block*len(fields))
			block = min(block*2, 256)
		}
		row := values.Row(arena[:len(fields):len(fields)])
		arena = arena[len(fields):]
		for k, f := range fields {
			if cols[k] == nil {
				continue
			}
			v, err := valueAt(cols[k], i, f.Type)
			if err != nil {
				return nil, fmt.Errorf("column %s at position %d: %w", f.Name, base+int64(i), err)
			}
			row[k] = v
		}
		out = append(out, fileRow{pos: base + int64(i), rowID: id, lusn: lusn, row: row})
	}
	return out, nil
}

// visitRow asks visit about row i of a batch starting at position base,
// with its lineage (a row whose _row_id or lusn is null has none).
func visitRow(ids, seqs *array.Int64, base int64, i int, visit rowVisitor) (id, lusn int64, want bool, err error) {
	hasID := !ids.IsNull(i) && !seqs.IsNull(i)
	if hasID {
		id, lusn = ids.Value(i), seqs.Value(i)
	}
	want, err = visit(base+int64(i), id, lusn, hasID)
	return id, lusn, want, err
}

func int64Column(rec arrow.RecordBatch, name string) (*array.Int64, error) {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		return nil, fmt.Errorf("no %s column in scan output", name)
	}
	a, ok := rec.Column(idx[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("%s is %s, want int64", name, rec.Column(idx[0]).DataType())
	}
	return a, nil
}

// columnsFit reports whether every value of cols converts to its field's
// type (values.ArrowFits): only then may a row's values be read later, when
// it is encoded, without postponing an error the read would report.
func columnsFit(cols []arrow.Array, fields []iceberg.NestedField) bool {
	for k, c := range cols {
		if c != nil && !values.ArrowFits(c, fields[k].Type) {
			return false
		}
	}
	return true
}

// batchColumns is a record batch as visitBatch reads it: its columns by
// field of sc, and its lineage columns.
type batchColumns struct {
	rec       arrow.RecordBatch
	sc        *iceberg.Schema
	cols      []arrow.Array
	fields    []iceberg.NestedField
	ids, seqs *array.Int64
}

// visitLazy is visitBatch for columns that fit: the wanted rows keep
// their values in the batch when they are at least a quarter of it, so
// that events held a while (a held commit, a chunk in flight) pin at most
// four times their own rows; a sparser batch's rows become Rows, as
// visitBatch makes them.
func visitLazy(b batchColumns, base int64, visit rowVisitor) ([]fileRow, error) {
	rec, cols, fields, ids, seqs := b.rec, b.cols, b.fields, b.ids, b.seqs
	var out []fileRow
	n := int(rec.NumRows())
	for i := range n {
		id, lusn, want, err := visitRow(ids, seqs, base, i, visit)
		if err != nil {
			return nil, err
		}
		if want {
			out = append(out, fileRow{pos: base + int64(i), rowID: id, lusn: lusn, at: i})
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	if len(out)*4 >= n {
		// The images refer to the batch from now on: its reference is
		// never released, and the garbage collector frees the buffers
		// (the Go allocator's) once no event refers to them.
		rec.Retain()
		img := cdc.NewArrowRows(b.sc, cols)
		for k := range out {
			out[k].img = img
		}
		return out, nil
	}
	var arena []any
	block := 8
	for k := range out {
		if len(arena) < len(fields) { // as visitBatch cuts them
			arena = make([]any, block*len(fields))
			block = min(block*2, 256)
		}
		row := values.Row(arena[:len(fields):len(fields)])
		arena = arena[len(fields):]
		for c, f := range fields {
			if cols[c] == nil {
				continue
			}
			v, err := valueAt(cols[c], out[k].at, f.Type)
			if err != nil { // ruled out by columnsFit
				return nil, fmt.Errorf("column %s at position %d: %w", f.Name, out[k].pos, err)
			}
			row[c] = v
		}
		out[k].row = row
	}
	return out, nil
}
