package scenario

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// NoLineage is the RowID and LUSN of a row that has no row lineage: a row of
// a v1/v2 table, or of a file without first_row_id in a snapshot committed
// before the table was upgraded to v3.
const NoLineage int64 = -1

// ErrNoLineage is returned by [LiveRows] for a snapshot whose rows do not
// all have a row id.
var ErrNoLineage = errors.New("rows without row lineage")

// Row is one live row of a snapshot.
type Row struct {
	// RowID is the effective _row_id: the stored value, else the data
	// file's first_row_id plus the row's position; NoLineage if none.
	RowID int64
	// LUSN is the effective _last_updated_sequence_number: the stored
	// value, else the data sequence number of the file's manifest entry;
	// NoLineage when RowID is NoLineage (as the spec says, although
	// iceberg-go synthesises a value there).
	LUSN int64
	// Values holds every table column by name. Values are Go values as
	// read from Arrow: nil for null; int32, int64, float32, float64,
	// string, []byte, bool for the primitive types; arrow.Date32,
	// arrow.Timestamp (microseconds), arrow.Time64 and decimal128.Num as
	// Arrow gives them for dates, timestamps, times and decimals; for other
	// types (uuid, nested) the value of arrow-go's GetOneForMarshal.
	Values map[string]any
}

// LiveRows returns live(S) for snapshotID as the table's own reader sees it:
// a scan of that snapshot with table.WithRowLineage(), keyed by effective
// row id. The table must be v3 (it may have been upgraded); a snapshot with
// rows lacking a row id yields ErrNoLineage (use [AllRows] for those), and a
// row id seen twice is an error.
func LiveRows(ctx context.Context, tbl *table.Table, snapshotID int64) (map[int64]Row, error) {
	rows, err := AllRows(ctx, tbl, snapshotID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]Row, len(rows))
	for _, r := range rows {
		if r.RowID == NoLineage {
			return nil, fmt.Errorf("live rows of snapshot %d: %w", snapshotID, ErrNoLineage)
		}
		if prev, dup := out[r.RowID]; dup {
			return nil, fmt.Errorf("live rows of snapshot %d: row id %d twice: %v and %v", snapshotID, r.RowID, prev.Values, r.Values)
		}
		out[r.RowID] = r
	}

	return out, nil
}

// AllRows returns every live row of snapshotID in scan order. On a v3 table
// the rows carry their lineage (NoLineage where a row has none); on a v1/v2
// table every row has NoLineage.
func AllRows(ctx context.Context, tbl *table.Table, snapshotID int64) ([]Row, error) {
	opts := []table.ScanOption{table.WithSnapshotID(snapshotID)}
	if tbl.Metadata().Version() >= 3 {
		opts = append(opts, table.WithRowLineage())
	}
	scan := tbl.Scan(opts...)
	defer scan.Close()
	_, recs, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan snapshot %d of %v: %w", snapshotID, tbl.Identifier(), err)
	}
	rows, err := collectRows(recs)
	if err != nil {
		return nil, fmt.Errorf("scan snapshot %d of %v: %w", snapshotID, tbl.Identifier(), err)
	}

	return rows, nil
}

// collectRows drains recs into rows, splitting off the lineage columns.
func collectRows(recs iter.Seq2[arrow.RecordBatch, error]) ([]Row, error) {
	var out []Row
	for rec, err := range recs {
		if err != nil {
			return nil, err
		}
		sc := rec.Schema()
		var rowIDs, lusns *array.Int64
		if idx := sc.FieldIndices(iceberg.RowIDColumnName); len(idx) == 1 {
			rowIDs, _ = rec.Column(idx[0]).(*array.Int64)
		}
		if idx := sc.FieldIndices(iceberg.LastUpdatedSequenceNumberColumnName); len(idx) == 1 {
			lusns, _ = rec.Column(idx[0]).(*array.Int64)
		}
		for i := range int(rec.NumRows()) {
			r := Row{RowID: NoLineage, LUSN: NoLineage, Values: make(map[string]any, sc.NumFields())}
			if rowIDs != nil && rowIDs.IsValid(i) {
				r.RowID = rowIDs.Value(i)
				if lusns != nil && lusns.IsValid(i) {
					r.LUSN = lusns.Value(i)
				}
			}
			for c, f := range sc.Fields() {
				if f.Name == iceberg.RowIDColumnName || f.Name == iceberg.LastUpdatedSequenceNumberColumnName {
					continue
				}
				r.Values[f.Name] = valueAt(rec.Column(c), i)
			}
			out = append(out, r)
		}
		rec.Release()
	}

	return out, nil
}

// Snapshots returns the snapshots of the main branch's ancestry, oldest
// first (ascending sequence number).
func Snapshots(tbl *table.Table) []table.Snapshot {
	head := tbl.Metadata().SnapshotByName(table.MainBranch)
	if head == nil {
		return nil
	}
	var out []table.Snapshot
	for s := head; s != nil; {
		out = append(out, *s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	slices.Reverse(out)

	return out
}
