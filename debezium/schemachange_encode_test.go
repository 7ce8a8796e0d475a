package debezium

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
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

// TestSchemaChangeRecords: both formats' records carry the whole new
// schema, the ids and the changes; Connect's form converts as
// JsonConverter converts it.
func TestSchemaChangeRecords(t *testing.T) {
	a, b := changeSchemas()
	c := &cdc.Commit{Table: cdc.TableInfo{Catalog: "lake", Namespace: "shop", Name: "orders", UUID: "u-1", Schema: b},
		Snapshot: cdc.SnapshotInfo{ID: 42, SequenceNumber: 7, TimestampMs: 1000, Operation: "append"}}
	ch := cdc.NewSchemaChange(a, true, b)
	env := Envelope{Pipeline: "p", Version: "v"}
	plain := &JSON{Envelope: env}
	k, v, err := plain.EncodeSchemaChange(c, ch, 2000)
	if err != nil || string(k) != `{"databaseName":"lake"}` {
		t.Fatalf("key %s %v", k, err)
	}
	var rec struct {
		Source struct {
			SnapshotID     int64 `json:"snapshot_id"`
			SequenceNumber int64 `json:"sequence_number"`
			Table          string
		}
		TsMs         int64 `json:"ts_ms"`
		SchemaName   string
		DDL          string
		TableChanges []struct {
			Type, ID string
			Table    struct {
				PrimaryKeyColumnNames []string
				Columns               []struct {
					Name, TypeName string
					JDBCType       int
					Length, Scale  *int
					Position       int
					Optional       bool
					FieldID        int
					Comment        *string
				}
			}
		}
		SchemaID         int  `json:"schema_id"`
		PreviousSchemaID *int `json:"previous_schema_id"`
		Changes          []struct{ Kind, Path string }
	}
	if err := json.Unmarshal(v, &rec); err != nil {
		t.Fatalf("%v: %s", err, v)
	}
	tc := rec.TableChanges
	if rec.Source.SnapshotID != 42 || rec.Source.SequenceNumber != 7 || rec.TsMs != 2000 || rec.SchemaName != "shop" ||
		rec.SchemaID != 2 || rec.PreviousSchemaID == nil || *rec.PreviousSchemaID != 1 || len(rec.Changes) != 10 ||
		len(tc) != 1 || tc[0].Type != "ALTER" || tc[0].ID != `"shop"."orders"` || len(tc[0].Table.Columns) != 6 ||
		strings.Join(tc[0].Table.PrimaryKeyColumnNames, ",") != "id,full_name" || rec.DDL != ch.DDL("shop.orders", b) {
		t.Fatalf("record %s", v)
	}
	tag := tc[0].Table.Columns[5]
	if tag.Name != "tag" || tag.JDBCType != 3 || *tag.Length != 9 || *tag.Scale != 2 || tag.Position != 6 || tag.Optional || tag.FieldID != 10 {
		t.Fatalf("decimal column %+v", tag)
	}
	if strings.Contains(string(v), `\u003c`) {
		t.Fatalf("type strings escaped: %s", v)
	}

	conn, err := NewConnectJSON(env, ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []*cdc.SchemaChange{ch, cdc.NewSchemaChange(nil, true, b), cdc.NewSchemaChange(nil, false, b)} {
		ck, cv, err := conn.EncodeSchemaChange(c, ch, 2000)
		if err != nil {
			t.Fatal(err)
		}
		ks, kp := decodeConnect(t, ck)
		vs, vp := decodeConnect(t, cv)
		if ks.Name != "io.icecdc.connector.iceberg.SchemaChangeKey" || vs.Name != "io.icecdc.connector.iceberg.SchemaChangeValue" {
			t.Fatalf("schema names %s %s", ks.Name, vs.Name)
		}
		var p1, p2 any
		json.Unmarshal(vp, &p1)
		_, plainV, _ := plain.EncodeSchemaChange(c, ch, 2000)
		json.Unmarshal(plainV, &p2)
		if fmt.Sprint(p1) != fmt.Sprint(p2) || string(kp) != `{"databaseName":"lake"}` {
			t.Fatalf("Connect payload differs from the plain record:\n%s\n%s", vp, plainV)
		}
	}
}
