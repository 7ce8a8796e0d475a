package scenario

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"
)

// bulkBatch is the number of rows the bulk helpers generate at a time.
const bulkBatch = 1 << 16

// orderBatches yields the orders rows [from, to) of the bulk tables (order
// i: customer "c<i%100>", the given status, amount i/4), a record batch of
// schema as at a time; with withRowID, _row_id = firstRowID + i - from.
func orderBatches(as *arrow.Schema, from, to int64, status string, firstRowID int64, withRowID bool) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		defer b.Release()
		for lo := from; lo < to; lo += bulkBatch {
			hi := min(lo+bulkBatch, to)
			for i := lo; i < hi; i++ {
				b.Field(0).(*array.Int64Builder).Append(i)
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("c", i%100))
				b.Field(2).(*array.StringBuilder).Append(status)
				b.Field(3).(*array.Float64Builder).Append(float64(i) / 4)
				if withRowID {
					b.Field(4).(*array.Int64Builder).Append(firstRowID + i - from)
				}
			}
			if !yield(b.NewRecordBatch(), nil) {
				return
			}
		}
	}
}

// BulkAppend appends orders 0..n-1 (see orderBatches) to a table of
// [OrdersSchema] in one commit, generating them a batch at a time, for
// benchmarks of large commits.
func BulkAppend(ctx context.Context, tbl *table.Table, n int64) (*table.Table, error) {
	as, err := arrowSchemaFor(tbl.Schema(), false)
	if err != nil {
		return nil, err
	}
	var dfs []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, as, orderBatches(as, 0, n, "new", 0, false)) {
		if err != nil {
			return nil, fmt.Errorf("bulk append %v: %w", tbl.Identifier(), err)
		}
		dfs = append(dfs, df)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddRows(dfs...).Commit(ctx); err != nil {
		return nil, fmt.Errorf("bulk append %v: %w", tbl.Identifier(), err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("bulk append %v: %w", tbl.Identifier(), err)
	}
	return checkCommitted("bulk append", tbl, next)
}

// BulkDeleteFirst deletes the first n rows of a table BulkAppend wrote
// (positions 0..n-1 of its data files, in order) with deletion vectors in
// one commit; with update, the rows are written again with their _row_id
// and status "updated" in the same commit (a position-delta update, as
// [Update] makes). The table must have no deletes yet.
func BulkDeleteFirst(ctx context.Context, tbl *table.Table, n int64, update bool) (*table.Table, error) {
	fail := func(err error) (*table.Table, error) {
		return nil, fmt.Errorf("bulk delete %v: %w", tbl.Identifier(), err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fail(err)
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return fail(fmt.Errorf("file io %T cannot write", fs))
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return fail(err)
	}
	meta := tbl.Metadata()
	dvw := dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	var pdw *table.PositionDeltaWriter
	as, err := arrowSchemaFor(tbl.Schema(), true)
	if err != nil {
		return fail(err)
	}
	if update {
		if pdw, err = table.NewPositionDeltaWriter(tbl); err != nil {
			return fail(err)
		}
	}
	var done int64
	for _, task := range tasks {
		if done == n {
			break
		}
		if len(task.DeletionVectorFiles)+len(task.DeleteFiles)+len(task.EqualityDeleteFiles) > 0 || task.FirstRowID == nil {
			return fail(fmt.Errorf("data file %s has deletes or no first_row_id", task.File.FilePath()))
		}
		k := min(task.File.Count(), n-done)
		pos := make([]int64, k)
		for i := range pos {
			pos[i] = int64(i)
		}
		if err := dvw.Add(task.File.FilePath(), pos, task.File.SpecID(), task.File.Partition()); err != nil {
			return fail(err)
		}
		if update {
			for rec, err := range orderBatches(as, done, done+k, "updated", *task.FirstRowID, true) {
				if err != nil {
					return fail(err)
				}
				if err := pdw.Reinsert(rec); err != nil {
					return fail(err)
				}
				rec.Release()
			}
		}
		done += k
	}
	if done < n {
		return fail(fmt.Errorf("%d rows to delete, the table has %d", n, done))
	}
	vd := &vectorDelete{}
	if vd.dvs, err = dvw.Flush(ctx, tbl.Location()+"/data/"+uuid.NewString()+"-bulk.puffin"); err != nil {
		return fail(err)
	}
	var data []iceberg.DataFile
	if update {
		if data, err = pdw.Close(ctx); err != nil {
			return fail(err)
		}
	}
	next, err := commitRowDelta(ctx, tbl, data, vd)
	if err != nil {
		return fail(err)
	}
	return checkCommitted("bulk delete", tbl, next)
}
