package scenario

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/variant"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// arrowSchemaFor returns the Arrow schema that iceberg-go maps sc to (no
// field ids, regular string/binary types), with a nullable int64 _row_id
// column appended when withRowID is set.
func arrowSchemaFor(sc *iceberg.Schema, withRowID bool) (*arrow.Schema, error) {
	as, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	if !withRowID {
		return as, nil
	}
	fields := append(as.Fields(), arrow.Field{Name: iceberg.RowIDColumnName, Type: arrow.PrimitiveTypes.Int64, Nullable: true})

	return arrow.NewSchema(fields, nil), nil
}

// buildRecord turns rows (column name -> Go value) into one record batch with
// schema as. A column missing from a row, or a nil value, is a null. Every
// key of every row must name a column of as.
func buildRecord(as *arrow.Schema, rows []map[string]any) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for r, row := range rows {
		for name := range row {
			if len(as.FieldIndices(name)) == 0 {
				return nil, fmt.Errorf("row %d: no column %q in table schema", r, name)
			}
		}
		for i, f := range as.Fields() {
			if err := appendValue(b.Field(i), row[f.Name]); err != nil {
				return nil, fmt.Errorf("row %d column %s: %w", r, f.Name, err)
			}
		}
	}

	return b.NewRecordBatch(), nil
}

// RawVariant is a variant column value given as its two buffers, written
// as they are (unchecked), for tests of malformed variants.
type RawVariant struct{ Metadata, Value []byte }

// appendValue appends v to bld, accepting the Go types a test naturally
// writes for each Arrow type (any integer kind for integer columns, time.Time
// for dates and timestamps, ...).
func appendValue(bld array.Builder, v any) error {
	if v == nil {
		bld.AppendNull()

		return nil
	}
	switch b := bld.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return typeErr(v, "bool")
		}
		b.Append(x)
	case *array.Int32Builder:
		x, ok := toInt64(v)
		if !ok {
			return typeErr(v, "int32")
		}
		b.Append(int32(x))
	case *array.Int64Builder:
		x, ok := toInt64(v)
		if !ok {
			return typeErr(v, "int64")
		}
		b.Append(x)
	case *array.Float32Builder:
		x, ok := toFloat64(v)
		if !ok {
			return typeErr(v, "float32")
		}
		b.Append(float32(x))
	case *array.Float64Builder:
		x, ok := toFloat64(v)
		if !ok {
			return typeErr(v, "float64")
		}
		b.Append(x)
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return typeErr(v, "string")
		}
		b.Append(x)
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return typeErr(v, "[]byte")
		}
		b.Append(x)
	case *array.Decimal128Builder:
		x, ok := v.(decimal128.Num)
		if !ok {
			return typeErr(v, "decimal128.Num")
		}
		b.Append(x)
	case *array.FixedSizeBinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return typeErr(v, "[]byte")
		}
		b.Append(x)
	case *extensions.UUIDBuilder:
		x, ok := v.(uuid.UUID)
		if !ok {
			return typeErr(v, "uuid.UUID")
		}
		b.Append(x)
	case *array.Date32Builder, *array.TimestampBuilder, *array.Time64Builder:
		return appendTemporal(bld, v)
	case *extensions.VariantBuilder, *array.StructBuilder, *array.MapBuilder, *array.ListBuilder:
		return appendNested(bld, v)
	default:
		return appendGeo(bld, v)
	}

	return nil
}

// appendTemporal is appendValue for dates, timestamps and times.
func appendTemporal(bld array.Builder, v any) error {
	switch b := bld.(type) {
	case *array.Date32Builder:
		switch x := v.(type) {
		case arrow.Date32:
			b.Append(x)
		case time.Time:
			b.Append(arrow.Date32FromTime(x))
		default:
			return typeErr(v, "arrow.Date32 or time.Time")
		}
	case *array.TimestampBuilder:
		unit := b.Type().(*arrow.TimestampType).Unit
		switch x := v.(type) {
		case arrow.Timestamp:
			b.Append(x)
		case time.Time:
			ts, err := arrow.TimestampFromTime(x, unit)
			if err != nil {
				return err
			}
			b.Append(ts)
		default:
			return typeErr(v, "arrow.Timestamp or time.Time")
		}
	case *array.Time64Builder:
		switch x := v.(type) {
		case arrow.Time64:
			b.Append(x)
		case int64: // microseconds since midnight
			b.Append(arrow.Time64(x))
		default:
			return typeErr(v, "arrow.Time64 or int64 microseconds")
		}
	}

	return nil
}

