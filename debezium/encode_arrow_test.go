package debezium

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// arrowCase is a column of Arrow type dt (values in arrow-go's JSON form)
// read as Iceberg type typ: the pairs a file can give for a type
// (promotions, other units, other string and binary layouts) and pairs the
// Arrow path does not handle, which must fall back to the Row path.
type arrowCase struct {
	typ  iceberg.Type
	dt   arrow.DataType
	vals string
}

func arrowCases() []arrowCase {
	ts := func(u arrow.TimeUnit) arrow.DataType { return &arrow.TimestampType{Unit: u} }
	ints := `[0, 1, -1, 2147483647, -2147483648, null, 2932897]`
	bigs := `[0, 1, -1, 9223372036854775807, -9223372036854775808, null, 86400000000, -5]`
	floats := `[0.5, -0.0, 1e-7, 1e21, 3.4e38, -123.25, null, 0.1, 3.141592653589793]`
	strs := `["plain", "Zoë \"q\"\n", "", null, "\u2028"]`
	bins := `["AAEC/w==", "", null, "AAECAwQFBgcICQoLDA0ODw==", "AQID"]`
	decs := `["0.00", "-123.45", "9999999.99", null, "-0.01"]`
	hugeDecs := `["0", "99999999999999999999999999999999999999", "-12345678901234567890", "9223372036854775807", "-9223372036854775808", "999999999999999999", "-1000000000000000000", null]`
	st := &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 101, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
		{ID: 102, Name: "b", Type: iceberg.PrimitiveTypes.String, Required: true},
		{ID: 103, Name: "gone", Type: iceberg.PrimitiveTypes.Date},
	}}
	stArrow := arrow.StructOf(arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}, arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	return []arrowCase{
		{iceberg.PrimitiveTypes.Bool, arrow.FixedWidthTypes.Boolean, `[true, false, null]`},
		{iceberg.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int32, ints},
		{iceberg.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, bigs},
		{iceberg.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int64, bigs},
		{iceberg.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, ints}, // int promoted to long
		{iceberg.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float32, floats},
		{iceberg.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64, floats}, // not a fit: the Row path's error
		{iceberg.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float64, floats},
		{iceberg.PrimitiveTypes.Float64, arrow.PrimitiveTypes.Float32, floats}, // float promoted to double
		{iceberg.DecimalTypeOf(9, 2), &arrow.Decimal128Type{Precision: 9, Scale: 2}, decs},
		{iceberg.DecimalTypeOf(9, 2), &arrow.Decimal128Type{Precision: 9, Scale: 3}, `["1.000", null]`}, // scale differs
		{iceberg.DecimalTypeOf(4, 2), &arrow.Decimal128Type{Precision: 9, Scale: 2}, decs},              // too many digits
		{iceberg.DecimalTypeOf(38, 0), &arrow.Decimal128Type{Precision: 38, Scale: 0}, hugeDecs},
		{iceberg.PrimitiveTypes.Date, arrow.FixedWidthTypes.Date32, `[0, -1, 19000, -719528, 2932897, null]`},
		{iceberg.PrimitiveTypes.Date, arrow.PrimitiveTypes.Int32, ints},
		{iceberg.PrimitiveTypes.Time, arrow.FixedWidthTypes.Time64us, `[0, 86399999999, 3723000001, null]`},
		{iceberg.PrimitiveTypes.Time, arrow.FixedWidthTypes.Time64ns, `[0, 86399999999999, 3723000001999, null]`},
		{iceberg.PrimitiveTypes.Time, arrow.PrimitiveTypes.Int64, `[86400000000, -1, 0]`}, // not a fit
		{iceberg.PrimitiveTypes.Timestamp, ts(arrow.Microsecond), bigs},
		{iceberg.PrimitiveTypes.Timestamp, ts(arrow.Nanosecond), bigs},
		{iceberg.PrimitiveTypes.Timestamp, ts(arrow.Millisecond), `[0, -1, 1700000000123, null]`},
		{iceberg.PrimitiveTypes.Timestamp, ts(arrow.Second), `[0, -1, 1700000000, null]`},
		{iceberg.PrimitiveTypes.TimestampTz, ts(arrow.Microsecond), bigs},
		{iceberg.PrimitiveTypes.TimestampNs, ts(arrow.Nanosecond), bigs},
		{iceberg.PrimitiveTypes.TimestampNs, ts(arrow.Microsecond), `[0, -1, 1700000000123456, null]`},
		{iceberg.PrimitiveTypes.TimestampTzNs, ts(arrow.Nanosecond), bigs},
		{iceberg.PrimitiveTypes.TimestampTzNs, ts(arrow.Millisecond), `[0, -1, 1700000000123, null]`},
		{iceberg.PrimitiveTypes.String, arrow.BinaryTypes.String, strs},
		{iceberg.PrimitiveTypes.String, arrow.BinaryTypes.LargeString, strs},
		{iceberg.PrimitiveTypes.String, arrow.BinaryTypes.StringView, strs},
		{iceberg.PrimitiveTypes.String, arrow.BinaryTypes.Binary, bins},
		{iceberg.PrimitiveTypes.Binary, arrow.BinaryTypes.Binary, bins},
		{iceberg.PrimitiveTypes.Binary, arrow.BinaryTypes.LargeBinary, bins},
		{iceberg.PrimitiveTypes.Binary, arrow.BinaryTypes.BinaryView, bins},
		{iceberg.PrimitiveTypes.Binary, arrow.BinaryTypes.String, strs}, // not a fit
		{iceberg.FixedTypeOf(3), &arrow.FixedSizeBinaryType{ByteWidth: 3}, `["AQID", null, "AAAA"]`},
		{iceberg.FixedTypeOf(3), arrow.BinaryTypes.Binary, bins}, // lengths other than 3: the Row path's error
		{iceberg.PrimitiveTypes.UUID, extensions.NewUUIDType(), `["00010203-0405-0607-0809-0a0b0c0d0e0f", null]`},
		{iceberg.PrimitiveTypes.UUID, &arrow.FixedSizeBinaryType{ByteWidth: 16}, `["AAECAwQFBgcICQoLDA0ODw==", null]`},
		{iceberg.PrimitiveTypes.UUID, arrow.BinaryTypes.Binary, bins},
		{iceberg.PrimitiveTypes.String, extensions.NewUUIDType(), `["00010203-0405-0607-0809-0a0b0c0d0e0f"]`}, // not a fit
		{st, stArrow, `[{"a": 1, "b": "x"}, {"a": null, "b": null}, null, {"a": 9223372036854775807, "b": "z"}]`},
		{&iceberg.ListType{ElementID: 104, Element: iceberg.PrimitiveTypes.Float64}, arrow.ListOf(arrow.PrimitiveTypes.Float32), `[[0.5, null, -0.0], [], null]`},
		{&iceberg.ListType{ElementID: 104, Element: iceberg.PrimitiveTypes.Int32, ElementRequired: true}, arrow.LargeListOf(arrow.PrimitiveTypes.Int32), `[[1, null, 3], [], null]`},
		{&iceberg.ListType{ElementID: 104, Element: iceberg.PrimitiveTypes.Int64}, arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int64), `[[1, null], [3, 4], null]`},
		{&iceberg.ListType{ElementID: 104, Element: iceberg.PrimitiveTypes.Date}, arrow.ListOf(arrow.PrimitiveTypes.Int64), `[[1, 2]]`}, // not a fit
		{&iceberg.MapType{KeyID: 105, KeyType: iceberg.PrimitiveTypes.String, ValueID: 106, ValueType: iceberg.DecimalTypeOf(9, 2)},
			arrow.MapOf(arrow.BinaryTypes.String, &arrow.Decimal128Type{Precision: 9, Scale: 2}),
			`[[{"key": "a", "value": "1.50"}, {"key": "b", "value": null}], [], null]`},
		{&iceberg.MapType{KeyID: 105, KeyType: iceberg.PrimitiveTypes.Date, ValueID: 106, ValueType: iceberg.PrimitiveTypes.String, ValueRequired: true},
			arrow.MapOf(arrow.FixedWidthTypes.Date32, arrow.BinaryTypes.String),
			`[[{"key": 1, "value": "x"}, {"key": -1, "value": null}], [], null]`},
		{&iceberg.MapType{KeyID: 105, KeyType: iceberg.PrimitiveTypes.String, ValueID: 106, ValueType: iceberg.PrimitiveTypes.Int64},
			arrow.MapOf(arrow.BinaryTypes.Binary, arrow.PrimitiveTypes.Int32),
			`[[{"key": "AQID", "value": 7}], []]`}, // binary keys read as strings: the Row path
		{iceberg.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int16, `[1, null]`},           // not a fit
		{iceberg.PrimitiveTypes.Int64, arrow.Null, `[null, null]`},                        // not a fit
		{iceberg.PrimitiveTypes.Int64, arrow.FixedWidthTypes.Boolean, `[true]`},           // not a fit
		{iceberg.PrimitiveTypes.Date, arrow.FixedWidthTypes.Timestamp_us, `[1, null]`},    // not a fit
		{iceberg.PrimitiveTypes.Int32, arrow.ListOf(arrow.PrimitiveTypes.Int32), `[[1]]`}, // not a fit
	}
}

