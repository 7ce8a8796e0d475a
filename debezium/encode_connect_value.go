package debezium

import (
	"fmt"
	"math/big"
	"strconv"

	"github.com/icecdc/icecdc/values"
)

// This file writes row values as the payload of Kafka Connect's JSON
// form: per the Connect schema connectSchemaOpen derives from the same
// compiled type, with the ConnectOptions' temporal and decimal modes.

// appendConnectValue appends v per t. A nil v is null; whether null is
// allowed is checked by the caller, which knows whether the field is
// optional.
func appendConnectValue(dst []byte, t *jsonType, v any, o *ConnectOptions) ([]byte, error) {
	if v == nil {
		return append(dst, "null"...), nil
	}
	switch t.kind {
	case kindDecimal:
		d, ok := v.(values.Decimal)
		if !ok {
			break
		}
		return t.appendConnectDecimal(dst, d, o.DecimalHandling)
	case kindDate:
		d, ok := v.(values.Date)
		if !ok {
			break
		}
		if o.TimePrecision == TimeISOString {
			return appendDate(dst, int64(d)), nil
		}
		return strconv.AppendInt(dst, int64(d), 10), nil
	case kindTime:
		tm, ok := v.(values.Time)
		if !ok {
			break
		}
		if tm < 0 || tm >= microsPerDay {
			return dst, t.domainError("microseconds in [0, 86400000000)", strconv.FormatInt(int64(tm), 10))
		}
		return o.appendTime(dst, int64(tm)), nil
	case kindTimestamp:
		ts, ok := v.(values.Timestamp)
		if !ok {
			break
		}
		return o.appendTimestamp(dst, int64(ts)), nil
	case kindTimestampNs:
		ts, ok := v.(values.TimestampNano)
		if !ok {
			break
		}
		return o.appendTimestampNano(dst, int64(ts)), nil
	case kindStruct:
		r, ok := v.(values.Row)
		if !ok {
			break
		}
		return t.appendConnectStruct(dst, r, o)
	case kindList:
		l, ok := v.([]any)
		if !ok {
			break
		}
		return t.appendConnectList(dst, l, o)
	case kindMap:
		m, ok := v.([]values.MapEntry)
		if !ok {
			break
		}
		return t.appendConnectMap(dst, m, o)
	case kindUnsupported:
		break
	default:
		// Booleans, numbers, strings, uuids, bytes (base64, which
		// JsonConverter decodes for bytes schemas), timestamps with a
		// zone (ZonedTimestamp strings): the same as debezium-json.
		return t.appendValue(dst, v)
	}
	return dst, &ValueError{Type: t.name, Want: t.want, Got: fmt.Sprintf("%T", v)}
}

// appendConnectStruct appends r as an object of t's fields. A null in a
// required field is an error: JsonConverter would refuse the record, and
// with it every record after it in a sink that stops on errors.
func (t *jsonType) appendConnectStruct(dst []byte, r values.Row, o *ConnectOptions) ([]byte, error) {
	if len(r) != len(t.fields) {
		return dst, &ValueError{Type: t.name, Want: strconv.Itoa(len(t.fields)) + " values",
			Got: strconv.Itoa(len(r))}
	}
	dst = append(dst, '{')
	for i := range t.fields {
		f := &t.fields[i]
		dst = append(dst, f.prefix...)
		if r[i] == nil && f.required {
			return dst, (&ValueError{Type: f.typ.name, Want: "a value (the field is required)", Got: "null"}).within(f.name)
		}
		var err error
		if dst, err = appendConnectValue(dst, f.typ, r[i], o); err != nil {
			return dst, err.(*ValueError).within(f.name)
		}
	}
	return append(dst, '}'), nil
}

func (t *jsonType) appendConnectList(dst []byte, l []any, o *ConnectOptions) ([]byte, error) {
	dst = append(dst, '[')
	for i, v := range l {
		if i > 0 {
			dst = append(dst, ',')
		}
		if v == nil && t.elemRequired {
			return dst, (&ValueError{Type: t.elem.name, Want: "a value (elements are required)", Got: "null"}).within("[" + strconv.Itoa(i) + "]")
		}
		var err error
		if dst, err = appendConnectValue(dst, t.elem, v, o); err != nil {
			return dst, err.(*ValueError).within("[" + strconv.Itoa(i) + "]")
		}
	}
	return append(dst, ']'), nil
}

// connectStringKind reports whether t's Connect schema type is string
// under o.
func connectStringKind(t *jsonType, o *ConnectOptions) bool {
	switch t.kind {
	case kindString, kindUUID, kindTimestampTZ, kindTimestampTZNs, kindVariant:
		return true
	case kindDate, kindTime, kindTimestamp, kindTimestampNs:
		return o.TimePrecision == TimeISOString
	case kindDecimal:
		return o.DecimalHandling == DecimalString
	}
	return false
}

