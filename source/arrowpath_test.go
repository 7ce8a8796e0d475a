package source_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// allTypesSchema has a column of every Iceberg type icecdc encodes, nested
// ones included, with the identifier inside a struct too.
func allTypesSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 3, Name: "small", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "ratio", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "price", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 7, Name: "huge", Type: iceberg.DecimalTypeOf(38, 10)},
		iceberg.NestedField{ID: 8, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 9, Name: "clock", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 10, Name: "local_ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 11, Name: "utc_ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 12, Name: "local_ns", Type: iceberg.PrimitiveTypes.TimestampNs},
		iceberg.NestedField{ID: 13, Name: "utc_ns", Type: iceberg.PrimitiveTypes.TimestampTzNs},
		iceberg.NestedField{ID: 14, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 15, Name: "uid", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 16, Name: "code", Type: iceberg.FixedTypeOf(3)},
		iceberg.NestedField{ID: 17, Name: "blob", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 18, Name: "address", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 30, Name: "city", Type: iceberg.PrimitiveTypes.String},
			{ID: 31, Name: "zip", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 32, Name: "lines", Type: &iceberg.ListType{ElementID: 33, Element: iceberg.PrimitiveTypes.String}},
		}}},
		iceberg.NestedField{ID: 19, Name: "tags", Type: &iceberg.ListType{ElementID: 34, Element: iceberg.PrimitiveTypes.Int64}},
		iceberg.NestedField{ID: 20, Name: "points", Type: &iceberg.ListType{ElementID: 35, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 36, Name: "x", Type: iceberg.PrimitiveTypes.Float64},
			{ID: 37, Name: "when", Type: iceberg.PrimitiveTypes.Date},
		}}}},
		iceberg.NestedField{ID: 21, Name: "attrs", Type: &iceberg.MapType{KeyID: 38, KeyType: iceberg.PrimitiveTypes.String, ValueID: 39, ValueType: iceberg.PrimitiveTypes.Float64}},
		iceberg.NestedField{ID: 22, Name: "by_day", Type: &iceberg.MapType{KeyID: 40, KeyType: iceberg.PrimitiveTypes.Date, ValueID: 41, ValueType: iceberg.DecimalTypeOf(9, 2)}},
	)
}

// allTypesRow is row n, with an edge value in each column by n: NaN, the
// infinities, -0.0, instants before 1970, the largest decimals, escapes,
// invalid UTF-8, empty and null collections.
func allTypesRow(n int) map[string]any {
	floats := []float64{0.5, math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1e-7, 1e21, -123.25, 3, math.Pi, 1e300, -5e-324}
	ts := time.Date(1969, 12, 31, 23, 59, 58, 123456789, time.UTC).Add(time.Duration(n) * 37 * time.Hour)
	hugeDigits := []string{"99999999999999999999999999999999999999", "-12345678901234567890", "0", "-1", "9223372036854775807", "-9223372036854775808", "1000000000000000000"}
	huge, _ := decimal128.FromString(hugeDigits[n%len(hugeDigits)], 38, 0)
	names := []string{"plain", "Zoë \"q\"\n\t\\", "\xff\xfe bad", "\u2028 line", ""}
	row := map[string]any{
		"id": int64(n), "flag": n%2 == 0, "small": int32(-7 * n), "ratio": float32(floats[n%len(floats)]),
		"amount": floats[(n+3)%len(floats)], "price": decimal128.FromI64(int64(-12345 * n)), "huge": huge,
		"day": ts, "clock": int64(n) * 3_723_000_001 % 86_400_000_000, "local_ts": ts, "utc_ts": ts,
		"local_ns": arrow.Timestamp(ts.UnixNano() + int64(n)), "utc_ns": arrow.Timestamp(-ts.UnixNano()),
		"name": names[n%len(names)], "uid": uuid.UUID{byte(n), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, byte(255 - n)},
		"code": []byte{byte(n), 0, 255}, "blob": []byte(strings.Repeat("\x00\x01\xfe", n%4)),
		"address": map[string]any{"city": names[(n+1)%len(names)], "zip": int32(n), "lines": []any{"a", nil, "c"}},
		"tags":    []any{int64(n), nil, int64(-n)},
		"points":  []any{map[string]any{"x": floats[n%len(floats)], "when": ts}, nil},
		"attrs":   [][2]any{{"k", floats[(n+1)%len(floats)]}, {"nul", nil}},
		"by_day":  [][2]any{{ts, decimal128.FromI64(int64(n))}},
	}
	switch n % 5 {
	case 1: // nulls everywhere but the key
		for k := range row {
			if k != "id" {
				row[k] = nil
			}
		}
	case 2: // empty collections, a null struct field
		row["tags"], row["points"], row["attrs"], row["by_day"] = []any{}, []any{}, [][2]any{}, [][2]any{}
		row["address"] = map[string]any{"city": nil, "zip": nil, "lines": nil}
	}
	return row
}

