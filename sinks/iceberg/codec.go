package iceberg

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// Encoder is the sink's format: each event's op, row id and images as
// tagged binary values, which Write decodes again. It is not a wire
// format: it lives between the pipeline and the sink of one process.
type Encoder struct{}

var _ cdc.Encoder = Encoder{}

// AppendKey implements cdc.Encoder: the rows carry no key.
func (Encoder) AppendKey(dst []byte, _ *cdc.Commit, _ *cdc.Event) ([]byte, error) { return dst, nil }

// AppendValue implements cdc.Encoder: row id, the before image's row id,
// then the before and after images (a flag byte each, then the row).
func (Encoder) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, _ int64) ([]byte, error) {
	dst = binary.AppendVarint(dst, e.RowID)
	dst = binary.AppendVarint(dst, beforeRowID(e))
	for k, get := range []func() (values.Row, error){e.BeforeRow, e.AfterRow} {
		row, err := get()
		if err != nil {
			return dst, fmt.Errorf("encode event %s: %w", cdc.EventID(c.Table.UUID, c.Snapshot.SequenceNumber, e.RowID, e.Op), err)
		}
		if row == nil || (k == 0 && e.Op != cdc.OpUpdate && e.Op != cdc.OpDelete) {
			dst = append(dst, 0)
			continue
		}
		dst = append(dst, 1)
		if dst, err = appendRow(dst, row); err != nil {
			return dst, fmt.Errorf("encode event %s: %w", cdc.EventID(c.Table.UUID, c.Snapshot.SequenceNumber, e.RowID, e.Op), err)
		}
	}
	return dst, nil
}

// beforeRowID is the row id of e's before image: for an update paired
// from a delete and an insert of one key (Source set), the row id the row
// had, which the delete removed; else e's own. So a row's history in the
// target is its id's rows: a paired update's UPDATE_BEFORE ends the old
// row id's history as a delete would, its UPDATE_AFTER starts the new one's.
func beforeRowID(e *cdc.Event) int64 {
	if e.Source != "" && e.Op == cdc.OpUpdate {
		return e.PairedRowID
	}
	return e.RowID
}

// Value tags.
const (
	tNull byte = iota
	tFalse
	tTrue
	tInt32
	tInt64
	tFloat32
	tFloat64
	tString
	tBytes
	tDecimal
	tDate
	tTime
	tTimestamp
	tTimestampTZ
	tTimestampNano
	tTimestampTZNano
	tUUID
	tVariant
	tList
	tMap
	tStruct
)

