package iceberg

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// allTypes is a source schema with a column of each kind of value the
// sink writes.
func allTypes() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "l", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 7, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 8, Name: "dec", Type: iceberg.DecimalTypeOf(20, 4)},
		iceberg.NestedField{ID: 9, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 10, Name: "tod", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 11, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 12, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 13, Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 14, Name: "fx", Type: iceberg.FixedTypeOf(3)},
		iceberg.NestedField{ID: 15, Name: "tags", Type: &iceberg.ListType{ElementID: 20, Element: iceberg.PrimitiveTypes.String}},
		iceberg.NestedField{ID: 16, Name: "attrs", Type: &iceberg.MapType{KeyID: 21, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 22, ValueType: iceberg.PrimitiveTypes.Int64}},
		iceberg.NestedField{ID: 17, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 23, Name: "city", Type: iceberg.PrimitiveTypes.String}, {ID: 24, Name: "zip", Type: iceberg.PrimitiveTypes.Int32}}}},
		iceberg.NestedField{ID: 18, Name: "ns", Type: iceberg.PrimitiveTypes.TimestampNs},
		iceberg.NestedField{ID: 19, Name: "v", Type: iceberg.VariantType{}},
	)
}

func allValues(k int64) values.Row {
	return values.Row{k%2 == 0, int32(k), k, float32(k) + 0.5, float64(k) / 3, "s\u00e9" + strings.Repeat("x", int(k)),
		[]byte{0, byte(k), 255}, values.Decimal{Unscaled: "-12345678901234", Scale: 4}, values.Date(19000 + k), values.Time(3_600_000_000 + k),
		values.Timestamp(1_700_000_000_000_000 + k), values.TimestampTZ(1_700_000_000_000_001 + k), values.UUID{1, 2, 3, byte(k)},
		[]byte{byte(k), 2, 3}, []any{"a", nil, "c"}, []values.MapEntry{{Key: "n", Value: k}},
		values.Row{"Zürich", int32(8000 + k)}, values.TimestampNano(1_700_000_000_000_000_123 + k), values.VariantJSON(`{"a":[1,"x",null]}`)}
}

// TestEveryType: each kind of value survives the encoder, the Arrow
// builders and a v3 target table's Parquet files, read back by
// iceberg-go's scan as values.ArrowValue reads a source; nulls too.
func TestEveryType(t *testing.T) {
	r := newRig(t)
	cfg := r.config()
	cfg.FormatVersion = 3
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info := cdc.TableInfo{Namespace: "shop", Name: "kinds", UUID: "00000000-0000-4000-8000-00000000000b", Schema: allTypes()}
	rows := []values.Row{allValues(1), allValues(2), make(values.Row, len(allTypes().Fields()))}
	rows[2][2] = int64(3) // the required column; every other one null
	c := &cdc.Commit{Table: info, Snapshot: cdc.SnapshotInfo{ID: 7, SequenceNumber: 1, TimestampMs: 1_700_000_000_000}}
	b := &cdc.Batch{Table: info, Snapshot: c.Snapshot, Checkpoint: cdc.Checkpoint{TableUUID: info.UUID, Seq: 1, Done: true}}
	for i, row := range rows {
		e := cdc.Event{Op: cdc.OpSnapshot, RowID: int64(i), After: row, Index: i}
		v, err := Encoder{}.AppendValue(nil, c, &e, 0)
		if err != nil {
			t.Fatal(err)
		}
		b.Messages = append(b.Messages, cdc.Message{ID: cdc.EventID(info.UUID, 1, e.RowID, e.Op), Op: e.Op, Index: i, Value: v})
	}
	if err := s.Write(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, err := r.env.Catalog.LoadTable(ctx, table.Identifier{"audit", "kinds_changes"})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]values.Row{}
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			row := make(values.Row, len(allTypes().Fields()))
			for k, f := range allTypes().Fields() {
				v, err := values.ArrowValue(rec.Column(rec.Schema().FieldIndices(f.Name)[0]), i, f.Type)
				if err != nil {
					t.Fatalf("column %s: %v", f.Name, err)
				}
				row[k] = v
			}
			got[row[2].(int64)] = row
		}
		rec.Release()
	}
	for _, want := range rows {
		if g := got[want[2].(int64)]; !reflect.DeepEqual(g, want) {
			t.Errorf("row %d:\n got %#v\nwant %#v", want[2], g, want)
		}
	}
}

// TestCodecRefuses: a value the encoder has no form for is an error
// naming the event, and bytes cut short do not decode.
func TestCodecRefuses(t *testing.T) {
	info := ordersInfo()
	c := &cdc.Commit{Table: info, Snapshot: cdc.SnapshotInfo{SequenceNumber: 4}}
	e := cdc.Event{Op: cdc.OpCreate, RowID: 9, After: values.Row{int64(1), struct{}{}, nil}}
	if _, err := (Encoder{}).AppendValue(nil, c, &e, 0); err == nil || !strings.Contains(err.Error(), "encode event "+info.UUID+":4:9:c: value of Go type struct {}") {
		t.Errorf("unknown value: %v", err)
	}
	e.After = allValues(5)
	v, err := Encoder{}.AppendValue(nil, c, &e, 0)
	if err != nil {
		t.Fatal(err)
	}
	for cut := range len(v) {
		d := decoder{b: v[:cut]}
		d.varint()
		d.image()
		d.image()
		if d.err == nil {
			t.Fatalf("%d of %d bytes decoded without an error", cut, len(v))
		}
	}
}

// TestV3TypeInV2Target: a variant column cannot go into a format version
// 2 table: creating it fails with one line naming the target and the
// setting that fixes it, and the checkpoint does not move.
func TestV3TypeInV2Target(t *testing.T) {
	r := newRig(t)
	s, err := New(r.config())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	info := cdc.TableInfo{Namespace: "shop", Name: "docs", UUID: "00000000-0000-4000-8000-00000000000c",
		Schema: iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "doc", Type: iceberg.VariantType{}})}
	c := &cdc.Commit{Table: info, Snapshot: cdc.SnapshotInfo{ID: 1, SequenceNumber: 1}}
	e := cdc.Event{Op: cdc.OpCreate, RowID: 1, After: values.Row{values.VariantJSON(`1`)}}
	v, _ := Encoder{}.AppendValue(nil, c, &e, 0)
	err = s.Write(context.Background(), &cdc.Batch{Table: info, Snapshot: c.Snapshot, Messages: []cdc.Message{{ID: "x", Op: cdc.OpCreate, Value: v}}})
	t.Logf("%v", err)
	if err == nil || !strings.Contains(err.Error(), "iceberg sink: target audit.docs_changes: ") || !strings.Contains(err.Error(), "format_version: 3") || !cdc.IsPermanent(err) {
		t.Fatalf("variant in a v2 target: %v", err)
	}
}
