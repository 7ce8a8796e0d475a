package iceberg

import (
	"fmt"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/parquet/variant"
	"github.com/google/uuid"

	"github.com/icecdc/icecdc/values"
)

// appendArrow appends v, a value of values.Row's kinds, to b. A value that
// does not fit the column is an error naming both: nothing is guessed.
func appendArrow(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	bad := func() error { return mismatch(b, v) }
	switch b := b.(type) {
	case *array.BooleanBuilder:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Int32Builder:
		x, ok := v.(int32)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Int64Builder:
		switch x := v.(type) {
		case int64:
			b.Append(x)
		case int32: // a widened column
			b.Append(int64(x))
		default:
			return bad()
		}
	case *array.Float32Builder:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			b.Append(x)
		case float32:
			b.Append(float64(x))
		default:
			return bad()
		}
	case *array.StringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.LargeStringBuilder:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.BinaryBuilder:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		b.Append(x)
	case *array.Date32Builder:
		x, ok := v.(values.Date)
		if !ok {
			return bad()
		}
		b.Append(arrow.Date32(x))
	case *array.Time64Builder:
		x, ok := v.(values.Time)
		if !ok {
			return bad()
		}
		b.Append(arrow.Time64(x))
	case *array.TimestampBuilder:
		switch x := v.(type) {
		case values.Timestamp:
			b.Append(arrow.Timestamp(x))
		case values.TimestampTZ:
			b.Append(arrow.Timestamp(x))
		case values.TimestampNano:
			b.Append(arrow.Timestamp(x))
		case values.TimestampTZNano:
			b.Append(arrow.Timestamp(x))
		default:
			return bad()
		}
	default:
		return appendArrowWide(b, v)
	}
	return nil
}

// mismatch reports a value that does not fit its column.
func mismatch(b array.Builder, v any) error {
	return fmt.Errorf("a %T value does not fit a %s column", v, b.Type())
}

// appendArrowWide is appendArrow for the types off the common path:
// decimals, uuids, fixed, variants and nested types.
func appendArrowWide(b array.Builder, v any) error {
	switch bb := b.(type) {
	case *array.Decimal128Builder:
		x, ok := v.(values.Decimal)
		if !ok {
			return mismatch(b, v)
		}
		n, ok := new(big.Int).SetString(x.Unscaled, 10)
		if !ok {
			return fmt.Errorf("decimal %q: not an integer", x.Unscaled)
		}
		if want := bb.Type().(*arrow.Decimal128Type).Scale; int32(x.Scale) != want {
			return fmt.Errorf("decimal of scale %d in a column of scale %d", x.Scale, want)
		}
		bb.Append(decimal128.FromBigInt(n))
	case *extensions.UUIDBuilder:
		x, ok := v.(values.UUID)
		if !ok {
			return mismatch(b, v)
		}
		bb.Append(uuid.UUID(x))
	case *array.FixedSizeBinaryBuilder:
		switch x := v.(type) {
		case []byte:
			bb.Append(x)
		case values.UUID:
			bb.Append(x[:])
		default:
			return mismatch(b, v)
		}
	case *extensions.VariantBuilder:
		x, ok := v.(values.VariantJSON)
		if !ok {
			return mismatch(b, v)
		}
		val, err := variant.ParseJSON(string(x), false)
		if err != nil {
			return fmt.Errorf("variant: %w", err)
		}
		bb.Append(val)
	case *array.StructBuilder:
		return appendArrowStruct(bb, v)
	case *array.ListBuilder:
		return appendArrowList(bb, v)
	case *array.LargeListBuilder:
		return appendArrowList(bb, v)
	case *array.MapBuilder:
		return appendArrowMap(bb, v)
	default:
		return fmt.Errorf("a %s column is not written by the iceberg sink", b.Type())
	}
	return nil
}

// appendArrowStruct appends a values.Row; fields past the row's end (a
// column added since) are null.
func appendArrowStruct(b *array.StructBuilder, v any) error {
	x, ok := v.(values.Row)
	if !ok {
		return mismatch(b, v)
	}
	if len(x) > b.NumField() {
		return fmt.Errorf("a struct of %d fields in a column of %d", len(x), b.NumField())
	}
	b.Append(true)
	for k := range b.NumField() {
		var fv any
		if k < len(x) {
			fv = x[k]
		}
		if err := appendArrow(b.FieldBuilder(k), fv); err != nil {
			return fmt.Errorf("field %s: %w", b.Type().(*arrow.StructType).Field(k).Name, err)
		}
	}
	return nil
}

// appendArrowList appends a list, to a list or large list column.
func appendArrowList(b array.ListLikeBuilder, v any) error {
	x, ok := v.([]any)
	if !ok {
		return mismatch(b, v)
	}
	b.Append(true)
	for _, e := range x {
		if err := appendArrow(b.ValueBuilder(), e); err != nil {
			return fmt.Errorf("element: %w", err)
		}
	}
	return nil
}

// appendArrowMap appends a map's entries in their order.
func appendArrowMap(b *array.MapBuilder, v any) error {
	x, ok := v.([]values.MapEntry)
	if !ok {
		return mismatch(b, v)
	}
	b.Append(true)
	for _, e := range x {
		if err := appendArrow(b.KeyBuilder(), e.Key); err != nil {
			return fmt.Errorf("key: %w", err)
		}
		if err := appendArrow(b.ItemBuilder(), e.Value); err != nil {
			return fmt.Errorf("value: %w", err)
		}
	}
	return nil
}
