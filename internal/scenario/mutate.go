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

// ErrNoCommit is returned by a mutation that ended without making a
// snapshot (for example a delete whose filter matched no data file).
var ErrNoCommit = errors.New("no snapshot committed")

// checkCommitted returns after, or ErrNoCommit if it has the same current
// snapshot as before.
func checkCommitted(op string, before, after *table.Table) (*table.Table, error) {
	b, a := before.CurrentSnapshot(), after.CurrentSnapshot()
	if a == nil || (b != nil && a.SnapshotID == b.SnapshotID) {
		return nil, fmt.Errorf("%s %v: %w", op, before.Identifier(), ErrNoCommit)
	}

	return after, nil
}

// Append writes rows (column name -> Go value, see [appendValue] for the
// accepted types) with tbl.Append: one fast-append commit, operation
// "append", one new data file (one per partition on a partitioned table) in
// one new manifest. New rows have null _row_id and lusn in the file and
// inherit them from first_row_id and the data sequence number.
func Append(ctx context.Context, tbl *table.Table, rows []map[string]any) (*table.Table, error) {
	as, err := arrowSchemaFor(tbl.Schema(), false)
	if err != nil {
		return nil, err
	}
	rec, err := buildRecord(as, rows)
	if err != nil {
		return nil, fmt.Errorf("append %v: %w", tbl.Identifier(), err)
	}
	defer rec.Release()
	rdr, err := array.NewRecordReader(as, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	next, err := tbl.Append(ctx, rdr, nil)
	if err != nil {
		return nil, fmt.Errorf("append %v: %w", tbl.Identifier(), err)
	}

	return checkCommitted("append", tbl, next)
}

// AppendFiles writes each element of files as its own data file(s) with
// table.WriteRecords and commits them all in ONE snapshot through a
// data-only RowDelta (operation "append"; the files inherit first_row_id in
// the order given). Transaction.AddDataFiles cannot be used for this on v3:
// it rejects data files without an explicit first_row_id.
func AppendFiles(ctx context.Context, tbl *table.Table, files [][]map[string]any) (*table.Table, error) {
	as, err := arrowSchemaFor(tbl.Schema(), false)
	if err != nil {
		return nil, err
	}
	var dfs []iceberg.DataFile
	for i, rows := range files {
		rec, err := buildRecord(as, rows)
		if err != nil {
			return nil, fmt.Errorf("append files %v: file %d: %w", tbl.Identifier(), i, err)
		}
		written, err := writeData(ctx, tbl, as, rec)
		if err != nil {
			return nil, fmt.Errorf("append files %v: file %d: %w", tbl.Identifier(), i, err)
		}
		dfs = append(dfs, written...)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddRows(dfs...).Commit(ctx); err != nil {
		return nil, fmt.Errorf("append files %v: %w", tbl.Identifier(), err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("append files %v: %w", tbl.Identifier(), err)
	}

	return checkCommitted("append files", tbl, next)
}

// writeData writes one record batch (ownership passes to the writer) as
// data files of tbl without committing them.
func writeData(ctx context.Context, tbl *table.Table, as *arrow.Schema, rec arrow.RecordBatch, opts ...table.WriteRecordOption) ([]iceberg.DataFile, error) {
	var out []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, as, single(rec), opts...) {
		if err != nil {
			return nil, err
		}
		out = append(out, df)
	}

	return out, nil
}

func single(rec arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		yield(rec, nil)
	}
}

// Delete runs iceberg-go's merge-on-read delete (tbl.Delete on a table with
// write.delete.mode=merge-on-read): one commit, operation "delete".
//
// On v3 it writes one Puffin file holding one deletion vector per partially
// matched data file; a file that already had a vector gets a new one that
// includes the old positions, and the old vector's entry is marked DELETED in
// the same commit. A data file that the column statistics prove to match
// entirely is removed (DELETED data-file entry) instead of getting a vector.
//
// On v2 the same call writes Parquet position-delete files (one per data
// file touched), which is how v2 position deletes are made here.
//
// Known iceberg-go deviations, asserted in the tests rather than avoided:
//   - when a removed data file had a deletion vector, the vector is not
//     removed: it stays live, referencing a data file no longer in the table;
//   - on a table upgraded from v2, the new vector does not fold in the
//     file's v2 position deletes.
func Delete(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression) (*table.Table, error) {
	next, err := tbl.Delete(ctx, filter, nil)
	if err != nil {
		return nil, fmt.Errorf("delete %v where %s: %w", tbl.Identifier(), filter, err)
	}

	return checkCommitted("delete", tbl, next)
}

// OverwriteCoW runs iceberg-go's copy-on-write overwrite (tbl.Overwrite with
// a filter): data files whose statistics prove every row matches are
// removed, partially matching files are rewritten without the matching rows
// (the survivors keep their _row_id and lusn, stored explicitly in the new
// file), and newRows (may be empty) are written as a new data file. One
// commit, operation "overwrite".
//
// Pitfall: iceberg-go rewrites a file without applying its deletion vector
// (or v2 position deletes), so rows deleted earlier come back, and the old
// vector is left live, dangling. Only use this on files without deletes.
func OverwriteCoW(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, newRows []map[string]any) (*table.Table, error) {
	as, err := arrowSchemaFor(tbl.Schema(), false)
	if err != nil {
		return nil, err
	}
	// An empty batch would make iceberg-go write a data file with 0 rows;
	// no batch at all writes none.
	var recs []arrow.RecordBatch
	if len(newRows) > 0 {
		rec, err := buildRecord(as, newRows)
		if err != nil {
			return nil, fmt.Errorf("overwrite %v: %w", tbl.Identifier(), err)
		}
		defer rec.Release()
		recs = append(recs, rec)
	}
	rdr, err := array.NewRecordReader(as, recs)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	next, err := tbl.Overwrite(ctx, rdr, nil, table.WithOverwriteFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("overwrite %v where %s: %w", tbl.Identifier(), filter, err)
	}

	return checkCommitted("overwrite", tbl, next)
}

// DeleteCoW runs iceberg-go's copy-on-write delete: in one transaction it
// sets write.delete.mode=copy-on-write, calls Delete and restores the
// previous mode, so the commit is one snapshot with operation "delete" that
// removes matching files and rewrites partially matching ones (survivors
// keep _row_id and lusn). The same pitfall as [OverwriteCoW] applies: use it
// only on files without deletes.
func DeleteCoW(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression) (*table.Table, error) {
	prev, had := tbl.Properties()[table.WriteDeleteModeKey]
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: table.WriteModeCopyOnWrite}); err != nil {
		return nil, err
	}
	if err := tx.Delete(ctx, filter, nil); err != nil {
		return nil, fmt.Errorf("delete (copy-on-write) %v where %s: %w", tbl.Identifier(), filter, err)
	}
	var err error
	if had {
		err = tx.SetProperties(iceberg.Properties{table.WriteDeleteModeKey: prev})
	} else {
		err = tx.RemoveProperties([]string{table.WriteDeleteModeKey})
	}
	if err != nil {
		return nil, err
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("delete (copy-on-write) %v: %w", tbl.Identifier(), err)
	}

	return checkCommitted("delete (copy-on-write)", tbl, next)
}

