package debezium

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// oneColumn is a schema with a single optional field "v" of type t.
func oneColumn(t iceberg.Type) *iceberg.Schema {
	return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: t})
}

func TestAppendRowValues(t *testing.T) {
	str := iceberg.PrimitiveTypes.String
	cases := []struct {
		name string
		typ  iceberg.Type
		v    any
		want string
	}{
		{"null of any type", iceberg.DecimalTypeOf(9, 2), nil, `null`},
		{"negative decimal", iceberg.DecimalTypeOf(9, 2), values.Decimal{Unscaled: "-12345", Scale: 2}, `"-123.45"`},
		{"small negative decimal", iceberg.DecimalTypeOf(9, 2), values.Decimal{Unscaled: "-5", Scale: 2}, `"-0.05"`},
		{"decimal scale 0", iceberg.DecimalTypeOf(5, 0), values.Decimal{Unscaled: "7", Scale: 0}, `"7"`},
		{"pre-1970 date", iceberg.PrimitiveTypes.Date, values.Date(-1), `"1969-12-31"`},
		{"pre-1970 timestamp", iceberg.PrimitiveTypes.Timestamp, values.Timestamp(-1_500_000), `"1969-12-31T23:59:58.500000"`},
		{"pre-1970 timestamptz", iceberg.PrimitiveTypes.TimestampTz, values.TimestampTZ(-1), `"1969-12-31T23:59:59.999999Z"`},
		{"pre-1970 timestamp_ns", iceberg.PrimitiveTypes.TimestampNs, values.TimestampNano(-1), `"1969-12-31T23:59:59.999999999"`},
		{"timestamptz_ns", iceberg.PrimitiveTypes.TimestampTzNs, values.TimestampTZNano(1), `"1970-01-01T00:00:00.000000001Z"`},
		{"string escaping", str, "a\"b\\c\nd\x00\xff", `"a\"b\\c\nd\u0000\ufffd"`},
		{"empty string", str, "", `""`},
		{"empty list", &iceberg.ListType{ElementID: 2, Element: str}, []any{}, `[]`},
		{"nil list is empty", &iceberg.ListType{ElementID: 2, Element: str}, []any(nil), `[]`},
		{"list of lists", &iceberg.ListType{ElementID: 2, Element: &iceberg.ListType{ElementID: 3,
			Element: iceberg.PrimitiveTypes.Int32}}, []any{[]any{int32(1)}, nil, []any{}}, `[[1],null,[]]`},
		{"empty string map", &iceberg.MapType{KeyID: 2, KeyType: str, ValueID: 3, ValueType: str},
			[]values.MapEntry{}, `{}`},
		{"empty int map", &iceberg.MapType{KeyID: 2, KeyType: iceberg.PrimitiveTypes.Int64, ValueID: 3,
			ValueType: str}, []values.MapEntry{}, `[]`},
		{"uuid map keys", &iceberg.MapType{KeyID: 2, KeyType: iceberg.PrimitiveTypes.UUID, ValueID: 3,
			ValueType: iceberg.PrimitiveTypes.Bool}, []values.MapEntry{{Key: values.UUID{1}, Value: true}},
			`[{"key":"01000000-0000-0000-0000-000000000000","value":true}]`},
		{"empty binary", iceberg.PrimitiveTypes.Binary, []byte{}, `""`},
		{"fixed", iceberg.FixedTypeOf(2), []byte{0xff, 0xee}, `"/+4="`},
		{"unknown type is null", iceberg.UnknownType{}, nil, `null`},
		{"float NaN", iceberg.PrimitiveTypes.Float32, float32(math.NaN()), `"NaN"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&JSON{}).AppendRow(nil, oneColumn(tc.typ), values.Row{tc.v})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"v":` + tc.want + `}`; string(got) != want {
				t.Errorf("got %s, want %s", got, want)
			}
		})
	}
}

