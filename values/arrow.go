package values

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
)

// ArrowValue converts the value at row i of arr, an array of Iceberg type
// typ, to the Go value Row documents. A value whose Arrow type does not fit
// typ is an error naming both: icecdc never guesses a value.
func ArrowValue(arr arrow.Array, i int, typ iceberg.Type) (any, error) {
	if va, ok := arr.(*extensions.VariantArray); ok && !va.Storage().IsNull(i) {
		// arrow-go takes a variant null for a null; it is a value
		// (JSON null), unlike a null column.
		if _, ok := typ.(iceberg.VariantType); ok {
			return variantAt(va, i)
		}
	}
	if arr.IsNull(i) {
		return nil, nil
	}
	if ext, ok := arr.(array.ExtensionArray); ok {
		if u, ok := arr.(*extensions.UUIDArray); ok {
			var out UUID
			copy(out[:], u.Storage().(*array.FixedSizeBinary).Value(i))
			return out, nil
		}
		if va, ok := arr.(*extensions.VariantArray); ok {
			if _, ok := typ.(iceberg.VariantType); !ok {
				return nil, fmt.Errorf("variant value for %s", typ)
			}
			return variantAt(va, i)
		}
		arr = ext.Storage()
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i), nil
	case *array.Int32:
		switch typ.(type) {
		case iceberg.DateType:
			return Date(a.Value(i)), nil
		case iceberg.Int64Type: // a file written before int was promoted to long
			return int64(a.Value(i)), nil
		}
		return a.Value(i), nil
	case *array.Int64:
		switch typ.(type) {
		case iceberg.Int32Type:
			return int32(a.Value(i)), nil
		}
		return a.Value(i), nil
	case *array.Float32:
		if _, ok := typ.(iceberg.Float64Type); ok { // float promoted to double
			return float64(a.Value(i)), nil
		}
		return a.Value(i), nil
	case *array.Float64:
		return a.Value(i), nil
	case *array.String:
		return a.Value(i), nil
	case *array.LargeString:
		return a.Value(i), nil
	case *array.StringView:
		return a.Value(i), nil
	case *array.Binary:
		return cloneBytes(a.Value(i), typ)
	case *array.LargeBinary:
		return cloneBytes(a.Value(i), typ)
	case *array.BinaryView:
		return cloneBytes(a.Value(i), typ)
	case *array.FixedSizeBinary:
		return cloneBytes(a.Value(i), typ)
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return Decimal{Unscaled: a.Value(i).BigInt().String(), Scale: int(dt.Scale)}, nil
	case *array.Date32:
		return Date(a.Value(i)), nil
	case *array.Time64:
		return Time(TimeMicros(a, i)), nil
	case *array.Timestamp:
		return timestampValue(a, i, typ)
	case *array.Struct:
		st, ok := typ.(*iceberg.StructType)
		if !ok {
			return nil, fmt.Errorf("struct value for %s", typ)
		}
		return structValue(a, i, st)
	case array.ListLike:
		switch t := typ.(type) {
		case *iceberg.ListType:
			return listValue(a, i, t)
		case *iceberg.MapType:
			m, ok := arr.(*array.Map)
			if !ok {
				return nil, fmt.Errorf("arrow %s for %s", arr.DataType(), typ)
			}
			return mapValue(m, i, t)
		}
	}
	return nil, fmt.Errorf("arrow %s for iceberg %s not supported", arr.DataType(), typ)
}

// timestampValue converts a timestamp of any unit to the microseconds or
// nanoseconds of typ.
func timestampValue(a *array.Timestamp, i int, typ iceberg.Type) (any, error) {
	unit := a.DataType().(*arrow.TimestampType).Unit
	v := int64(a.Value(i))
	switch typ.(type) {
	case iceberg.TimestampType:
		return Timestamp(ToMicros(v, unit)), nil
	case iceberg.TimestampTzType:
		return TimestampTZ(ToMicros(v, unit)), nil
	case iceberg.TimestampNsType:
		return TimestampNano(ToNanos(v, unit)), nil
	case iceberg.TimestampTzNsType:
		return TimestampTZNano(ToNanos(v, unit)), nil
	}
	return nil, fmt.Errorf("timestamp value for %s", typ)
}

