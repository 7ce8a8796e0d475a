package source

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

// fileRow is one row of a data file with its effective lineage.
type fileRow struct {
	pos   int64
	rowID int64
	lusn  int64
	row   cdc.Row // nil unless the visitor asked for values
}

// rowVisitor is called for every row of a file in position order. hasID is
// false for rows without lineage (a file with no first_row_id). It returns
// whether the row's values are wanted.
type rowVisitor func(pos, rowID, lusn int64, hasID bool) (want bool, err error)

// scanFile reads every row of one data file, with effective _row_id and
// _last_updated_sequence_number, through iceberg-go's reader (which maps
// columns by field id, fills defaults for columns the file lacks, and keeps
// stored lineage values over inherited ones). No delete is applied: the
// caller decides by position. Rows the visitor wants are returned.
func (t *Table) scanFile(ctx context.Context, snap *table.Snapshot, sc *iceberg.Schema, m dataFileMeta, visit rowVisitor) ([]fileRow, error) {
	path := m.path()
	scan := t.tbl.Scan(table.WithSnapshotID(snap.SnapshotID), table.WithRowLineage())
	seq := m.dataSeq
	task := table.FileScanTask{
		File: m.file, FirstRowID: m.firstRowID, DataSequenceNumber: &seq,
		Start: 0, Length: m.file.FileSizeBytes(),
	}
	_, it, err := scan.ReadTasks(ctx, []table.FileScanTask{task})
	if err != nil {
		return nil, fmt.Errorf("read data file %s: %w", path, err)
	}
	var (
		out []fileRow
		pos int64
	)
	for rec, err := range it {
		if err != nil {
			return nil, fmt.Errorf("read data file %s: %w", path, err)
		}
		rows, err := visitBatch(rec, sc, pos, visit)
		n := rec.NumRows()
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("read data file %s: %w", path, err)
		}
		out = append(out, rows...)
		pos += n
	}
	if pos != m.file.Count() {
		return nil, fmt.Errorf("read data file %s: %d rows, manifest says %d", path, pos, m.file.Count())
	}
	return out, nil
}

func visitBatch(rec arrow.RecordBatch, sc *iceberg.Schema, base int64, visit rowVisitor) ([]fileRow, error) {
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
	var out []fileRow
	for i := 0; i < int(rec.NumRows()); i++ {
		hasID := !ids.IsNull(i) && !seqs.IsNull(i)
		var id, lusn int64
		if hasID {
			id, lusn = ids.Value(i), seqs.Value(i)
		}
		want, err := visit(base+int64(i), id, lusn, hasID)
		if err != nil {
			return nil, err
		}
		if !want {
			continue
		}
		row := make(cdc.Row, len(fields))
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
