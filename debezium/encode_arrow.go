package debezium

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// This file encodes row images held as Arrow columns (ArrowRows) without
// making a Go value of each field: arrow-go has no JSON encoder of its own
// with Debezium's forms (dates as ISO strings, decimals as plain strings or
// Connect bytes, NaN as "NaN", maps with non-string keys as arrays), and
// its Value accessors are cheap where boxing each value in an `any` is not.
//
// Each appender here handles the common pairs of an Arrow array type and an
// Iceberg type and writes exactly what the Row path writes for
// ArrowValue's value (appendValue, appendConnectValue). Anything else — a
// pair it does not know, a value out of the type's domain, a decimal too
// large for an int64 — makes it give up (ok false), and the top-level
// column's value goes the Row path, which writes it or names the error as
// it always did. The differential tests hold both paths to the same bytes.

// appendArrowStruct appends row i of img as an object of t's fields (t is
// the compiled schema img was read with), as appendStruct does with the
// Row ArrowRows.Row gives.
func (t *jsonType) appendArrowStruct(dst []byte, img *cdc.ArrowRows, i int) ([]byte, error) {
	if len(img.Cols) != len(t.fields) || len(img.Fields()) != len(t.fields) {
		r, err := img.Row(i)
		if err != nil {
			return dst, err
		}
		return t.appendStruct(dst, r)
	}
	dst = append(dst, '{')
	for k := range t.fields {
		f := &t.fields[k]
		dst = append(dst, f.prefix...)
		col, cv := img.Cols[k], img.View(k)
		if col == nil || cv.Null(i) {
			dst = append(dst, "null"...)
			continue
		}
		// The commonest columns first, without a call through the
		// interface; then any type.
		switch {
		case cv.Int64s != nil && f.typ.kind == kindLong:
			dst = strconv.AppendInt(dst, cv.Int64s[i], 10)
			continue
		case cv.Float64s != nil && f.typ.kind == kindDouble:
			dst = appendJSONFloat(dst, cv.Float64s[i], 64)
			continue
		case cv.Strings != nil && f.typ.kind == kindString:
			dst = appendJSONString(dst, cv.Strings.Value(i))
			continue
		}
		start := len(dst)
		var ok bool
		if dst, ok = f.typ.appendArrowNonNull(dst, col, i); ok {
			continue
		}
		v, err := values.ArrowValue(col, i, img.Fields()[k].Type)
		if err != nil {
			return dst[:start], fmt.Errorf("column %s: %w", f.name, err)
		}
		if dst, err = f.typ.appendValue(dst[:start], v); err != nil {
			return dst, err.(*ValueError).within(f.name)
		}
	}
	return append(dst, '}'), nil
}

// appendImage appends an image per t: null, a Row, or Arrow columns.
func (t *jsonType) appendImage(dst []byte, im image) ([]byte, error) {
	switch {
	case im.arrow != nil:
		return t.appendArrowStruct(dst, im.arrow, im.pos)
	case im.row != nil:
		return t.appendStruct(dst, im.row)
	}
	return append(dst, "null"...), nil
}

// arrowBytes returns the bytes at row i of a binary array.
func arrowBytes(arr arrow.Array, i int) ([]byte, bool) {
	switch a := arr.(type) {
	case *array.Binary:
		return a.Value(i), true
	case *array.LargeBinary:
		return a.Value(i), true
	case *array.BinaryView:
		return a.Value(i), true
	case *array.FixedSizeBinary:
		return a.Value(i), true
	}
	return nil, false
}

// arrowString returns the string at row i of a string array, without a
// copy.
func arrowString(arr arrow.Array, i int) (string, bool) {
	switch a := arr.(type) {
	case *array.String:
		return a.Value(i), true
	case *array.LargeString:
		return a.Value(i), true
	case *array.StringView:
		return a.Value(i), true
	}
	return "", false
}

