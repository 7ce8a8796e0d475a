package cdc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

func changeSchemas() (a, b *iceberg.Schema) {
	a = iceberg.NewSchemaWithIdentifiers(1, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "price", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "street", Type: iceberg.PrimitiveTypes.String},
			{ID: 6, Name: "zip", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		iceberg.NestedField{ID: 7, Name: "note", Type: iceberg.PrimitiveTypes.String, Doc: "free text", Required: true},
		iceberg.NestedField{ID: 8, Name: "legacy", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 11, Name: "x", Type: iceberg.PrimitiveTypes.String},
		}}},
	)
	b = iceberg.NewSchemaWithIdentifiers(2, []int{1, 2},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "price", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "full_name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 6, Name: "zip", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 5, Name: "street", Type: iceberg.PrimitiveTypes.String},
			{ID: 9, Name: "city", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 7, Name: "note", Type: iceberg.PrimitiveTypes.String, Doc: "shown to the buyer"},
		iceberg.NestedField{ID: 10, Name: "tag", Type: iceberg.DecimalTypeOf(9, 2), Required: true},
	)
	return a, b
}

// TestSchemaChangeDiff: every kind of change, nested ones included, is
// reported once, by field id, with the fewest moves.
func TestSchemaChangeDiff(t *testing.T) {
	a, b := changeSchemas()
	if NewSchemaChange(a, true, a) != nil {
		t.Fatal("an unchanged schema reported a change")
	}
	if c := NewSchemaChange(nil, true, b); c == nil || c.Type != "CREATE" || c.Previous != nil {
		t.Fatalf("first snapshot: %+v", c)
	}
	if c := NewSchemaChange(nil, false, b); c == nil || c.Type != "ALTER" || c.Previous != nil || len(c.Changes) != 0 {
		t.Fatalf("parent gone: %+v", c)
	}
	c := NewSchemaChange(a, true, b)
	var got []string
	for _, ch := range c.Changes {
		got = append(got, fmt.Sprintf("%s %d %s [%s -> %s] after=%q", ch.Kind, ch.FieldID, ch.Path, ch.From, ch.To, ch.After))
	}
	want := []string{
		`update_column_type 3 price [int -> long] after=""`,
		`move_column 3 price [3 -> 2] after="id"`,
		`rename_column 2 full_name [name -> full_name] after=""`,
		`move_column 6 addr.zip [2 -> 1] after=""`,
		`add_column 9 addr.city [ -> string] after=""`,
		`make_optional 7 note [ -> ] after=""`,
		`update_column_doc 7 note [free text -> shown to the buyer] after=""`,
		`add_column 10 tag [ -> decimal(9, 2) not null] after=""`,
		`drop_column 8 legacy [struct<11: x: optional string> -> ] after=""`,
		`update_identifier_fields 0  [id -> id,full_name] after=""`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ddl := c.DDL("shop.orders", b)
	wantDDL := "ALTER TABLE shop.orders ALTER COLUMN price TYPE long; ALTER TABLE shop.orders ALTER COLUMN price AFTER id; " +
		"ALTER TABLE shop.orders RENAME COLUMN name TO full_name; ALTER TABLE shop.orders ALTER COLUMN addr.zip FIRST; " +
		"ALTER TABLE shop.orders ADD COLUMN addr.city string; ALTER TABLE shop.orders ALTER COLUMN note DROP NOT NULL; " +
		`ALTER TABLE shop.orders ALTER COLUMN note COMMENT "shown to the buyer"; ALTER TABLE shop.orders ADD COLUMN tag decimal(9, 2) NOT NULL; ` +
		"ALTER TABLE shop.orders DROP COLUMN legacy; ALTER TABLE shop.orders SET IDENTIFIER FIELDS id,full_name"
	if ddl != wantDDL {
		t.Fatalf("ddl:\n%s\nwant:\n%s", ddl, wantDDL)
	}
	// Moving one column of many reports that one only.
	cols := func(id int, names ...string) *iceberg.Schema {
		fs := make([]iceberg.NestedField, len(names))
		for i, n := range names {
			fs[i] = iceberg.NestedField{ID: int(n[0]), Name: n, Type: iceberg.PrimitiveTypes.String}
		}
		return iceberg.NewSchema(id, fs...)
	}
	m := NewSchemaChange(cols(1, "a", "b", "c", "d", "e"), true, cols(2, "e", "a", "b", "c", "d"))
	if len(m.Changes) != 1 || m.Changes[0].Path != "e" || m.Changes[0].After != "" {
		t.Fatalf("move first: %+v", m.Changes)
	}
	if d := m.DDL("t.u", nil); d != "ALTER TABLE t.u ALTER COLUMN e FIRST" {
		t.Fatalf("ddl %s", d)
	}
}
