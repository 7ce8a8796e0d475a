package scenario

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// AppendAndDelete appends rows and deletes the live rows matching filter in
// ONE commit, the way a merge-on-read MERGE does it on v3: a RowDelta
// (operation "overwrite") that adds the new rows as new data file(s), which
// inherit first_row_id and lusn, and one Puffin file with one deletion vector
// per touched data file. A file that already had a vector gets a new one
// holding the old positions too, and the old vector is removed in the same
// commit (RemoveDeletes), as [Update] does. Unlike [Delete], a data file
// whose rows all match gets a vector rather than being dropped.
//
// iceberg-go has no single call that appends and deletes in one snapshot:
// tbl.Append and tbl.Delete each commit one, and a Transaction doing both
// stages two snapshots. rows or the matched set may be empty, not both.
func AppendAndDelete(ctx context.Context, tbl *table.Table, rows []map[string]any, filter iceberg.BooleanExpression) (*table.Table, error) {
	fail := func(err error) (*table.Table, error) {
		return nil, fmt.Errorf("append and delete %v where %s: %w", tbl.Identifier(), filter, err)
	}
	vd, err := deleteByVector(ctx, tbl, filter, "-delete.puffin")
	if err != nil {
		return fail(err)
	}
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
		if data, err = writeData(ctx, tbl, as, rec); err != nil {
			return fail(err)
		}
	}
	next, err := commitRowDelta(ctx, tbl, data, vd)
	if err != nil {
		return fail(err)
	}
	return checkCommitted("append and delete", tbl, next)
}