// TestArrowPathMatchesRowPath encodes every value of every case, as a
// nullable and as a required field, as an insert's after image, a delete's
// before image and a key, through every format and mode, from the Arrow
// columns and from the Row they make: same bytes or same error. A column
// the file lacks and an event of another schema are covered too.
func TestArrowPathMatchesRowPath(t *testing.T) {
	encs := []cdc.Encoder{&JSON{Envelope: Envelope{Pipeline: "p", Version: "v"}}}
	for _, tp := range []TimePrecisionMode{TimeAdaptive, TimeConnect, TimeISOString} {
		for _, dm := range []DecimalHandlingMode{DecimalPrecise, DecimalString, DecimalDouble} {
			f, err := NewConnectJSON(Envelope{}, ConnectOptions{TimePrecision: tp, DecimalHandling: dm})
			if err != nil {
				t.Fatal(err)
			}
			encs = append(encs, f)
		}
	}
	fallbacks, fits := 0, 0
	for n, tc := range arrowCases() {
		arr, _, err := array.FromJSON(memory.DefaultAllocator, tc.dt, strings.NewReader(tc.vals))
		if err != nil {
			t.Fatalf("case %d (%s as %s): %v", n, tc.dt, tc.typ, err)
		}
		if values.ArrowFits(arr, tc.typ) {
			fits++
		}
		for _, required := range []bool{false, true} {
			sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
				iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
				iceberg.NestedField{ID: 2, Name: "v", Type: tc.typ, Required: required},
				iceberg.NestedField{ID: 3, Name: "missing", Type: iceberg.PrimitiveTypes.String},
			)
			ids := make([]int64, arr.Len())
			for i := range ids {
				ids[i] = int64(i)
			}
			idb := array.NewInt64Builder(memory.DefaultAllocator)
			idb.AppendValues(ids, nil)
			img := cdc.NewArrowRows(sc, []arrow.Array{idb.NewArray(), arr, nil})
			other := iceberg.NewSchemaWithIdentifiers(0, []int{1}, sc.Fields()...)
			for _, schema := range []*iceberg.Schema{sc, other} {
				for _, keys := range [][]string{nil, {"id"}, {"v", "id"}} {
					c := &cdc.Commit{Table: cdc.TableInfo{Namespace: "ns", Name: "t", UUID: "u", Schema: schema, KeyFields: keys}}
					for i := range arr.Len() {
						for _, e := range []cdc.Event{
							{Op: cdc.OpCreate, RowID: int64(i), AfterArrow: img, AfterPos: i},
							{Op: cdc.OpDelete, RowID: int64(i), BeforeArrow: img, BeforePos: i},
							{Op: cdc.OpSnapshot, RowID: int64(i), AfterArrow: img, AfterPos: i},
							{Op: cdc.OpUpdate, RowID: int64(i), BeforeArrow: img, BeforePos: (i + 1) % arr.Len(), AfterArrow: img, AfterPos: i},
						} {
							rows := e
							if err := rows.MaterializeRows(); err != nil {
								if values.ArrowFits(arr, tc.typ) {
									t.Fatalf("case %d: %s fits %s but row %d fails: %v", n, tc.dt, tc.typ, i, err)
								}
								fallbacks++
								continue
							}
							for _, enc := range encs {
								for _, part := range []string{"key", "value"} {
									encode := func(ev *cdc.Event) ([]byte, error) {
										if part == "key" {
											return enc.AppendKey([]byte("x"), c, ev)
										}
										return enc.AppendValue([]byte("x"), c, ev, 7)
									}
									a, aerr := encode(&e)
									r, rerr := encode(&rows)
									if fmt.Sprint(aerr) != fmt.Sprint(rerr) || !bytes.Equal(a, r) {
										t.Fatalf("case %d (%s as %s, required %v, keys %v), row %d, %s, %T %s:\narrow %s (%v)\nrow   %s (%v)",
											n, tc.dt, tc.typ, required, keys, i, e.Op, enc, part, a, aerr, r, rerr)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if fits == 0 || fallbacks == 0 {
		t.Errorf("%d cases fit, %d values failed to convert: the cases miss one side", fits, fallbacks)
	}
}

// benchArrowCommit is benchCommit with the rows held as Arrow columns.
func benchArrowCommit(n int) *cdc.Commit {
	c := benchCommit(n)
	ids := array.NewInt64Builder(memory.DefaultAllocator)
	cust := array.NewStringBuilder(memory.DefaultAllocator)
	status := array.NewStringBuilder(memory.DefaultAllocator)
	amount := array.NewFloat64Builder(memory.DefaultAllocator)
	for i := range n {
		r := benchRow(i)
		ids.Append(r[0].(int64))
		cust.Append(r[1].(string))
		status.Append(r[2].(string))
		amount.Append(r[3].(float64))
	}
	img := cdc.NewArrowRows(benchSchema, []arrow.Array{ids.NewArray(), cust.NewArray(), status.NewArray(), amount.NewArray()})
	for i := range c.Events {
		c.Events[i].After, c.Events[i].AfterArrow, c.Events[i].AfterPos = nil, img, i
	}
	return c
}

// BenchmarkEncodeImage compares the encoding of an insert from a Row
// (which the source boxed value by value) and from Arrow columns.
func BenchmarkEncodeImage(b *testing.B) {
	for _, tc := range []struct {
		name string
		c    *cdc.Commit
	}{{"row", benchCommit(4096)}, {"arrow", benchArrowCommit(4096)}} {
		b.Run(tc.name, func(b *testing.B) {
			f := &JSON{Envelope: Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}}
			buf := make([]byte, 0, 4096)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var err error
				if buf, err = f.AppendValue(buf[:0], tc.c, &tc.c.Events[i%len(tc.c.Events)], 1_717_331_701_234); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