// appendConnectMap appends m in Connect's JSON form: an object when the
// keys' Connect schema is a string, else an array of [key, value] pairs.
func (t *jsonType) appendConnectMap(dst []byte, m []values.MapEntry, o *ConnectOptions) ([]byte, error) {
	object := connectStringKind(t.key, o)
	if object {
		dst = append(dst, '{')
	} else {
		dst = append(dst, '[')
	}
	for i, e := range m {
		at := "[" + strconv.Itoa(i) + "]"
		if i > 0 {
			dst = append(dst, ',')
		}
		if e.Key == nil {
			return dst, (&ValueError{Type: t.key.name, Want: "a key", Got: "null"}).within(at + ".key")
		}
		if !object {
			dst = append(dst, '[')
		}
		// A key of a string schema is written as a JSON string, so it
		// serves as the member name as it is.
		var err error
		if dst, err = appendConnectValue(dst, t.key, e.Key, o); err != nil {
			return dst, err.(*ValueError).within(at + ".key")
		}
		if object {
			dst = append(dst, ':')
		} else {
			dst = append(dst, ',')
		}
		if e.Value == nil && t.elemRequired {
			return dst, (&ValueError{Type: t.elem.name, Want: "a value (map values are required)", Got: "null"}).within(at + ".value")
		}
		if dst, err = appendConnectValue(dst, t.elem, e.Value, o); err != nil {
			return dst, err.(*ValueError).within(at + ".value")
		}
		if !object {
			dst = append(dst, ']')
		}
	}
	if object {
		return append(dst, '}'), nil
	}
	return append(dst, ']'), nil
}

// appendConnectDecimal writes d per the decimal handling mode, after the
// same checks as debezium-json (scale, digits, precision).
func (t *jsonType) appendConnectDecimal(dst []byte, d values.Decimal, mode DecimalHandlingMode) ([]byte, error) {
	var scratch [48]byte
	plain, err := t.appendDecimal(scratch[:0], d) // quoted plain string
	if err != nil {
		return dst, err
	}
	switch mode {
	case DecimalString:
		return append(dst, plain...), nil
	case DecimalDouble:
		f, err := strconv.ParseFloat(string(plain[1:len(plain)-1]), 64)
		if err != nil {
			return dst, t.domainError("a decimal a double can hold", string(plain))
		}
		return appendJSONFloat(dst, f, 64), nil
	}
	return appendBase64(dst, unscaledBytes(d.Unscaled)), nil
}

// unscaledBytes returns the big-endian two's-complement bytes of a valid
// unscaled value, as short as Java's BigInteger.toByteArray makes them,
// which is what Connect's Decimal logical type holds.
func unscaledBytes(unscaled string) []byte {
	if len(unscaled) <= 18 { // fits an int64 whatever the digits
		v, err := strconv.ParseInt(unscaled, 10, 64)
		if err == nil {
			n := 1
			for n < 8 && (v < -(1<<(8*n-1)) || v >= 1<<(8*n-1)) {
				n++
			}
			b := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				b[i] = byte(v)
				v >>= 8
			}
			return b
		}
	}
	x, _ := new(big.Int).SetString(unscaled, 10) // checked by appendDecimal
	bits := x.BitLen()
	if x.Sign() < 0 {
		bits = new(big.Int).Not(x).BitLen() // -x-1
	}
	n := bits/8 + 1
	if x.Sign() < 0 {
		x.Add(x, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	return x.FillBytes(make([]byte, n))
}

// floorDiv divides rounding towards negative infinity, so that instants
// before 1970 keep their millisecond.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// appendTime writes a time of day, tm microseconds since midnight, as
// time.precision.mode o says: milliseconds (connect), an ISO string, or
// microseconds. The Row and the Arrow encodings share it.
func (o *ConnectOptions) appendTime(dst []byte, tm int64) []byte {
	switch o.TimePrecision {
	case TimeConnect:
		return strconv.AppendInt(dst, tm/1000, 10)
	case TimeISOString:
		return appendTimeOfDay(dst, tm)
	}
	return strconv.AppendInt(dst, tm, 10)
}

// appendTimestamp writes a timestamp without zone, us microseconds since
// the epoch, as o says.
func (o *ConnectOptions) appendTimestamp(dst []byte, us int64) []byte {
	switch o.TimePrecision {
	case TimeConnect:
		return strconv.AppendInt(dst, floorDiv(us, 1000), 10)
	case TimeISOString:
		return appendTimestamp(dst, us, 1_000_000, 6, false)
	}
	return strconv.AppendInt(dst, us, 10)
}

// appendTimestampNano writes a nanosecond timestamp without zone as o says.
func (o *ConnectOptions) appendTimestampNano(dst []byte, ns int64) []byte {
	switch o.TimePrecision {
	case TimeConnect:
		return strconv.AppendInt(dst, floorDiv(ns, 1_000_000), 10)
	case TimeISOString:
		return appendTimestamp(dst, ns, 1_000_000_000, 9, false)
	}
	return strconv.AppendInt(dst, ns, 10)
}
