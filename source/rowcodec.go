package source

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/icecdc/icecdc/values"
)

// The row images a commit holds past its memory budget go to a temporary
// file in this encoding: a tag byte per value, then its payload. It is
// written by hand because it only has to round-trip the closed set of value
// types values.Row documents within one process; encoding/gob would carry type
// descriptions and reflection for each image at several times the cost.
const (
	tagNull byte = iota
	tagFalse
	tagTrue
	tagInt32
	tagInt64
	tagFloat32
	tagFloat64
	tagString
	tagBytes
	tagDecimal
	tagDate
	tagTime
	tagTimestamp
	tagTimestampTZ
	tagTimestampNano
	tagTimestampTZNano
	tagUUID
	tagList
	tagMap
	tagStruct
	tagVariant // after the others: spilled images keep their tags
)

// appendRow appends the encoding of row to b.
func appendRow(b []byte, row values.Row) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(row)))
	for _, v := range row {
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, tagNull), nil
	case bool:
		if x {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case int32:
		return binary.AppendVarint(append(b, tagInt32), int64(x)), nil
	case int64:
		return binary.AppendVarint(append(b, tagInt64), x), nil
	case float32:
		return binary.LittleEndian.AppendUint32(append(b, tagFloat32), math.Float32bits(x)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(b, tagFloat64), math.Float64bits(x)), nil
	case string:
		return append(binary.AppendUvarint(append(b, tagString), uint64(len(x))), x...), nil
	case []byte:
		return append(binary.AppendUvarint(append(b, tagBytes), uint64(len(x))), x...), nil
	case values.VariantJSON:
		return append(binary.AppendUvarint(append(b, tagVariant), uint64(len(x))), x...), nil
	case values.Decimal:
		b = binary.AppendVarint(append(b, tagDecimal), int64(x.Scale))
		return append(binary.AppendUvarint(b, uint64(len(x.Unscaled))), x.Unscaled...), nil
	case values.Date:
		return binary.AppendVarint(append(b, tagDate), int64(x)), nil
	case values.Time:
		return binary.AppendVarint(append(b, tagTime), int64(x)), nil
	case values.Timestamp:
		return binary.AppendVarint(append(b, tagTimestamp), int64(x)), nil
	case values.TimestampTZ:
		return binary.AppendVarint(append(b, tagTimestampTZ), int64(x)), nil
	case values.TimestampNano:
		return binary.AppendVarint(append(b, tagTimestampNano), int64(x)), nil
	case values.TimestampTZNano:
		return binary.AppendVarint(append(b, tagTimestampTZNano), int64(x)), nil
	case values.UUID:
		return append(append(b, tagUUID), x[:]...), nil
	case []any:
		b = binary.AppendUvarint(append(b, tagList), uint64(len(x)))
		for _, e := range x {
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, err
			}
		}
		return b, nil
	case []values.MapEntry:
		b = binary.AppendUvarint(append(b, tagMap), uint64(len(x)))
		for _, e := range x {
			var err error
			if b, err = appendValue(b, e.Key); err != nil {
				return nil, err
			}
			if b, err = appendValue(b, e.Value); err != nil {
				return nil, err
			}
		}
		return b, nil
	case values.Row:
		return appendRow(append(b, tagStruct), x)
	}
	return nil, fmt.Errorf("row value of type %T cannot be spilled", v)
}

var errShortImage = errors.New("spilled row image is truncated")

// rowDecoder reads what appendRow wrote.
type rowDecoder struct {
	b []byte
}

func (d *rowDecoder) row() (values.Row, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.b)) { // every value takes at least a byte
		return nil, errShortImage
	}
	row := make(values.Row, n)
	for i := range row {
		if row[i], err = d.value(); err != nil {
			return nil, err
		}
	}
	return row, nil
}

func (d *rowDecoder) uvarint() (uint64, error) {
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		return 0, errShortImage
	}
	d.b = d.b[k:]
	return v, nil
}

func (d *rowDecoder) varint() (int64, error) {
	v, k := binary.Varint(d.b)
	if k <= 0 {
		return 0, errShortImage
	}
	d.b = d.b[k:]
	return v, nil
}

