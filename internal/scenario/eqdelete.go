package scenario

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// EqualityDelete writes one equality-delete file (one per partition on a
// partitioned table) with Transaction.WriteEqualityDeletes, keyed on
// fieldNames, holding one row per element of keys, and commits it with a
// delete-only RowDelta: one commit, operation "delete". It removes every row
// of a data file with a lower data sequence number whose key columns equal
// one of keys (null matches null).
//
// On a partitioned table each key must also give the partition source
// columns, which iceberg-go needs to route the delete to its partition.
func EqualityDelete(ctx context.Context, tbl *table.Table, fieldNames []string, keys []map[string]any) (*table.Table, error) {
	tx := tbl.NewTransaction()
	eq, err := writeEqualityDeletes(ctx, tbl, tx, fieldNames, keys)
	if err != nil {
		return nil, fmt.Errorf("equality delete %v: %w", tbl.Identifier(), err)
	}
	if err := tx.NewRowDelta(nil).AddDeletes(eq...).Commit(ctx); err != nil {
		return nil, fmt.Errorf("equality delete %v: %w", tbl.Identifier(), err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("equality delete %v: %w", tbl.Identifier(), err)
	}

	return checkCommitted("equality delete", tbl, next)
}

// EqualityUpsert is what Flink or Kafka Connect do for an upsert: in ONE
// RowDelta commit (operation "overwrite") an equality-delete file keyed on
// keyFields with the key of every row, and a new data file with the rows.
// The delete applies only to older data files (strictly lower sequence
// number), so the new rows survive while the rows they replace are removed;
// the new rows get new _row_ids.
func EqualityUpsert(ctx context.Context, tbl *table.Table, keyFields []string, rows []map[string]any) (*table.Table, error) {
	tx := tbl.NewTransaction()
	eq, err := writeEqualityDeletes(ctx, tbl, tx, keyFields, rows)
	if err != nil {
		return nil, fmt.Errorf("equality upsert %v: %w", tbl.Identifier(), err)
	}
	as, err := arrowSchemaFor(tbl.Schema(), false)
	if err != nil {
		return nil, err
	}
	rec, err := buildRecord(as, rows)
	if err != nil {
		return nil, fmt.Errorf("equality upsert %v: %w", tbl.Identifier(), err)
	}
	data, err := writeData(ctx, tbl, as, rec)
	if err != nil {
		return nil, fmt.Errorf("equality upsert %v: %w", tbl.Identifier(), err)
	}
	if err := tx.NewRowDelta(nil).AddRows(data...).AddDeletes(eq...).Commit(ctx); err != nil {
		return nil, fmt.Errorf("equality upsert %v: %w", tbl.Identifier(), err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("equality upsert %v: %w", tbl.Identifier(), err)
	}

	return checkCommitted("equality upsert", tbl, next)
}

// writeEqualityDeletes writes the key columns (plus partition source
// columns) of rows as equality-delete files in tx without committing them.
func writeEqualityDeletes(ctx context.Context, tbl *table.Table, tx *table.Transaction, fieldNames []string, rows []map[string]any) ([]iceberg.DataFile, error) {
	sc := tbl.Schema()
	ids := make([]int, 0, len(fieldNames))
	names := slices.Clone(fieldNames)
	for _, n := range fieldNames {
		f, ok := sc.FindFieldByName(n)
		if !ok {
			return nil, fmt.Errorf("no column %q", n)
		}
		ids = append(ids, f.ID)
	}
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		n, ok := sc.FindColumnName(f.SourceID())
		if !ok {
			return nil, fmt.Errorf("partition source field %d not in schema", f.SourceID())
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	writeSchema, err := sc.Select(true, names...)
	if err != nil {
		return nil, err
	}
	as, err := table.SchemaToArrowSchema(writeSchema, nil, true, false)
	if err != nil {
		return nil, err
	}
	keys := make([]map[string]any, len(rows))
	for i, r := range rows {
		k := make(map[string]any, len(names))
		maps.Copy(k, r)
		maps.DeleteFunc(k, func(name string, _ any) bool { return !slices.Contains(names, name) })
		keys[i] = k
	}
	rec, err := buildRecord(as, keys)
	if err != nil {
		return nil, err
	}
	files, err := tx.WriteEqualityDeletes(ctx, ids, single(rec))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no equality-delete file written for %d keys", len(rows))
	}

	return files, nil
}
