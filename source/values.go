package source

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
)

// valueAt converts the value at row i of arr, an array of Iceberg type typ,
// to the Go value cdc.Row documents. A value whose Arrow type does not fit
// typ is an error naming both: icecdc never guesses a value.
func valueAt(arr arrow.Array, i int, typ iceberg.Type) (any, error) {
	if arr.IsNull(i) {
		return nil, nil
	}
	if ext, ok := arr.(array.ExtensionArray); ok {
		if u, ok := arr.(*extensions.UUIDArray); ok {
			var out cdc.UUID
			copy(out[:], u.Storage().(*array.FixedSizeBinary).Value(i))
			return out, nil
		}
		arr = ext.Storage()
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i), nil
	case *array.Int32:
		switch typ.(type) {
		case iceberg.DateType:
			return cdc.Date(a.Value(i)), nil
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
		return cdc.Decimal{Unscaled: a.Value(i).BigInt().String(), Scale: int(dt.Scale)}, nil
	case *array.Date32:
		return cdc.Date(a.Value(i)), nil
	case *array.Time64:
		t := int64(a.Value(i))
		if a.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
			t /= 1000
		}
		return cdc.Time(t), nil
	case *array.Timestamp:
		return timestampValue(int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit, typ)
	case *array.Struct:
		st, ok := typ.(*iceberg.StructType)
		if !ok {
			return nil, fmt.Errorf("struct value for %s", typ)
		}
		return structValue(a, i, st)
	case array.ListLike:
		lt, ok := typ.(*iceberg.ListType)
		if ok {
			start, end := a.ValueOffsets(i)
			vals := a.ListValues()
			out := make([]any, 0, end-start)
			for j := start; j < end; j++ {
				v, err := valueAt(vals, int(j), lt.Element)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			return out, nil
		}
		if mt, ok := typ.(*iceberg.MapType); ok {
			m, ok := arr.(*array.Map)
			if !ok {
				return nil, fmt.Errorf("arrow %s for %s", arr.DataType(), typ)
			}
			start, end := m.ValueOffsets(i)
			out := make([]cdc.MapEntry, 0, end-start)
			for j := start; j < end; j++ {
				k, err := valueAt(m.Keys(), int(j), mt.KeyType)
				if err != nil {
					return nil, err
				}
				v, err := valueAt(m.Items(), int(j), mt.ValueType)
				if err != nil {
					return nil, err
				}
				out = append(out, cdc.MapEntry{Key: k, Value: v})
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("arrow %s for iceberg %s not supported", arr.DataType(), typ)
}

func cloneBytes(b []byte, typ iceberg.Type) (any, error) {
	if _, ok := typ.(iceberg.UUIDType); ok {
		if len(b) != 16 {
			return nil, fmt.Errorf("uuid of %d bytes", len(b))
		}
		var u cdc.UUID
		copy(u[:], b)
		return u, nil
	}
	if _, ok := typ.(iceberg.StringType); ok {
		return string(b), nil
	}
	return append([]byte(nil), b...), nil
}

func timestampValue(v int64, unit arrow.TimeUnit, typ iceberg.Type) (any, error) {
	toMicros := func() int64 {
		switch unit {
		case arrow.Second:
			return v * 1e6
		case arrow.Millisecond:
			return v * 1e3
		case arrow.Nanosecond:
			return v / 1e3
		}
		return v
	}
	toNanos := func() int64 {
		switch unit {
		case arrow.Second:
			return v * 1e9
		case arrow.Millisecond:
			return v * 1e6
		case arrow.Microsecond:
			return v * 1e3
		}
		return v
	}
	switch typ.(type) {
	case iceberg.TimestampType:
		return cdc.Timestamp(toMicros()), nil
	case iceberg.TimestampTzType:
		return cdc.TimestampTZ(toMicros()), nil
	case iceberg.TimestampNsType:
		return cdc.TimestampNano(toNanos()), nil
	case iceberg.TimestampTzNsType:
		return cdc.TimestampTZNano(toNanos()), nil
	}
	return nil, fmt.Errorf("timestamp value for %s", typ)
}

func structValue(a *array.Struct, i int, st *iceberg.StructType) (cdc.Row, error) {
	dt := a.DataType().(*arrow.StructType)
	out := make(cdc.Row, len(st.FieldList))
	for k, f := range st.FieldList {
		idx, ok := dt.FieldIdx(f.Name)
		if !ok {
			continue // a field the file does not have reads as null
		}
		v, err := valueAt(a.Field(idx), i, f.Type)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		out[k] = v
	}
	return out, nil
}