func appendRow(dst []byte, r values.Row) ([]byte, error) {
	dst = binary.AppendUvarint(dst, uint64(len(r)))
	var err error
	for _, v := range r {
		if dst, err = appendValue(dst, v); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

func appendBytes(dst []byte, tag byte, b string) []byte {
	dst = append(dst, tag)
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendValue(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, tNull), nil
	case bool:
		if x {
			return append(dst, tTrue), nil
		}
		return append(dst, tFalse), nil
	case int32:
		return binary.AppendVarint(append(dst, tInt32), int64(x)), nil
	case int64:
		return binary.AppendVarint(append(dst, tInt64), x), nil
	case float32:
		return binary.LittleEndian.AppendUint32(append(dst, tFloat32), math.Float32bits(x)), nil
	case float64:
		return binary.LittleEndian.AppendUint64(append(dst, tFloat64), math.Float64bits(x)), nil
	case string:
		return appendBytes(dst, tString, x), nil
	case []byte:
		return appendBytes(dst, tBytes, string(x)), nil
	case values.Decimal:
		return binary.AppendVarint(appendBytes(dst, tDecimal, x.Unscaled), int64(x.Scale)), nil
	case values.Date:
		return binary.AppendVarint(append(dst, tDate), int64(x)), nil
	case values.Time:
		return binary.AppendVarint(append(dst, tTime), int64(x)), nil
	case values.Timestamp:
		return binary.AppendVarint(append(dst, tTimestamp), int64(x)), nil
	case values.TimestampTZ:
		return binary.AppendVarint(append(dst, tTimestampTZ), int64(x)), nil
	case values.TimestampNano:
		return binary.AppendVarint(append(dst, tTimestampNano), int64(x)), nil
	case values.TimestampTZNano:
		return binary.AppendVarint(append(dst, tTimestampTZNano), int64(x)), nil
	case values.UUID:
		return append(append(dst, tUUID), x[:]...), nil
	case values.VariantJSON:
		return appendBytes(dst, tVariant, string(x)), nil
	case []any:
		dst = binary.AppendUvarint(append(dst, tList), uint64(len(x)))
		var err error
		for _, e := range x {
			if dst, err = appendValue(dst, e); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case []values.MapEntry:
		dst = binary.AppendUvarint(append(dst, tMap), uint64(len(x)))
		var err error
		for _, e := range x {
			if dst, err = appendValue(dst, e.Key); err != nil {
				return dst, err
			}
			if dst, err = appendValue(dst, e.Value); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case values.Row:
		return appendRow(append(dst, tStruct), x)
	}
	return dst, fmt.Errorf("value of Go type %T has no form in the iceberg sink", v)
}

// errShort is a value cut short: the encoder and decoder disagree.
var errShort = errors.New("truncated value")

// decoder reads what Encoder wrote.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() int {
	v, n := binary.Uvarint(d.b)
	if n <= 0 || v > uint64(len(d.b)) {
		d.fail(errShort)
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *decoder) take(n int) []byte {
	if n > len(d.b) {
		d.fail(errShort)
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail(errShort)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// image returns the next image, nil when the flag says there is none.
func (d *decoder) image() values.Row {
	if d.byte() == 0 {
		return nil
	}
	return d.row()
}

func (d *decoder) row() values.Row {
	n := d.uvarint()
	r := make(values.Row, n)
	for i := range r {
		r[i] = d.value()
	}
	return r
}

func (d *decoder) value() any {
	switch tag := d.byte(); tag {
	case tNull:
		return nil
	case tFalse:
		return false
	case tTrue:
		return true
	case tInt32:
		return int32(d.varint())
	case tInt64:
		return d.varint()
	case tFloat32:
		return math.Float32frombits(binary.LittleEndian.Uint32(append(d.take(4), 0, 0, 0, 0)))
	case tFloat64:
		return math.Float64frombits(binary.LittleEndian.Uint64(append(d.take(8), 0, 0, 0, 0, 0, 0, 0, 0)))
	case tString:
		return string(d.take(d.uvarint()))
	case tBytes:
		return d.take(d.uvarint())
	case tDecimal:
		u := string(d.take(d.uvarint()))
		return values.Decimal{Unscaled: u, Scale: int(d.varint())}
	case tDate:
		return values.Date(d.varint())
	case tTime:
		return values.Time(d.varint())
	case tTimestamp:
		return values.Timestamp(d.varint())
	case tTimestampTZ:
		return values.TimestampTZ(d.varint())
	case tTimestampNano:
		return values.TimestampNano(d.varint())
	case tTimestampTZNano:
		return values.TimestampTZNano(d.varint())
	case tUUID:
		var u values.UUID
		copy(u[:], d.take(16))
		return u
	case tVariant:
		return values.VariantJSON(d.take(d.uvarint()))
	case tList:
		out := make([]any, d.uvarint())
		for i := range out {
			out[i] = d.value()
		}
		return out
	case tMap:
		out := make([]values.MapEntry, d.uvarint())
		for i := range out {
			out[i].Key = d.value()
			out[i].Value = d.value()
		}
		return out
	case tStruct:
		return d.row()
	default:
		d.fail(fmt.Errorf("unknown value tag %d", tag))
		return nil
	}
}
