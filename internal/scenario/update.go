package scenario

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/google/uuid"
)

// Update is a merge-on-read update that keeps each row's _row_id, the way
// Spark's position-delta UPDATE does it on v3, in one RowDelta commit
// (operation "overwrite", since it adds data and delete files):
//
//   - the live rows matching filter are read with their effective _row_id
//     and their position in their data file;
//   - fn receives a copy of each row's values (column name -> Go value, as
//     [LiveRows] gives them) and returns the new values; the new rows are
//     written with table.NewPositionDeltaWriter and Reinsert, so the new
//     data file stores _row_id explicitly and leaves
//     _last_updated_sequence_number null (it inherits the new sequence
//     number);
//   - one Puffin file gets one deletion vector per touched data file, with
//     the old positions plus the file's previous deletes: its previous
//     vector (which is removed in the same commit with RemoveDeletes) or,
//     failing that, its v2 position deletes, folded in as the spec requires.
//
// fn must not change _row_id; values it omits become null. A second Update
// of the same row targets the file the first one wrote, whose _row_id is
// stored. The table must be v3, and the touched files must have row lineage
// (right after [UpgradeToV3], make one commit first).
func Update(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, fn func(row map[string]any) map[string]any) (*table.Table, error) {
	fail := func(err error) (*table.Table, error) {
		return nil, fmt.Errorf("update %v where %s: %w", tbl.Identifier(), filter, err)
	}
	vd, err := deleteByVector(ctx, tbl, filter, "-update-deletes.puffin")
	if err != nil {
		return fail(err)
	}
	var newRows []map[string]any
	for _, r := range vd.rows {
		nv := fn(maps.Clone(r.Values))
		if nv == nil {
			return fail(fmt.Errorf("fn returned nil for row id %d", r.RowID))
		}
		if v, ok := nv[iceberg.RowIDColumnName]; ok && v != r.RowID {
			return fail(fmt.Errorf("fn changed %s %d to %v", iceberg.RowIDColumnName, r.RowID, v))
		}
		nv = maps.Clone(nv)
		nv[iceberg.RowIDColumnName] = r.RowID
		newRows = append(newRows, nv)
	}
	if len(newRows) == 0 {
		return fail(ErrNoCommit)
	}
	data, err := reinsert(ctx, tbl, newRows)
	if err != nil {
		return fail(err)
	}
	next, err := commitRowDelta(ctx, tbl, data, vd)
	if err != nil {
		return fail(err)
	}
	return checkCommitted("update", tbl, next)
}

// vectorDelete is the delete half of a row delta: the rows a filter
// matched, the new vectors deleting them (each folding its file's previous
// vector, or its v2 position deletes) and the vectors they replace.
type vectorDelete struct {
	rows          []Row
	dvs, replaced []iceberg.DataFile
}

// deleteByVector plans the files the filter touches, reads the matching
// live rows and writes one Puffin file with a vector per touched file.
func deleteByVector(ctx context.Context, tbl *table.Table, filter iceberg.BooleanExpression, suffix string) (*vectorDelete, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("file io %T cannot write", fs)
	}
	tasks, err := tbl.Scan(table.WithRowFilter(filter)).PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	dvw := dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	vd := &vectorDelete{}
	for _, task := range tasks {
		rows, err := updateTask(ctx, tbl, fs, dvw, task, filter)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			continue
		}
		vd.replaced = append(vd.replaced, task.DeletionVectorFiles...)
		vd.rows = append(vd.rows, rows...)
	}
	if len(vd.rows) > 0 {
		if vd.dvs, err = dvw.Flush(ctx, tbl.Location()+"/data/"+uuid.NewString()+suffix); err != nil {
			return nil, err
		}
	}
	return vd, nil
}

