package scenario

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// MintingUpsert writes an upsert the way writers that mint new row ids
// do (OLake's upserts, RisingWave, sinks that upsert with deletion
// vectors), in one RowDelta commit (operation "overwrite"): the live rows
// matching filter are deleted by deletion vectors (one per touched file,
// folding its previous vector, as [Update] does), and fn's new values of
// each, then inserts, are written as one new data file of fresh rows that
// store no _row_id, so they take new row ids from the file's
// first_row_id. fn returning nil drops the row (a plain delete). Nothing
// to delete and nothing to write is [ErrNoCommit].
func MintingUpsert(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, fn func(row map[string]any) map[string]any, inserts []map[string]any) (*table.Table, error) {
	fail := func(err error) (*table.Table, error) {
		return nil, fmt.Errorf("minting upsert into %v where %s: %w", tbl.Identifier(), filter, err)
	}
	vd, err := deleteByVector(ctx, tbl, filter, "-upsert-deletes.puffin")
	if err != nil {
		return fail(err)
	}
	var rows []map[string]any
	for _, r := range vd.rows {
		if nv := fn(maps.Clone(r.Values)); nv != nil {
			nv = maps.Clone(nv)
			delete(nv, iceberg.RowIDColumnName)
			rows = append(rows, nv)
		}
	}
	rows = append(rows, inserts...)
	if len(vd.rows) == 0 && len(rows) == 0 {
		return fail(ErrNoCommit)
	}
	var data []iceberg.DataFile
	if len(rows) > 0 {
		as, err := arrowSchemaFor(tbl.Schema(), false)
		if err != nil {
			return fail(err)
		}
		rec, err := buildRecord(as, rows)
		if err != nil {
			return fail(err)
		}
		defer rec.Release()
		if data, err = writeData(ctx, tbl, as, rec); err != nil {
			return fail(err)
		}
	}
	next, err := commitRowDelta(ctx, tbl, data, vd)
	if err != nil {
		return fail(err)
	}
	return checkCommitted("minting upsert", tbl, next)
}