func listValue(a array.ListLike, i int, lt *iceberg.ListType) (any, error) {
	start, end := a.ValueOffsets(i)
	vals := a.ListValues()
	out := make([]any, 0, end-start)
	for j := start; j < end; j++ {
		v, err := ArrowValue(vals, int(j), lt.Element)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func mapValue(m *array.Map, i int, mt *iceberg.MapType) (any, error) {
	start, end := m.ValueOffsets(i)
	out := make([]MapEntry, 0, end-start)
	for j := start; j < end; j++ {
		k, err := ArrowValue(m.Keys(), int(j), mt.KeyType)
		if err != nil {
			return nil, err
		}
		v, err := ArrowValue(m.Items(), int(j), mt.ValueType)
		if err != nil {
			return nil, err
		}
		out = append(out, MapEntry{Key: k, Value: v})
	}
	return out, nil
}

// ArrowFits reports whether ArrowValue succeeds for every value of arr
// read as typ, so that a reader may hold arr's rows for later without
// postponing an error it would have reported while reading. It follows
// ArrowValue's type switch, and is conservative: false means only that
// some value might fail.
func ArrowFits(arr arrow.Array, typ iceberg.Type) bool {
	if ext, ok := arr.(array.ExtensionArray); ok {
		if _, ok := arr.(*extensions.UUIDArray); ok {
			return true
		}
		arr = ext.Storage()
	}
	_, isUUID := typ.(iceberg.UUIDType)
	switch a := arr.(type) {
	case *array.Boolean, *array.Int32, *array.Int64, *array.Float32, *array.Float64,
		*array.String, *array.LargeString, *array.StringView, *array.Decimal128, *array.Date32, *array.Time64:
		return true
	case *array.Binary, *array.LargeBinary, *array.BinaryView:
		return !isUUID // a uuid must have 16 bytes: checked per value
	case *array.FixedSizeBinary:
		return !isUUID || a.DataType().(*arrow.FixedSizeBinaryType).ByteWidth == 16
	case *array.Timestamp:
		switch typ.(type) {
		case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			return true
		}
	case *array.Struct:
		st, ok := typ.(*iceberg.StructType)
		if !ok {
			return false
		}
		dt := a.DataType().(*arrow.StructType)
		for _, f := range st.FieldList {
			if idx, ok := dt.FieldIdx(f.Name); ok && !ArrowFits(a.Field(idx), f.Type) {
				return false
			}
		}
		return true
	case array.ListLike:
		if lt, ok := typ.(*iceberg.ListType); ok {
			return ArrowFits(a.ListValues(), lt.Element)
		}
		if mt, ok := typ.(*iceberg.MapType); ok {
			m, ok := arr.(*array.Map)
			return ok && ArrowFits(m.Keys(), mt.KeyType) && ArrowFits(m.Items(), mt.ValueType)
		}
	}
	return false
}

// TimeMicros is a time64 value in microseconds: the Arrow and Row paths of
// every encoder read times through it, so that they write the same values.
func TimeMicros(a *array.Time64, i int) int64 {
	t := int64(a.Value(i))
	if a.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
		t /= 1000
	}
	return t
}

// ToMicros and ToNanos convert a timestamp of unit to microseconds or
// nanoseconds, as arrow-go converts them (a multiplication, or a division
// truncating toward zero); the encoders' Arrow paths use them too.
func ToMicros(v int64, unit arrow.TimeUnit) int64 {
	return arrow.ConvertTimestampValue(unit, arrow.Microsecond, v)
}

func ToNanos(v int64, unit arrow.TimeUnit) int64 {
	return arrow.ConvertTimestampValue(unit, arrow.Nanosecond, v)
}

func cloneBytes(b []byte, typ iceberg.Type) (any, error) {
	if _, ok := typ.(iceberg.UUIDType); ok {
		if len(b) != 16 {
			return nil, fmt.Errorf("uuid of %d bytes", len(b))
		}
		var u UUID
		copy(u[:], b)
		return u, nil
	}
	if _, ok := typ.(iceberg.StringType); ok {
		return string(b), nil
	}
	return append([]byte(nil), b...), nil
}

func structValue(a *array.Struct, i int, st *iceberg.StructType) (Row, error) {
	dt := a.DataType().(*arrow.StructType)
	out := make(Row, len(st.FieldList))
	for k, f := range st.FieldList {
		idx, ok := dt.FieldIdx(f.Name)
		if !ok {
			continue // a field the file does not have reads as null
		}
		v, err := ArrowValue(a.Field(idx), i, f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		out[k] = v
	}
	return out, nil
}