// arrowDecimal returns the decimal at row i of arr as digits of an int64
// (what Decimal.Unscaled would hold) when the value fits one and has the
// type's scale; ok is false otherwise.
func (t *jsonType) arrowDecimal(buf []byte, arr arrow.Array, i int) (_ []byte, v int64, ok bool) {
	a, ok := arr.(*array.Decimal128)
	if !ok || int(a.DataType().(*arrow.Decimal128Type).Scale) != t.scale {
		return nil, 0, false
	}
	n := a.Value(i)
	lo, hi := n.LowBits(), n.HighBits()
	if hi != int64(lo)>>63 {
		return nil, 0, false // wider than an int64: the Row path's big.Int
	}
	v = int64(lo)
	buf = strconv.AppendInt(buf, v, 10)
	if decimalDigits(string(buf)) > t.prec {
		return nil, 0, false
	}
	return buf, v, true
}

// appendArrow appends the value at row i of arr per t, exactly as
// t.appendValue(dst, ArrowValue(arr, i, typ)) would, or gives up (ok
// false, dst to be cut back by the caller).
func (t *jsonType) appendArrow(dst []byte, arr arrow.Array, i int) (_ []byte, ok bool) {
	if arr.IsNull(i) {
		return append(dst, "null"...), true
	}
	return t.appendArrowNonNull(dst, arr, i)
}

// appendArrowNonNull is appendArrow for a value that is not null.
func (t *jsonType) appendArrowNonNull(dst []byte, arr arrow.Array, i int) (_ []byte, ok bool) {
	if out, ok := t.appendArrowValue(dst, arr, i); ok {
		return out, true
	}
	// Extension arrays are looked at only here, off the common path (an
	// interface assertion per value is not free).
	if u, isUUID := arr.(*extensions.UUIDArray); isUUID {
		b := u.Storage().(*array.FixedSizeBinary).Value(i)
		if t.kind != kindUUID || len(b) != 16 {
			return dst, false
		}
		return appendUUID(dst, values.UUID(b)), true
	}
	if ext, isExt := arr.(array.ExtensionArray); isExt {
		return t.appendArrowValue(dst, ext.Storage(), i)
	}
	return dst, false
}

// appendArrowValue is appendArrow for a non-null value of an array that is
// not an extension array.
func (t *jsonType) appendArrowValue(dst []byte, arr arrow.Array, i int) (_ []byte, ok bool) {
	switch t.kind {
	case kindBool:
		if a, ok := arr.(*array.Boolean); ok {
			return strconv.AppendBool(dst, a.Value(i)), true
		}
	case kindInt:
		switch a := arr.(type) {
		case *array.Int32:
			return strconv.AppendInt(dst, int64(a.Value(i)), 10), true
		case *array.Int64:
			return strconv.AppendInt(dst, int64(int32(a.Value(i))), 10), true
		}
	case kindLong:
		switch a := arr.(type) {
		case *array.Int64:
			return strconv.AppendInt(dst, a.Value(i), 10), true
		case *array.Int32: // a file written before int was promoted to long
			return strconv.AppendInt(dst, int64(a.Value(i)), 10), true
		}
	case kindFloat:
		if a, ok := arr.(*array.Float32); ok {
			return appendJSONFloat(dst, float64(a.Value(i)), 32), true
		}
	case kindDouble:
		switch a := arr.(type) {
		case *array.Float64:
			return appendJSONFloat(dst, a.Value(i), 64), true
		case *array.Float32: // float promoted to double
			return appendJSONFloat(dst, float64(a.Value(i)), 64), true
		}
	case kindDecimal:
		var scratch [24]byte
		if digits, _, ok := t.arrowDecimal(scratch[:0], arr, i); ok {
			out, ok := appendDecimal(dst, values.Decimal{Unscaled: string(digits), Scale: t.scale})
			return out, ok
		}
	case kindDate:
		switch a := arr.(type) {
		case *array.Date32:
			return appendDate(dst, int64(a.Value(i))), true
		case *array.Int32:
			return appendDate(dst, int64(a.Value(i))), true
		}
	case kindTime:
		if a, ok := arr.(*array.Time64); ok {
			if tm := values.TimeMicros(a, i); tm >= 0 && tm < microsPerDay {
				return appendTimeOfDay(dst, tm), true
			}
		}
	case kindTimestamp, kindTimestampTZ:
		if a, ok := arr.(*array.Timestamp); ok {
			us := values.ToMicros(int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit)
			return appendTimestamp(dst, us, 1_000_000, 6, t.kind == kindTimestampTZ), true
		}
	case kindTimestampNs, kindTimestampTZNs:
		if a, ok := arr.(*array.Timestamp); ok {
			ns := values.ToNanos(int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit)
			return appendTimestamp(dst, ns, 1_000_000_000, 9, t.kind == kindTimestampTZNs), true
		}
	case kindString:
		if s, ok := arrowString(arr, i); ok {
			return appendJSONString(dst, s), true
		}
	case kindUUID:
		if b, ok := arrowBytes(arr, i); ok && len(b) == 16 {
			return appendUUID(dst, values.UUID(b)), true
		}
	case kindFixed:
		if b, ok := arrowBytes(arr, i); ok && len(b) == t.prec {
			return appendBase64(dst, b), true
		}
	case kindBinary:
		if b, ok := arrowBytes(arr, i); ok {
			return appendBase64(dst, b), true
		}
	case kindStruct:
		if a, ok := arr.(*array.Struct); ok {
			return t.appendArrowNested(dst, a, i)
		}
	case kindList:
		if a, ok := arr.(array.ListLike); ok {
			return t.appendArrowList(dst, a, i)
		}
	case kindMap:
		if m, ok := arr.(*array.Map); ok {
			return t.appendArrowMap(dst, m, i)
		}
	case kindGeo:
		if b, ok := arrowBytes(arr, i); ok {
			return t.appendGeo(dst, b), true
		}
	}
	return dst, false
}

