package cdc

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
)

// ArrowRows is a record batch as the row images of events point into it:
// the batch's columns aligned with the fields of the schema the file was
// read with. An event whose image is here (Event.AfterArrow, BeforeArrow)
// is encoded straight from the columns, without a Go value per field
// (boxing every value into a Row is most of the CPU of a large commit);
// AfterRow and BeforeRow give a Row to consumers that need one.
//
// The columns are only read. The record batch they come from is retained
// and never released: an event may be encoded long after the scan that
// read it moved on, and the Go allocator's memory is reclaimed by the
// garbage collector once no image refers to it.
type ArrowRows struct {
	Schema *iceberg.Schema
	Cols   []arrow.Array // Cols[k] is field k; nil: the file lacks it, it reads as null
	fields []iceberg.NestedField
	views  []ColumnView // views[k] is Cols[k] for the encoders' common cases
}

// ColumnView gives the encoders direct access to a column's validity
// bitmap and, for the commonest types, its values: per value, that saves
// the interface calls of IsNull and Value (measurable at a million events
// a second). It is only read.
type ColumnView struct {
	nulls    []byte // the validity bitmap (IsNull's), empty when there is none
	off      int    // the array's offset into nulls
	Int64s   []int64
	Float64s []float64
	Strings  *array.String
}

// Null is arr.IsNull(i), as arrow-go computes it.
func (v *ColumnView) Null(i int) bool {
	return len(v.nulls) != 0 && bitutil.BitIsNotSet(v.nulls, v.off+i)
}

// View returns the view of column k (Cols[k] must be set).
func (a *ArrowRows) View(k int) *ColumnView { return &a.views[k] }

// Fields returns the fields of Schema, as they were when the rows were
// made; the slice is shared and only read.
func (a *ArrowRows) Fields() []iceberg.NestedField { return a.fields }

// NewArrowRows returns the rows of cols, read with schema sc (cols are
// aligned with sc.Fields()).
func NewArrowRows(sc *iceberg.Schema, cols []arrow.Array) *ArrowRows {
	a := &ArrowRows{Schema: sc, Cols: cols, fields: sc.Fields(), views: make([]ColumnView, len(cols))}
	for k, c := range cols {
		if c == nil {
			continue
		}
		v := &a.views[k]
		v.nulls, v.off = c.NullBitmapBytes(), c.Data().Offset()
		switch c := c.(type) {
		case *array.Int64:
			v.Int64s = c.Int64Values()
		case *array.Float64:
			v.Float64s = c.Float64Values()
		case *array.String:
			v.Strings = c
		}
	}
	return a
}

// Row returns row i as a Row, with the values ArrowValue gives.
func (a *ArrowRows) Row(i int) (Row, error) {
	out := make(Row, len(a.fields))
	for k, f := range a.fields {
		if k >= len(a.Cols) || a.Cols[k] == nil {
			continue
		}
		v, err := ArrowValue(a.Cols[k], i, f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		out[k] = v
	}
	return out, nil
}

// HasBefore reports whether the event carries a before image.
func (e *Event) HasBefore() bool { return e.Before != nil || e.BeforeArrow != nil }

// HasAfter reports whether the event carries an after image.
func (e *Event) HasAfter() bool { return e.After != nil || e.AfterArrow != nil }

// BeforeRow returns the before image as a Row (nil when the event has
// none), built from the Arrow columns when it is held there. A Row in
// Before takes precedence over BeforeArrow.
func (e *Event) BeforeRow() (Row, error) {
	if e.Before == nil && e.BeforeArrow != nil {
		return e.BeforeArrow.Row(e.BeforePos)
	}
	return e.Before, nil
}

// AfterRow returns the after image as a Row, as BeforeRow does.
func (e *Event) AfterRow() (Row, error) {
	if e.After == nil && e.AfterArrow != nil {
		return e.AfterArrow.Row(e.AfterPos)
	}
	return e.After, nil
}

// MaterializeRows turns images held as Arrow columns into Rows in Before
// and After, for a consumer that keeps or changes the rows.
func (e *Event) MaterializeRows() error {
	var err error
	if e.Before, err = e.BeforeRow(); err != nil {
		return fmt.Errorf("before: %w", err)
	}
	if e.After, err = e.AfterRow(); err != nil {
		return fmt.Errorf("after: %w", err)
	}
	e.BeforeArrow, e.AfterArrow, e.BeforePos, e.AfterPos = nil, nil, 0, 0
	return nil
}

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
