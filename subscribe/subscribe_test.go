package subscribe

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

func addressSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "address", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 4, Name: "street", Type: iceberg.PrimitiveTypes.String},
			{ID: 5, Name: "city", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 6, Name: "tags", Type: &iceberg.ListType{ElementID: 7, Element: iceberg.PrimitiveTypes.String}},
	)
}

func TestSubscriptionRefusesBadColumns(t *testing.T) {
	sc := addressSchema()
	for col, want := range map[string]string{
		"nope":         `table shop.people: columns: unknown column "nope" (the table's columns: id, name, address, tags)`,
		"tags.element": `table shop.people: columns: "tags.element" is inside a list or a map; subscribe to the column that holds it`,
	} {
		_, err := New("shop.people", sc, []string{"name", col})
		if err == nil || err.Error() != want {
			t.Errorf("columns [name %s]: %v, want %s", col, err, want)
		}
	}
}

func TestSubscriptionNestedColumn(t *testing.T) {
	sc := addressSchema()
	sub, err := New("shop.people", sc, []string{"address.city"})
	if err != nil {
		t.Fatal(err)
	}
	row := func(name, street, city string) values.Row {
		return values.Row{int64(1), name, values.Row{street, city}, []any{"a"}}
	}
	c := &cdc.Commit{Table: cdc.TableInfo{Schema: sc, KeyFields: []string{"id"}}}
	evs := []cdc.Event{
		{Op: cdc.OpUpdate, RowID: 1, Before: row("a", "s", "x"), After: row("b", "s", "x"), Index: 0},                  // name only: dropped
		{Op: cdc.OpUpdate, RowID: 2, Before: row("a", "s", "x"), After: row("a", "s", "y"), Index: 1},                  // city: kept
		{Op: cdc.OpUpdate, RowID: 3, Before: row("a", "s", "x"), After: values.Row{int64(1), "a", nil, nil}, Index: 2}, // address nulled: kept
		{Op: cdc.OpDelete, RowID: 4, Before: row("a", "s", "x"), Index: 3},
	}
	pc, kept, err := sub.Apply(c, evs)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range kept {
		ids = append(ids, e.RowID)
	}
	if !slices.Equal(ids, []int64{2, 3, 4}) {
		t.Fatalf("kept rows %v, want [2 3 4]", ids)
	}
	var names []string
	for _, f := range pc.Table.Schema.Fields() {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "id,address" || len(kept[0].After) != 2 || kept[2].Index != 3 {
		t.Fatalf("projection: columns %v, images %v, index %d", names, kept[0].After, kept[2].Index)
	}
	if got := cdc.ChangedFields(pc.Table.Schema, kept[0].Before, kept[0].After); !slices.Equal(got, []string{"address.city"}) {
		t.Fatalf("changed_fields of the projected update: %v", got)
	}
	// The column dropped by a later schema stops the table, naming it.
	later := iceberg.NewSchema(1, sc.Fields()[:2]...)
	c2 := &cdc.Commit{Table: cdc.TableInfo{Schema: later}, Snapshot: cdc.SnapshotInfo{ID: 77}}
	if _, _, err := sub.Apply(c2, nil); err == nil || !strings.Contains(err.Error(), `subscribed column "address.city"`) {
		t.Fatalf("dropped column: %v", err)
	}
}