// commitRowDelta commits data files and a vector delete as one snapshot.
func commitRowDelta(ctx context.Context, tbl *table.Table, data []iceberg.DataFile, vd *vectorDelete) (*table.Table, error) {
	tx := tbl.NewTransaction()
	rd := tx.NewRowDelta(nil).AddRows(data...).AddDeletes(vd.dvs...)
	if len(vd.replaced) > 0 {
		rd.RemoveDeletes(vd.replaced...)
	}
	if err := rd.Commit(ctx); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

// updateTask finds the live rows of one data file that match filter, adds
// their positions and the file's previous deletes to dvw, and returns them.
func updateTask(ctx context.Context, tbl *table.Table, fs iceio.IO, dvw *dv.DVWriter, task table.FileScanTask, filter iceberg.BooleanExpression) ([]Row, error) {
	path := task.File.FilePath()
	matched, err := readTask(ctx, tbl, task, filter)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(matched) == 0 {
		return nil, nil
	}

	// Every position of the file, deletes not applied, to map row ids to
	// positions (the scan has no _pos column).
	bare := task
	bare.DeleteFiles, bare.DeletionVectorFiles, bare.EqualityDeleteFiles, bare.Residual = nil, nil, nil, nil
	all, err := readTask(ctx, tbl, bare, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(all)) != task.File.Count() {
		return nil, fmt.Errorf("read %s: %d rows, manifest says %d", path, len(all), task.File.Count())
	}
	first := task.FirstRowID
	pos := make(map[int64]int64, len(all))
	for i, r := range all {
		if r.RowID == NoLineage {
			return nil, fmt.Errorf("read %s: no row lineage (a file from before the upgrade to v3 gets first_row_id at the next commit)", path)
		}
		// Rows without a stored id must come back in position order.
		if first != nil && r.RowID < *first+int64(len(all)) && r.RowID >= *first && r.RowID != *first+int64(i) {
			return nil, fmt.Errorf("read %s: row id %d at position %d, first_row_id %d: rows out of position order", path, r.RowID, i, *first)
		}
		if _, dup := pos[r.RowID]; dup {
			return nil, fmt.Errorf("read %s: row id %d at two positions", path, r.RowID)
		}
		pos[r.RowID] = int64(i)
	}

	specID, part := task.File.SpecID(), task.File.Partition()
	switch {
	case len(task.DeletionVectorFiles) > 1:
		return nil, fmt.Errorf("%s has %d deletion vectors", path, len(task.DeletionVectorFiles))
	case len(task.DeletionVectorFiles) == 1:
		prev, err := dv.ReadDV(fs, task.DeletionVectorFiles[0])
		if err != nil {
			return nil, fmt.Errorf("read deletion vector of %s: %w", path, err)
		}
		dvw.Load(path, prev, specID, part)
	case len(task.DeleteFiles) > 0:
		// v2 position deletes: the positions they remove are those missing
		// when only they are applied.
		posOnly := bare
		posOnly.DeleteFiles = task.DeleteFiles
		kept, err := readTask(ctx, tbl, posOnly, nil)
		if err != nil {
			return nil, fmt.Errorf("read %s with position deletes: %w", path, err)
		}
		live := make(map[int64]bool, len(kept))
		for _, r := range kept {
			live[r.RowID] = true
		}
		for i, r := range all {
			if !live[r.RowID] {
				if err := dvw.AddPosition(path, int64(i), specID, part); err != nil {
					return nil, err
				}
			}
		}
	}
	for _, r := range matched {
		p, ok := pos[r.RowID]
		if !ok {
			return nil, fmt.Errorf("%s: matched row id %d has no position", path, r.RowID)
		}
		if err := dvw.AddPosition(path, p, specID, part); err != nil {
			return nil, err
		}
	}

	return matched, nil
}

// readTask reads one task with row lineage, in position order, filtered by
// filter when it is not nil.
func readTask(ctx context.Context, tbl *table.Table, task table.FileScanTask, filter iceberg.BooleanExpression) ([]Row, error) {
	opts := []table.ScanOption{table.WithRowLineage(), table.WithMaxConcurrency(1)}
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	scan := tbl.Scan(opts...)
	defer scan.Close()
	_, recs, err := scan.ReadTasks(ctx, []table.FileScanTask{task})
	if err != nil {
		return nil, err
	}

	return collectRows(recs)
}

// reinsert writes rows (carrying _row_id) with a PositionDeltaWriter.
func reinsert(ctx context.Context, tbl *table.Table, rows []map[string]any) ([]iceberg.DataFile, error) {
	as, err := arrowSchemaFor(tbl.Schema(), true)
	if err != nil {
		return nil, err
	}
	rec, err := buildRecord(as, rows)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	w, err := table.NewPositionDeltaWriter(tbl)
	if err != nil {
		return nil, err
	}
	if err := w.Reinsert(rec); err != nil {
		return nil, err
	}

	return w.Close(ctx)
}