// appendArrowNested appends a struct value as appendStruct does with
// structValue's Row: fields are found by name, one the file lacks is null.
func (t *jsonType) appendArrowNested(dst []byte, a *array.Struct, i int) (_ []byte, ok bool) {
	dt := a.DataType().(*arrow.StructType)
	dst = append(dst, '{')
	for k := range t.fields {
		f := &t.fields[k]
		dst = append(dst, f.prefix...)
		idx, found := dt.FieldIdx(f.name)
		if !found {
			dst = append(dst, "null"...)
			continue
		}
		if dst, ok = f.typ.appendArrow(dst, a.Field(idx), i); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendArrowList appends a list value as a JSON array.
func (t *jsonType) appendArrowList(dst []byte, a array.ListLike, i int) (_ []byte, ok bool) {
	start, end := a.ValueOffsets(i)
	vals := a.ListValues()
	dst = append(dst, '[')
	for j := start; j < end; j++ {
		if j > start {
			dst = append(dst, ',')
		}
		if dst, ok = t.elem.appendArrow(dst, vals, int(j)); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// appendArrowMap appends a map value as appendMap does.
func (t *jsonType) appendArrowMap(dst []byte, m *array.Map, i int) (_ []byte, ok bool) {
	start, end := m.ValueOffsets(i)
	keys, items := m.Keys(), m.Items()
	if t.key.kind == kindString {
		dst = append(dst, '{')
		for j := int(start); j < int(end); j++ {
			if j > int(start) {
				dst = append(dst, ',')
			}
			if keys.IsNull(j) {
				return dst, false
			}
			k, isString := arrowString(keys, j)
			if !isString {
				return dst, false
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			if dst, ok = t.elem.appendArrow(dst, items, j); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	dst = append(dst, '[')
	for j := int(start); j < int(end); j++ {
		if j > int(start) {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		if dst, ok = t.key.appendArrow(dst, keys, j); !ok {
			return dst, false
		}
		dst = append(dst, `,"value":`...)
		if dst, ok = t.elem.appendArrow(dst, items, j); !ok {
			return dst, false
		}
		dst = append(dst, '}')
	}
	return append(dst, ']'), true
}

// appendConnectArrowStruct appends row i of img as appendConnectStruct
// does with its Row.
func (t *jsonType) appendConnectArrowStruct(dst []byte, img *cdc.ArrowRows, i int, o *ConnectOptions) ([]byte, error) {
	if len(img.Cols) != len(t.fields) || len(img.Fields()) != len(t.fields) {
		r, err := img.Row(i)
		if err != nil {
			return dst, err
		}
		return t.appendConnectStruct(dst, r, o)
	}
	dst = append(dst, '{')
	for k := range t.fields {
		f := &t.fields[k]
		dst = append(dst, f.prefix...)
		col := img.Cols[k]
		start := len(dst)
		if col != nil {
			var ok bool
			if dst, ok = appendConnectArrow(dst, f.typ, col, i, o, f.required); ok {
				continue
			}
		}
		var v any
		if col != nil {
			var err error
			if v, err = values.ArrowValue(col, i, img.Fields()[k].Type); err != nil {
				return dst[:start], fmt.Errorf("column %s: %w", f.name, err)
			}
		}
		dst = dst[:start]
		if v == nil && f.required {
			return dst, (&ValueError{Type: f.typ.name, Want: "a value (the field is required)", Got: "null"}).within(f.name)
		}
		var err error
		if dst, err = appendConnectValue(dst, f.typ, v, o); err != nil {
			return dst, err.(*ValueError).within(f.name)
		}
	}
	return append(dst, '}'), nil
}

// appendConnectImage appends an image per t in Connect's form.
func (t *jsonType) appendConnectImage(dst []byte, im image, o *ConnectOptions) ([]byte, error) {
	switch {
	case im.arrow != nil:
		return t.appendConnectArrowStruct(dst, im.arrow, im.pos, o)
	case im.row != nil:
		return t.appendConnectStruct(dst, im.row, o)
	}
	return append(dst, "null"...), nil
}

// appendConnectArrow appends the value at row i of arr per t exactly as
// appendConnectValue does with ArrowValue's value, or gives up. required
// says a null is an error there (the caller's Row path reports it).
func appendConnectArrow(dst []byte, t *jsonType, arr arrow.Array, i int, o *ConnectOptions, required bool) (_ []byte, ok bool) {
	if arr.IsNull(i) {
		if required {
			return dst, false
		}
		return append(dst, "null"...), true
	}
	if out, ok := appendConnectArrowValue(dst, t, arr, i, o); ok {
		return out, true
	}
	if _, isUUID := arr.(*extensions.UUIDArray); isUUID {
		return t.appendArrow(dst, arr, i) // as debezium-json writes it
	}
	if ext, isExt := arr.(array.ExtensionArray); isExt {
		return appendConnectArrowValue(dst, t, ext.Storage(), i, o)
	}
	return dst, false
}

// appendConnectArrowValue is appendConnectArrow for a non-null value of
// an array that is not an extension array.
func appendConnectArrowValue(dst []byte, t *jsonType, arr arrow.Array, i int, o *ConnectOptions) (_ []byte, ok bool) {
	switch t.kind {
	case kindDecimal:
		return appendConnectArrowDecimal(dst, t, arr, i, o)
	case kindDate:
		return appendConnectArrowDate(dst, arr, i, o)
	case kindTime:
		a, ok := arr.(*array.Time64)
		if !ok {
			return dst, false
		}
		tm := values.TimeMicros(a, i)
		if tm < 0 || tm >= microsPerDay {
			return dst, false
		}
		return o.appendTime(dst, tm), true
	case kindTimestamp:
		a, ok := arr.(*array.Timestamp)
		if !ok {
			return dst, false
		}
		ts := values.ToMicros(int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit)
		return o.appendTimestamp(dst, ts), true
	case kindTimestampNs:
		a, ok := arr.(*array.Timestamp)
		if !ok {
			return dst, false
		}
		ts := values.ToNanos(int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit)
		return o.appendTimestampNano(dst, ts), true
	case kindStruct:
		if a, ok := arr.(*array.Struct); ok {
			return appendConnectArrowFields(dst, t, a, i, o)
		}
		return dst, false
	case kindList:
		if a, ok := arr.(array.ListLike); ok {
			return appendConnectArrowList(dst, t, a, i, o)
		}
		return dst, false
	case kindMap:
		if m, ok := arr.(*array.Map); ok {
			return appendConnectArrowMap(dst, t, m, i, o)
		}
		return dst, false
	case kindUnsupported:
		return dst, false
	}
	// Booleans, numbers, strings, uuids, bytes, timestamps with a zone:
	// the same as debezium-json.
	return t.appendArrowValue(dst, arr, i)
}

// appendConnectArrowDecimal appends a decimal under decimal.handling.mode;
// a double, and the bytes of one past 18 digits, are left to the Row path.
func appendConnectArrowDecimal(dst []byte, t *jsonType, arr arrow.Array, i int, o *ConnectOptions) (_ []byte, ok bool) {
	var scratch [24]byte
	digits, v, ok := t.arrowDecimal(scratch[:0], arr, i)
	if !ok {
		return dst, false
	}
	switch o.DecimalHandling {
	case DecimalString:
		return appendDecimal(dst, values.Decimal{Unscaled: string(digits), Scale: t.scale})
	case DecimalDouble:
		return dst, false
	}
	if len(digits) > 18 { // unscaledBytes parses these with math/big
		return dst, false
	}
	return appendBase64(dst, int64Bytes(scratch[:0], v)), true
}

// appendConnectArrowDate appends a date as days since the epoch, or as
// ISO text under time.precision.mode isostring.
func appendConnectArrowDate(dst []byte, arr arrow.Array, i int, o *ConnectOptions) (_ []byte, ok bool) {
	var d int64
	switch a := arr.(type) {
	case *array.Date32:
		d = int64(a.Value(i))
	case *array.Int32:
		d = int64(a.Value(i))
	default:
		return dst, false
	}
	if o.TimePrecision == TimeISOString {
		return appendDate(dst, d), true
	}
	return strconv.AppendInt(dst, d, 10), true
}

// appendConnectArrowFields appends a struct value: fields are found by
// name, one the file lacks is null (or gives up when required).
func appendConnectArrowFields(dst []byte, t *jsonType, a *array.Struct, i int, o *ConnectOptions) (_ []byte, ok bool) {
	dt := a.DataType().(*arrow.StructType)
	dst = append(dst, '{')
	for k := range t.fields {
		f := &t.fields[k]
		dst = append(dst, f.prefix...)
		idx, found := dt.FieldIdx(f.name)
		if !found {
			if f.required {
				return dst, false
			}
			dst = append(dst, "null"...)
			continue
		}
		if dst, ok = appendConnectArrow(dst, f.typ, a.Field(idx), i, o, f.required); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendConnectArrowList appends a list value as a JSON array.
func appendConnectArrowList(dst []byte, t *jsonType, a array.ListLike, i int, o *ConnectOptions) (_ []byte, ok bool) {
	start, end := a.ValueOffsets(i)
	vals := a.ListValues()
	dst = append(dst, '[')
	for j := start; j < end; j++ {
		if j > start {
			dst = append(dst, ',')
		}
		if dst, ok = appendConnectArrow(dst, t.elem, vals, int(j), o, t.elemRequired); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// appendConnectArrowMap appends a map value: a JSON object when its keys
// are strings in Connect, else an array of [key, value] pairs.
func appendConnectArrowMap(dst []byte, t *jsonType, m *array.Map, i int, o *ConnectOptions) (_ []byte, ok bool) {
	object := connectStringKind(t.key, o)
	if object {
		dst = append(dst, '{')
	} else {
		dst = append(dst, '[')
	}
	start, end := m.ValueOffsets(i)
	keys, items := m.Keys(), m.Items()
	for j := int(start); j < int(end); j++ {
		if j > int(start) {
			dst = append(dst, ',')
		}
		if !object {
			dst = append(dst, '[')
		}
		if dst, ok = appendConnectArrow(dst, t.key, keys, j, o, true); !ok {
			return dst, false
		}
		if object {
			dst = append(dst, ':')
		} else {
			dst = append(dst, ',')
		}
		if dst, ok = appendConnectArrow(dst, t.elem, items, j, o, t.elemRequired); !ok {
			return dst, false
		}
		if !object {
			dst = append(dst, ']')
		}
	}
	if object {
		return append(dst, '}'), true
	}
	return append(dst, ']'), true
}

// int64Bytes appends the big-endian two's-complement bytes of v, as short
// as unscaledBytes makes them.
func int64Bytes(dst []byte, v int64) []byte {
	n := 1
	for n < 8 && (v < -(1<<(8*n-1)) || v >= 1<<(8*n-1)) {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, byte(v>>(8*i)))
	}
	return dst
}

// arrowLookup finds the key part's value in row i of img, as lookup does
// in a Row: the array holding it (at row i), or null under a null struct
// or for a column the file lacks. ok is false when the path does not go
// through struct arrays; the Row path then decides.
func (p *jsonKeyPart) arrowLookup(root *jsonType, img *cdc.ArrowRows, i int) (arr arrow.Array, null, ok bool) {
	if len(img.Cols) != len(root.fields) {
		return nil, false, false
	}
	t := root
	for depth, idx := range p.path {
		if depth == 0 {
			arr = img.Cols[idx]
		} else {
			s, isStruct := arr.(*array.Struct)
			if !isStruct {
				return nil, false, false
			}
			fi, found := s.DataType().(*arrow.StructType).FieldIdx(t.fields[idx].name)
			if !found {
				return nil, true, true
			}
			arr = s.Field(fi)
		}
		if arr == nil || arr.IsNull(i) {
			return nil, true, true
		}
		t = t.fields[idx].typ
	}
	return arr, false, true
}

// appendArrow appends the key object of row i of img as append does with
// its Row, or gives up (ok false).
func (k *jsonKey) appendArrow(dst []byte, root *jsonType, img *cdc.ArrowRows, i int) (_ []byte, ok bool) {
	for j := range k.parts {
		p := &k.parts[j]
		dst = append(dst, p.prefix...)
		arr, null, ok := p.arrowLookup(root, img, i)
		switch {
		case !ok:
			return dst, false
		case null:
			dst = append(dst, "null"...)
		default:
			if dst, ok = p.typ.appendArrow(dst, arr, i); !ok {
				return dst, false
			}
		}
	}
	return append(dst, '}'), true
}

// appendConnectArrow appends the Connect key payload of row i of img, or
// gives up (ok false): a null key field is the Row path's error to name.
func (k *jsonKey) appendConnectArrow(dst []byte, root *jsonType, img *cdc.ArrowRows, i int, o *ConnectOptions) (_ []byte, ok bool) {
	for j := range k.parts {
		p := &k.parts[j]
		dst = append(dst, p.prefix...)
		arr, null, ok := p.arrowLookup(root, img, i)
		if !ok || null {
			return dst, false
		}
		if dst, ok = appendConnectArrow(dst, p.typ, arr, i, o, true); !ok {
			return dst, false
		}
	}
	return append(dst, "}}"...), true
}

// keyImage returns the image an event's key is taken from, ready for sc.
func keyImage(e *cdc.Event, sc *iceberg.Schema) (image, error) {
	im := afterImage(e)
	if e.Op == cdc.OpDelete {
		im = beforeImage(e)
	}
	if im.null() {
		return im, fmt.Errorf("no row image for op %s", e.Op)
	}
	return im.forSchema(sc)
}

// image is one row image of an event, as a Row or a row of Arrow columns.
type image struct {
	row   values.Row
	arrow *cdc.ArrowRows
	pos   int
}

func beforeImage(e *cdc.Event) image {
	if e.Before == nil && e.BeforeArrow != nil {
		return image{arrow: e.BeforeArrow, pos: e.BeforePos}
	}
	return image{row: e.Before}
}

func afterImage(e *cdc.Event) image {
	if e.After == nil && e.AfterArrow != nil {
		return image{arrow: e.AfterArrow, pos: e.AfterPos}
	}
	return image{row: e.After}
}

func (im image) null() bool { return im.row == nil && im.arrow == nil }

// forSchema returns im ready to encode with sc: Arrow columns read with
// another schema (a projection's, say) are turned into a Row first, so
// that the Row path decides as it always did.
func (im image) forSchema(sc *iceberg.Schema) (image, error) {
	if im.arrow == nil || im.arrow.Schema == sc {
		return im, nil
	}
	return im.materialized()
}

func (im image) materialized() (image, error) {
	if im.arrow == nil {
		return im, nil
	}
	r, err := im.arrow.Row(im.pos)
	return image{row: r}, err
}