// Compact rewrites all live data files of each partition into one file with
// RewriteDataFiles (one group per partition): one commit, operation
// "replace". The old data files and their deletion vectors / position
// deletes are marked DELETED; the new files store both lineage columns
// explicitly (ids in input order, not position order) and get the rewrite
// snapshot's sequence number as their data sequence number. A group mixing
// files with and without first_row_id (right after an upgrade from v2)
// loses lineage: iceberg-go then writes no _row_id.
func Compact(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("compact %v: plan: %w", tbl.Identifier(), err)
	}
	var keys []string
	groups := map[string]*table.CompactionTaskGroup{}
	for _, t := range tasks {
		key := fmt.Sprintf("%d/%v", t.File.SpecID(), t.File.Partition())
		g, ok := groups[key]
		if !ok {
			g = &table.CompactionTaskGroup{PartitionKey: key}
			groups[key] = g
			keys = append(keys, key)
		}
		g.Tasks = append(g.Tasks, t)
		g.TotalSizeBytes += t.File.FileSizeBytes()
	}
	slices.Sort(keys)
	list := make([]table.CompactionTaskGroup, 0, len(keys))
	for _, k := range keys {
		list = append(list, *groups[k])
	}
	res, err := tbl.RewriteDataFiles(ctx, list, table.RewriteDataFilesOptions{})
	if err != nil {
		return nil, fmt.Errorf("compact %v: %w", tbl.Identifier(), err)
	}
	if res.Table == nil {
		return nil, fmt.Errorf("compact %v: %w", tbl.Identifier(), ErrNoCommit)
	}

	return checkCommitted("compact", tbl, res.Table)
}

// UpgradeToV3 upgrades a v2 table to format version 3. It makes no snapshot;
// the next commit assigns first_row_id to the pre-upgrade files.
func UpgradeToV3(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	tx := tbl.NewTransaction()
	if err := tx.UpgradeFormatVersion(3); err != nil {
		return nil, fmt.Errorf("upgrade %v: %w", tbl.Identifier(), err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("upgrade %v: %w", tbl.Identifier(), err)
	}

	return next, nil
}