// appendNested is appendValue for variants and nested types.
func appendNested(bld array.Builder, v any) error {
	switch b := bld.(type) {
	case *extensions.VariantBuilder:
		if raw, ok := v.(RawVariant); ok {
			sb := b.StorageBuilder().(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.BinaryBuilder).Append(raw.Metadata)
			sb.FieldBuilder(1).(*array.BinaryBuilder).Append(raw.Value)
			return nil
		}
		x, ok := v.(variant.Value)
		if !ok {
			return typeErr(v, "variant.Value")
		}
		b.Append(x)
	case *array.StructBuilder:
		x, ok := v.(map[string]any)
		if !ok {
			return typeErr(v, "map[string]any")
		}
		b.Append(true)
		st := b.Type().(*arrow.StructType)
		for k := range st.NumFields() {
			if err := appendValue(b.FieldBuilder(k), x[st.Field(k).Name]); err != nil {
				return fmt.Errorf("field %s: %w", st.Field(k).Name, err)
			}
		}
	case *array.MapBuilder:
		x, ok := v.([][2]any)
		if !ok {
			return typeErr(v, "[][2]any")
		}
		b.Append(true)
		for _, kv := range x {
			if err := appendValue(b.KeyBuilder(), kv[0]); err != nil {
				return err
			}
			if err := appendValue(b.ItemBuilder(), kv[1]); err != nil {
				return err
			}
		}
	case *array.ListBuilder:
		x, ok := v.([]any)
		if !ok {
			return typeErr(v, "[]any")
		}
		b.Append(true)
		for _, e := range x {
			if err := appendValue(b.ValueBuilder(), e); err != nil {
				return err
			}
		}
	}

	return nil
}

// appendGeo appends a geometry or geography value: these columns are
// geoarrow WKB extension arrays, whose builders take a value as hex text.
func appendGeo(bld array.Builder, v any) error {
	if x, ok := v.([]byte); ok {
		if et, ok := bld.Type().(arrow.ExtensionType); ok && et.StorageType().ID() == arrow.BINARY {
			return bld.AppendValueFromString(hex.EncodeToString(x))
		}
	}
	return fmt.Errorf("arrow type %s not supported by scenario rows", bld.Type())
}

func typeErr(v any, want string) error {
	return fmt.Errorf("value %v (%T): want %s", v, v, want)
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	default:
		return 0, false
	}
}

func toFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	default:
		return 0, false
	}
}

// valueAt returns the Go value of arr at row i: nil for null; int32, int64,
// float32, float64, string, []byte (a copy), bool for the primitive types;
// arrow.Date32, arrow.Timestamp (in the column's unit, microseconds for
// Iceberg), arrow.Time64, decimal128.Num and uuid.UUID as Arrow gives them;
// map[string]any for a struct, []any for a list, [][2]any for a map (the
// forms appendValue takes back); for any other type the value arrow-go
// produces for JSON marshalling.
func valueAt(arr arrow.Array, i int) any {
	// arrow-go takes a variant null for a null; it is a value.
	if va, ok := arr.(*extensions.VariantArray); ok && !va.Storage().IsNull(i) {
		v, err := va.Value(i)
		if err != nil {
			return err
		}
		return v.Clone()
	}
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *extensions.UUIDArray:
		return a.Value(i)
	case array.ExtensionArray: // geometry, geography: WKB
		return valueAt(a.Storage(), i)
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		m := make(map[string]any, st.NumFields())
		for k := range st.NumFields() {
			m[st.Field(k).Name] = valueAt(a.Field(k), i)
		}
		return m
	case *array.Map:
		start, end := a.ValueOffsets(i)
		out := make([][2]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, [2]any{valueAt(a.Keys(), int(j)), valueAt(a.Items(), int(j))})
		}
		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, valueAt(a.ListValues(), int(j)))
		}
		return out
	case *array.Boolean:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...)
	case *array.LargeBinary:
		return append([]byte(nil), a.Value(i)...)
	case *array.FixedSizeBinary:
		return append([]byte(nil), a.Value(i)...)
	case *array.Date32:
		return a.Value(i)
	case *array.Timestamp:
		return a.Value(i)
	case *array.Time64:
		return a.Value(i)
	case *array.Decimal128:
		return a.Value(i)
	default:
		return arr.GetOneForMarshal(i)
	}
}
