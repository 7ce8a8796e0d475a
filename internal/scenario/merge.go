package scenario

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Merge is a merge-on-read MERGE on v3 in ONE RowDelta commit (operation
// "overwrite"): the live rows matching filter are updated by fn keeping
// their _row_id, as [Update] does (reinserted with _row_id stored, the old
// positions in one deletion vector per touched file, folding its previous
// vector), and inserts are written as a new data file whose rows inherit
// their _row_id from first_row_id, as [Append]'s do. Either may be empty,
// not both.
func Merge(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, fn func(row map[string]any) map[string]any, inserts []map[string]any) (*table.Table, error) {
	fail := func(err error) (*table.Table, error) {
		return nil, fmt.Errorf("merge into %v where %s: %w", tbl.Identifier(), filter, err)
	}
	vd, err := deleteByVector(ctx, tbl, filter, "-merge-deletes.puffin")
	if err != nil {
		return fail(err)
	}
	if len(vd.rows) == 0 && len(inserts) == 0 {
		return fail(ErrNoCommit)
	}
	var data []iceberg.DataFile
	if len(vd.rows) > 0 {
		updated := make([]map[string]any, 0, len(vd.rows))
		for _, r := range vd.rows {
			nv := fn(maps.Clone(r.Values))
			if v, ok := nv[iceberg.RowIDColumnName]; nv == nil || ok && v != r.RowID {
				return fail(fmt.Errorf("fn dropped or changed the row of %s %d", iceberg.RowIDColumnName, r.RowID))
			}
			nv = maps.Clone(nv)
			nv[iceberg.RowIDColumnName] = r.RowID
			updated = append(updated, nv)
		}
		if data, err = reinsert(ctx, tbl, updated); err != nil {
			return fail(err)
		}
	}
	if len(inserts) > 0 {
		as, err := arrowSchemaFor(tbl.Schema(), false)
		if err != nil {
			return fail(err)
		}
		rec, err := buildRecord(as, inserts)
		if err != nil {
			return fail(err)
		}
		defer rec.Release()
		added, err := writeData(ctx, tbl, as, rec)
		if err != nil {
			return fail(err)
		}
		data = append(data, added...)
	}
	next, err := commitRowDelta(ctx, tbl, data, vd)
	if err != nil {
		return fail(err)
	}
	return checkCommitted("merge", tbl, next)
}