func (d *rowDecoder) take(n uint64) ([]byte, error) {
	if n > uint64(len(d.b)) {
		return nil, errShortImage
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out, nil
}

// value decodes one value: the fixed-size ones here, the length-prefixed
// and nested ones by a reader each.
func (d *rowDecoder) value() (any, error) {
	if len(d.b) == 0 {
		return nil, errShortImage
	}
	tag := d.b[0]
	d.b = d.b[1:]
	switch tag {
	case tagNull:
		return nil, nil
	case tagFalse:
		return false, nil
	case tagTrue:
		return true, nil
	case tagInt32, tagInt64, tagDate, tagTime, tagTimestamp, tagTimestampTZ, tagTimestampNano, tagTimestampTZNano:
		v, err := d.varint()
		if err != nil {
			return nil, err
		}
		switch tag {
		case tagInt32:
			return int32(v), nil
		case tagInt64:
			return v, nil
		case tagDate:
			return values.Date(v), nil
		case tagTime:
			return values.Time(v), nil
		case tagTimestamp:
			return values.Timestamp(v), nil
		case tagTimestampTZ:
			return values.TimestampTZ(v), nil
		case tagTimestampNano:
			return values.TimestampNano(v), nil
		}
		return values.TimestampTZNano(v), nil
	case tagFloat32:
		b, err := d.take(4)
		if err != nil {
			return nil, err
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(b)), nil
	case tagFloat64:
		b, err := d.take(8)
		if err != nil {
			return nil, err
		}
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
	case tagUUID:
		b, err := d.take(16)
		if err != nil {
			return nil, err
		}
		var u values.UUID
		copy(u[:], b)
		return u, nil
	case tagString, tagBytes, tagVariant:
		return d.bytes(tag)
	case tagDecimal:
		return d.decimal()
	case tagList:
		return d.list()
	case tagMap:
		return d.mapEntries()
	case tagStruct:
		return d.row()
	}
	return nil, fmt.Errorf("spilled row image: unknown value tag %d", tag)
}

// bytes decodes a string, bytes or variant value: its length, then its
// bytes, copied out of the image.
func (d *rowDecoder) bytes(tag byte) (any, error) {
	b, err := d.sized()
	if err != nil {
		return nil, err
	}
	switch tag {
	case tagString:
		return string(b), nil
	case tagVariant:
		return values.VariantJSON(b), nil
	}
	return append([]byte(nil), b...), nil
}

// sized reads a length, then that many bytes of the image.
func (d *rowDecoder) sized() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	return d.take(n)
}

// decimal decodes a decimal: its scale, then its unscaled digits.
func (d *rowDecoder) decimal() (any, error) {
	scale, err := d.varint()
	if err != nil {
		return nil, err
	}
	b, err := d.sized()
	if err != nil {
		return nil, err
	}
	return values.Decimal{Unscaled: string(b), Scale: int(scale)}, nil
}

// list decodes a list: its length, then its elements.
func (d *rowDecoder) list() (any, error) {
	n, err := d.uvarint()
	if err != nil || n > uint64(len(d.b)) {
		return nil, errShortImage
	}
	out := make([]any, n)
	for i := range out {
		if out[i], err = d.value(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mapEntries decodes a map: its length, then each key and value.
func (d *rowDecoder) mapEntries() (any, error) {
	n, err := d.uvarint()
	if err != nil || n > uint64(len(d.b)) {
		return nil, errShortImage
	}
	out := make([]values.MapEntry, n)
	for i := range out {
		if out[i].Key, err = d.value(); err != nil {
			return nil, err
		}
		if out[i].Value, err = d.value(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fields decodes the values at the given (ascending) field positions of a
// row into a row of n fields, and skips the others without building them.
func (d *rowDecoder) fields(idx []int, n int) (values.Row, error) {
	count, err := d.uvarint()
	if err != nil {
		return nil, err
	}
	row := make(values.Row, n)
	k := 0
	for i := 0; uint64(i) < count && k < len(idx); i++ {
		if i != idx[k] {
			if err := d.skip(); err != nil {
				return nil, err
			}
			continue
		}
		if i >= n {
			return nil, errShortImage
		}
		if row[i], err = d.value(); err != nil {
			return nil, err
		}
		k++
	}
	return row, nil
}

// skip passes over one value.
func (d *rowDecoder) skip() error {
	if len(d.b) == 0 {
		return errShortImage
	}
	tag := d.b[0]
	d.b = d.b[1:]
	var err error
	switch tag {
	case tagNull, tagFalse, tagTrue:
	case tagInt32, tagInt64, tagDate, tagTime, tagTimestamp, tagTimestampTZ, tagTimestampNano, tagTimestampTZNano:
		_, err = d.varint()
	case tagFloat32:
		_, err = d.take(4)
	case tagFloat64:
		_, err = d.take(8)
	case tagUUID:
		_, err = d.take(16)
	case tagString, tagBytes, tagVariant:
		var n uint64
		if n, err = d.uvarint(); err == nil {
			_, err = d.take(n)
		}
	case tagDecimal:
		if _, err = d.varint(); err == nil {
			var n uint64
			if n, err = d.uvarint(); err == nil {
				_, err = d.take(n)
			}
		}
	case tagList, tagMap, tagStruct:
		var n uint64
		if n, err = d.uvarint(); err != nil {
			return err
		}
		if tag == tagMap {
			n *= 2
		}
		for ; n > 0 && err == nil; n-- {
			err = d.skip()
		}
	default:
		return fmt.Errorf("spilled row image: unknown value tag %d", tag)
	}
	return err
}
