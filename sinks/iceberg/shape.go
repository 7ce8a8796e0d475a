package iceberg

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// The columns the sink adds to the source's: Iceberg's changelog view's
// three, then icecdc's.
const (
	ColChangeType      = "_change_type"
	ColChangeOrdinal   = "_change_ordinal"
	ColCommitSnapshot  = "_commit_snapshot_id"
	ColSequenceNumber  = "_sequence_number"
	ColRowID           = "_source_row_id" // not _row_id: Iceberg Java reserves it (row lineage) and refuses to read a table with such a column
	ColEventID         = "_event_id"
	ColCommitTimestamp = "_commit_timestamp"
)

// The values of _change_type, as Iceberg's changelog view spells them.
const (
	Insert       = "INSERT"
	Delete       = "DELETE"
	UpdateBefore = "UPDATE_BEFORE"
	UpdateAfter  = "UPDATE_AFTER"
)

// metaFields are the added columns, in order, with their types.
var metaFields = []iceberg.NestedField{
	{Name: ColChangeType, Type: iceberg.PrimitiveTypes.String, Required: true},
	{Name: ColChangeOrdinal, Type: iceberg.PrimitiveTypes.Int64, Required: true},
	{Name: ColCommitSnapshot, Type: iceberg.PrimitiveTypes.Int64, Required: true},
	{Name: ColSequenceNumber, Type: iceberg.PrimitiveTypes.Int64, Required: true},
	{Name: ColRowID, Type: iceberg.PrimitiveTypes.Int64, Required: true},
	{Name: ColEventID, Type: iceberg.PrimitiveTypes.String, Required: true},
	{Name: ColCommitTimestamp, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
}

// targetSchema returns the target table's schema for source schema src:
// its top-level columns, all optional (a column the source adds later is
// null in earlier rows), then the added columns. Field ids are assigned
// in order; the catalog assigns its own when the table is created.
func targetSchema(src *iceberg.Schema) (*iceberg.Schema, error) {
	var fields []iceberg.NestedField
	id := 0
	next := func() int { id++; return id }
	for _, f := range src.Fields() {
		if slices.ContainsFunc(metaFields, func(m iceberg.NestedField) bool { return m.Name == f.Name }) {
			return nil, fmt.Errorf("source column %s has the name of a column the sink adds", f.Name)
		}
		f.Required = false
		f.ID = next()
		f.Type = renumber(f.Type, next)
		fields = append(fields, f)
	}
	for _, m := range metaFields {
		m.ID = next()
		fields = append(fields, m)
	}
	return iceberg.NewSchema(0, fields...), nil
}

// renumber gives nested fields fresh ids from next.
func renumber(t iceberg.Type, next func() int) iceberg.Type {
	switch t := t.(type) {
	case *iceberg.StructType:
		out := &iceberg.StructType{FieldList: slices.Clone(t.FieldList)}
		for i := range out.FieldList {
			out.FieldList[i].ID = next()
			out.FieldList[i].Type = renumber(out.FieldList[i].Type, next)
		}
		return out
	case *iceberg.ListType:
		return &iceberg.ListType{ElementID: next(), Element: renumber(t.Element, next), ElementRequired: t.ElementRequired}
	case *iceberg.MapType:
		k := next()
		v := next()
		return &iceberg.MapType{KeyID: k, KeyType: renumber(t.KeyType, next), ValueID: v, ValueType: renumber(t.ValueType, next), ValueRequired: t.ValueRequired}
	}
	return t
}

// changeRows returns the _change_type of each row an event becomes, with
// the image each row carries: an update is two rows.
func changeRows(op cdc.Op, before, after values.Row) (types []string, images []values.Row, err error) {
	switch op {
	case cdc.OpCreate, cdc.OpSnapshot:
		if after == nil {
			return nil, nil, fmt.Errorf("insert without an after image")
		}
		return []string{Insert}, []values.Row{after}, nil
	case cdc.OpDelete:
		if before == nil {
			return nil, nil, fmt.Errorf("delete without a before image")
		}
		return []string{Delete}, []values.Row{before}, nil
	case cdc.OpUpdate:
		if before == nil || after == nil {
			return nil, nil, fmt.Errorf("update without both images")
		}
		return []string{UpdateBefore, UpdateAfter}, []values.Row{before, after}, nil
	}
	return nil, nil, fmt.Errorf("op %q has no change type", op)
}