// TestArrowPathAllTypes holds the encoders' Arrow path to the Row path on a
// table of every type: inserts, deletes and updates, held and streamed,
// keyed by a top-level and by a nested field, through every format and
// mode (replay.CheckArrowPaths).
func TestArrowPathAllTypes(t *testing.T) {
	f := newFixture(t, 3, nil, allTypesSchema())
	var rows []map[string]any
	for n := range 40 {
		rows = append(rows, allTypesRow(n))
	}
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, rows)
	})
	f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, iceberg.LessThan(iceberg.Reference("id"), int64(15)))
	})
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(25)), func(r map[string]any) map[string]any {
			r["name"], r["small"] = "updated", int32(1)
			return r
		})
	})
	before := replay.ArrowImages()
	for _, mode := range []struct {
		name string
		held int
		keys []string
	}{{"held", 0, nil}, {"streamed", 1, nil}, {"held-nested-key", 0, []string{"address.zip", "id"}}, {"streamed-nested-key", 1, []string{"address.city"}}} {
		t.Run(mode.name, func(t *testing.T) {
			src, err := source.Open(f.ctx, source.Options{CatalogType: "sql", CatalogURI: f.env.CatalogURI, Warehouse: f.env.Warehouse,
				Table: strings.Join(f.ident, "."), MaxHeldRows: mode.held, KeyFields: mode.keys})
			if err != nil {
				t.Fatal(err)
			}
			snaps, err := src.Snapshots(f.ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			ops := ""
			for _, si := range snaps {
				c, err := src.Commit(f.ctx, si)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Materialize(f.ctx); err != nil {
					t.Fatal(err)
				}
				if err := replay.CheckArrowPaths(c); err != nil {
					t.Fatalf("snapshot %d: %v", si.SequenceNumber, err)
				}
				arrow, updates := 0, 0
				for _, e := range c.Events {
					ops += e.Op.String()
					if e.AfterArrow != nil || e.BeforeArrow != nil {
						arrow++
					}
					if e.Op == cdc.OpUpdate {
						updates++
					}
				}
				// (An update's after image is read as a Row.)
				if arrow == 0 && updates < len(c.Events) {
					t.Errorf("snapshot %d (%s): no event holds an Arrow image", si.SequenceNumber, si.Operation)
				}
				ops += " "
			}
			if want := strings.Repeat("c", 40) + " " + strings.Repeat("d", 15) + " " + strings.Repeat("u", 15) + " "; ops != want {
				t.Errorf("ops %q, want %q", ops, want)
			}
		})
	}
	if replay.ArrowImages() == before {
		t.Error("no Arrow image compared")
	}
}

// TestArrowPathValues pins a few values of the Arrow path to their text,
// so that the two paths cannot agree on a wrong answer unnoticed.
func TestArrowPathValues(t *testing.T) {
	f := newFixture(t, 3, nil, allTypesSchema())
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{allTypesRow(0), allTypesRow(1), allTypesRow(2), allTypesRow(3), allTypesRow(4), allTypesRow(6)})
	})
	src := f.open()
	snaps, err := src.Snapshots(f.ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := src.Commit(f.ctx, snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Materialize(f.ctx); err != nil {
		t.Fatal(err)
	}
	enc := &debezium.JSON{}
	var all string
	for i := range c.Events {
		if c.Events[i].AfterArrow == nil {
			t.Fatalf("event %d holds no Arrow image", i)
		}
		b, err := enc.AppendValue(nil, c, &c.Events[i], 0)
		if err != nil {
			t.Fatal(err)
		}
		all += string(b) + "\n"
	}
	t.Log(all)
	for _, want := range []string{
		`"attrs":{"k":"NaN","nul":null}`, `"ratio":-0.0`, `"ratio":"Infinity"`, `"amount":"-Infinity"`, `"amount":1e-7`, `"amount":1e+21`,
		`"huge":"9999999999999999999999999999.9999999999"`, `"huge":"-0.0000000001"`, `"huge":"922337203.6854775807"`,
		`"day":"1969-12-31"`, `"local_ts":"1969-12-31T23:59:58.123456"`, `"utc_ts":"1969-12-31T23:59:58.123456Z"`,
		`"city":"Zoë \"q\"\n\t\\"`, `"name":"\ufffd\ufffd bad"`, `"name":"\u2028 line"`,
		`"uid":"00010203-0405-0607-0809-0a0b0c0d0eff"`, `"code":"AAD/"`,
		`"address":{"city":"Zoë \"q\"\n\t\\","zip":0,"lines":["a",null,"c"]}`, `"tags":[0,null,0]`,
		`"attrs":{"k":-0.0,"nul":null}`, `"by_day":[{"key":"1969-12-31","value":"0.00"}]`,
		`"address":{"city":null,"zip":null,"lines":null}`, `"tags":[]`, `"attrs":{}`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s in the events", want)
		}
	}
}