func TestAppendRowFieldNames(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: `we"ird`, Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "ünï\ncode", Type: iceberg.PrimitiveTypes.Int32},
	)
	got, err := (&JSON{}).AppendRow([]byte("prefix "), sc, values.Row{int32(1), int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `prefix {"we\"ird":1,"ünï\ncode":2}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestAppendRowErrors(t *testing.T) {
	str := iceberg.PrimitiveTypes.String
	nested := &iceberg.StructType{FieldList: []iceberg.NestedField{
		{ID: 10, Name: "geo", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 11, Name: "lat", Type: iceberg.PrimitiveTypes.Float64},
		}}},
	}}
	cases := []struct {
		name string
		typ  iceberg.Type
		v    any
		want string
	}{
		{"double", iceberg.PrimitiveTypes.Float64, "12.5", `field "v": want float64 for double, got string`},
		{"float", iceberg.PrimitiveTypes.Float32, 1.5, `field "v": want float32 for float, got float64`},
		{"int", iceberg.PrimitiveTypes.Int32, int64(1), `field "v": want int32 for int, got int64`},
		{"long", iceberg.PrimitiveTypes.Int64, 1, `field "v": want int64 for long, got int`},
		{"bool", iceberg.PrimitiveTypes.Bool, "true", `field "v": want bool for boolean, got string`},
		{"string", str, []byte("x"), `field "v": want string for string, got []uint8`},
		{"date", iceberg.PrimitiveTypes.Date, int32(1), `field "v": want values.Date for date, got int32`},
		{"time", iceberg.PrimitiveTypes.Time, values.Timestamp(1), `field "v": want values.Time for time, got values.Timestamp`},
		{"timestamp", iceberg.PrimitiveTypes.Timestamp, values.TimestampTZ(1),
			`field "v": want values.Timestamp for timestamp, got values.TimestampTZ`},
		{"timestamptz", iceberg.PrimitiveTypes.TimestampTz, time.Time{},
			`field "v": want values.TimestampTZ for timestamptz, got time.Time`},
		{"timestamp_ns", iceberg.PrimitiveTypes.TimestampNs, values.Timestamp(1),
			`field "v": want values.TimestampNano for timestamp_ns, got values.Timestamp`},
		{"timestamptz_ns", iceberg.PrimitiveTypes.TimestampTzNs, values.TimestampNano(1),
			`field "v": want values.TimestampTZNano for timestamptz_ns, got values.TimestampNano`},
		{"uuid", iceberg.PrimitiveTypes.UUID, "f81d4fae-7dec-11d0-a765-00a0c91e6bf6",
			`field "v": want values.UUID for uuid, got string`},
		{"binary", iceberg.PrimitiveTypes.Binary, "x", `field "v": want []byte for binary, got string`},
		{"fixed type", iceberg.FixedTypeOf(4), values.UUID{}, `field "v": want []byte for fixed[4], got values.UUID`},
		{"fixed length", iceberg.FixedTypeOf(4), []byte{1, 2, 3}, `field "v": want 4 bytes for fixed[4], got 3 bytes`},
		{"decimal type", iceberg.DecimalTypeOf(9, 2), 1.5, `field "v": want values.Decimal for decimal(9, 2), got float64`},
		{"decimal scale", iceberg.DecimalTypeOf(9, 2), values.Decimal{Unscaled: "1234", Scale: 3},
			`field "v": want scale 2 for decimal(9, 2), got scale 3`},
		{"decimal digits", iceberg.DecimalTypeOf(9, 2), values.Decimal{Unscaled: "12.5", Scale: 2},
			`field "v": want unscaled base-10 digits for decimal(9, 2), got "12.5"`},
		{"decimal precision", iceberg.DecimalTypeOf(4, 2), values.Decimal{Unscaled: "-12345", Scale: 2},
			`field "v": want at most 4 digits for decimal(4, 2), got 5 digits`},
		{"time range", iceberg.PrimitiveTypes.Time, values.Time(86_400_000_000),
			`field "v": want microseconds in [0, 86400000000) for time, got 86400000000`},
		{"negative time", iceberg.PrimitiveTypes.Time, values.Time(-1),
			`field "v": want microseconds in [0, 86400000000) for time, got -1`},
		{"unknown type", iceberg.UnknownType{}, int32(0), `field "v": want nil for unknown, got int32`},
		{"variant", iceberg.VariantType{}, []byte{0}, `field "v": want values.VariantJSON for variant, got []uint8`},
		{"struct type", nested, map[string]any{}, `field "v": want values.Row for struct<`},
		{"struct arity", nested, values.Row{values.Row{1.0}, 2}, `field "v": want 1 values for struct<`},
		{"nested struct", nested, values.Row{values.Row{"north"}}, `field "v.geo.lat": want float64 for double, got string`},
		{"list type", &iceberg.ListType{ElementID: 2, Element: str}, []string{"a"},
			`field "v": want []any for list<string>, got []string`},
		{"list element", &iceberg.ListType{ElementID: 2, Element: str}, []any{"a", nil, 3},
			`field "v[2]": want string for string, got int`},
		{"list of structs", &iceberg.ListType{ElementID: 2, Element: nested}, []any{values.Row{nil}, values.Row{values.Row{true}}},
			`field "v[1].geo.lat": want float64 for double, got bool`},
		{"map type", &iceberg.MapType{KeyID: 2, KeyType: str, ValueID: 3, ValueType: str},
			map[string]string{}, `field "v": want []values.MapEntry for map<string, string>, got map[string]string`},
		{"map null string key", &iceberg.MapType{KeyID: 2, KeyType: str, ValueID: 3, ValueType: str},
			[]values.MapEntry{{Key: "a", Value: "b"}, {Key: nil, Value: "c"}}, `field "v[1].key": want string for string, got <nil>`},
		{"map value", &iceberg.MapType{KeyID: 2, KeyType: str, ValueID: 3, ValueType: iceberg.PrimitiveTypes.Int64},
			[]values.MapEntry{{Key: "a", Value: int32(1)}}, `field "v[0].value": want int64 for long, got int32`},
		{"map int key", &iceberg.MapType{KeyID: 2, KeyType: iceberg.PrimitiveTypes.Int32, ValueID: 3, ValueType: str},
			[]values.MapEntry{{Key: int64(1), Value: "a"}}, `field "v[0].key": want int32 for int, got int64`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("kept")
			got, err := (&JSON{}).AppendRow(dst, oneColumn(tc.typ), values.Row{tc.v})
			if err == nil {
				t.Fatalf("no error; encoded %s", got)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error %q, want prefix %q", err, tc.want)
			}
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Errorf("error %T is not a *ValueError", err)
			}
			if string(got) != "kept" {
				t.Errorf("dst = %q after an error, want it unchanged", got)
			}
		})
	}

	sc := oneColumn(str)
	if _, err := (&JSON{}).AppendRow(nil, sc, values.Row{"a", "b"}); err == nil || err.Error() != "row: want 1 values for struct, got 2" {
		t.Errorf("long row: %v", err)
	}
	if _, err := (&JSON{}).AppendRow(nil, nil, values.Row{}); err == nil {
		t.Error("nil schema: no error")
	}
}

// TestJSONSchemaCache checks that a compiled schema is shared by lookups
// of one encoder, not by another encoder, and that the cache stays within
// its bound however many schemas come.
func TestJSONSchemaCache(t *testing.T) {
	var a, b JSON
	sc := allTypesSchema()
	if a.schemas.get(sc) != a.schemas.get(sc) {
		t.Fatal("a schema compiled twice")
	}
	if a.schemas.get(sc) == b.schemas.get(sc) {
		t.Fatal("two encoders share a compiled schema")
	}
	for range schemaCacheMax + 10 {
		a.schemas.get(oneColumn(iceberg.PrimitiveTypes.Int64))
		if n := len(*a.schemas.schemas.Load()); n > schemaCacheMax {
			t.Fatalf("%d schemas cached, want at most %d", n, schemaCacheMax)
		}
	}
}

// TestAppendRowConcurrent runs encoders of several schemas at once, for the
// race detector: the encoder and its cache are shared by all goroutines.
func TestAppendRowConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	enc := &JSON{}
	for g := range 8 {
		wg.Go(func() {
			var buf []byte
			for i := range 200 {
				sc := benchSchema
				if (g+i)%3 == 0 {
					sc = oneColumn(iceberg.PrimitiveTypes.Int64)
					var err error
					if buf, err = enc.AppendRow(buf[:0], sc, values.Row{int64(i)}); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				var err error
				if buf, err = enc.AppendRow(buf[:0], sc, benchRow(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
