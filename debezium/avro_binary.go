package debezium

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// This file turns a debezium-connect-json payload straight into the Avro
// binary body of the schema deriveAvro derived from the same Connect
// schema: the schema-change and transaction records, and the values
// avro_encode.go has no direct path for. It is written here, rather than decoding the JSON into Go values
// for twmb/avro to encode, because that detour costs some thirty
// allocations per event and most of the format's time; twmb/avro parses
// the schema before it is registered, and the tests decode what this
// writes with twmb/avro against the registered schema. The payload comes
// from this package's own encoder: fields in schema order, no spaces, so
// the scanner is strict and fails on anything else rather than guess.

// jsonScan reads one JSON text.
type jsonScan struct {
	b       []byte
	i       int
	scratch []byte
}

var errAvroJSON = errors.New("the Connect payload does not follow its schema")

func (s *jsonScan) fail(what string) error {
	return fmt.Errorf("%w: %s at byte %d", errAvroJSON, what, s.i)
}

func (s *jsonScan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScan) expect(c byte) error {
	if s.peek() != c {
		return s.fail("want " + strconv.QuoteRune(rune(c)))
	}
	s.i++
	return nil
}

// literal consumes lit if it is next.
func (s *jsonScan) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number returns the text of the number that is next.
func (s *jsonScan) number() ([]byte, error) {
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			s.i++
			continue
		}
		break
	}
	if s.i == start {
		return nil, s.fail("want a number")
	}
	return s.b[start:s.i], nil
}

// str returns the string that is next, unescaped. A string without a
// backslash is a slice of the input.
func (s *jsonScan) str() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	q := bytes.IndexByte(s.b[start:], '"')
	if q < 0 {
		return nil, s.fail("unterminated string")
	}
	if bytes.IndexByte(s.b[start:start+q], '\\') < 0 {
		s.i = start + q + 1
		return s.b[start : start+q], nil
	}
	// The slow path, for strings with escapes (source.sequence has some
	// in every event): unescaped into the scanner's scratch, which the
	// caller copies out before the next string.
	out := s.scratch[:0]
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			s.scratch = out
			return out, nil
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A pair, as encoding/json writes a rune past U+FFFF
				// only when asked; a lone half is U+FFFD, as Go decodes it.
				r2 := unicode.ReplacementChar
				if s.literal("\\u") {
					if x, ok := s.hex4(); ok {
						r2 = x
					}
				}
				if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
					r = d
				} else {
					r = unicode.ReplacementChar
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, s.fail("bad escape")
		}
	}
	return nil, s.fail("unterminated string")
}

func (s *jsonScan) hex4() (rune, bool) {
	if len(s.b)-s.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}

// parseInt reads a JSON integer of at most bits bits without the string
// strconv wants.
func parseInt(n []byte, bits int) (int64, bool) {
	neg := len(n) > 0 && n[0] == '-'
	d := n
	if neg {
		d = n[1:]
	}
	if len(d) == 0 || len(d) > 19 {
		x, err := strconv.ParseInt(string(n), 10, bits)
		return x, err == nil
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	limit := uint64(1) << (bits - 1)
	if neg {
		if u > limit {
			return 0, false
		}
		return -int64(u-1) - 1, true
	}
	if u >= limit {
		return 0, false
	}
	return int64(u), true
}

// appendVarint appends n zigzag-encoded, as Avro's int and long are.
func appendVarint(dst []byte, n int64) []byte {
	return binary.AppendUvarint(dst, uint64(n<<1)^uint64(n>>63))
}

// prependCount puts the block count n before the items written from
// start, as Avro's arrays and maps begin, and ends the block list.
func prependCount(dst []byte, start int, n int64) []byte {
	if n == 0 {
		return append(dst, 0)
	}
	var head [binary.MaxVarintLen64]byte
	h := appendVarint(head[:0], n)
	dst = append(dst, h...) // room
	copy(dst[start+len(h):], dst[start:len(dst)-len(h)])
	copy(dst[start:], h)
	return append(dst, 0)
}

// appendAvro appends the Avro binary of the JSON value next in s, per v.
func (v *avroValue) appendAvro(dst []byte, s *jsonScan) ([]byte, error) {
	if s.literal("null") {
		if !v.optional {
			return dst, s.fail("null where the schema wants a value")
		}
		if v.nullSecond {
			return append(dst, 2), nil // union branch 1
		}
		return append(dst, 0), nil
	}
	if v.optional {
		if v.nullSecond {
			dst = append(dst, 0)
		} else {
			dst = append(dst, 2)
		}
	}
	switch v.kind {
	case 'b':
		switch {
		case s.literal("true"):
			return append(dst, 1), nil
		case s.literal("false"):
			return append(dst, 0), nil
		}
		return dst, s.fail("want a boolean")
	case 'i', 'l':
		n, err := s.number()
		if err != nil {
			return dst, err
		}
		bits := 64
		if v.kind == 'i' {
			bits = 32
		}
		x, ok := parseInt(n, bits)
		if !ok {
			return dst, s.fail("bad integer " + string(n))
		}
		return appendVarint(dst, x), nil
	case 'f', 'd':
		return v.appendFloat(dst, s)
	case 's':
		t, err := s.str()
		if err != nil {
			return dst, err
		}
		dst = appendVarint(dst, int64(len(t)))
		return append(dst, t...), nil
	case 'y':
		return appendAvroBytes(dst, s)
	case 'r':
		return v.appendRecord(dst, s)
	case 'a', 'e':
		return v.appendArray(dst, s)
	case 'm':
		return v.appendMap(dst, s)
	}
	return dst, s.fail("a Connect type with no Avro form")
}

// appendFloat appends a float or double; JsonConverter spells the
// non-finite ones as strings.
func (v *avroValue) appendFloat(dst []byte, s *jsonScan) ([]byte, error) {
	var f float64
	if s.peek() == '"' {
		t, err := s.str()
		if err != nil {
			return dst, err
		}
		switch string(t) {
		case "NaN":
			f = math.NaN()
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			return dst, s.fail("bad number " + strconv.Quote(string(t)))
		}
	} else {
		n, err := s.number()
		if err != nil {
			return dst, err
		}
		bits := 64
		if v.kind == 'f' {
			bits = 32
		}
		if f, err = strconv.ParseFloat(string(n), bits); err != nil {
			return dst, s.fail("bad number " + string(n))
		}
	}
	if v.kind == 'f' {
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f))), nil
	}
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), nil
}

// appendAvroBytes appends the bytes of the base64 string next in s.
func appendAvroBytes(dst []byte, s *jsonScan) ([]byte, error) {
	t, err := s.str()
	if err != nil {
		return dst, err
	}
	n := base64.StdEncoding.DecodedLen(len(t))
	at := len(dst)
	dst = appendVarint(dst, int64(n)) // the most it can be; rewritten below
	body := len(dst)
	dst = append(dst, make([]byte, n)...)
	got, err := base64.StdEncoding.Decode(dst[body:], t)
	if err != nil {
		return dst[:at], s.fail("bad base64")
	}
	if got != n {
		// Padding made the bound larger than the bytes: write the
		// length again, and move the bytes next to it.
		var head [binary.MaxVarintLen64]byte
		h := appendVarint(head[:0], int64(got))
		copy(dst[at:], h)
		copy(dst[at+len(h):], dst[body:body+got])
		dst = dst[:at+len(h)+got]
	}
	return dst, nil
}

// appendRecord appends a struct's fields in schema order; the payload
// must name them in that order.
func (v *avroValue) appendRecord(dst []byte, s *jsonScan) ([]byte, error) {
	if err := s.expect('{'); err != nil {
		return dst, err
	}
	for i := range v.fields {
		f := &v.fields[i]
		if i > 0 {
			if err := s.expect(','); err != nil {
				return dst, err
			}
		}
		k, err := s.str()
		if err != nil {
			return dst, err
		}
		if string(k) != f.connect {
			return dst, s.fail(fmt.Sprintf("field %q where the schema has %q", k, f.connect))
		}
		if err := s.expect(':'); err != nil {
			return dst, err
		}
		if dst, err = f.v.appendAvro(dst, s); err != nil {
			return dst, err
		}
	}
	return dst, s.expect('}')
}

// appendArray appends an array, or a map whose keys are not strings (a
// JSON array of [key, value] pairs), as one counted block.
func (v *avroValue) appendArray(dst []byte, s *jsonScan) ([]byte, error) {
	if err := s.expect('['); err != nil {
		return dst, err
	}
	start, n := len(dst), int64(0)
	for s.peek() != ']' {
		if n > 0 {
			if err := s.expect(','); err != nil {
				return dst, err
			}
		}
		var err error
		if v.kind == 'a' {
			dst, err = v.elem.appendAvro(dst, s)
		} else {
			dst, err = v.appendEntry(dst, s)
		}
		if err != nil {
			return dst, err
		}
		n++
	}
	s.i++
	return prependCount(dst, start, n), nil
}

// appendMap appends a map with string keys as one counted block.
func (v *avroValue) appendMap(dst []byte, s *jsonScan) ([]byte, error) {
	if err := s.expect('{'); err != nil {
		return dst, err
	}
	start, n := len(dst), int64(0)
	for s.peek() != '}' {
		if n > 0 {
			if err := s.expect(','); err != nil {
				return dst, err
			}
		}
		k, err := s.str()
		if err != nil {
			return dst, err
		}
		dst = appendVarint(dst, int64(len(k)))
		dst = append(dst, k...)
		if err := s.expect(':'); err != nil {
			return dst, err
		}
		if dst, err = v.elem.appendAvro(dst, s); err != nil {
			return dst, err
		}
		n++
	}
	s.i++
	return prependCount(dst, start, n), nil
}

// appendEntry appends one [key, value] pair of a map whose keys are not
// strings as a MapEntry record.
func (v *avroValue) appendEntry(dst []byte, s *jsonScan) ([]byte, error) {
	if err := s.expect('['); err != nil {
		return dst, err
	}
	dst, err := v.key.appendAvro(dst, s)
	if err != nil {
		return dst, err
	}
	if err := s.expect(','); err != nil {
		return dst, err
	}
	if dst, err = v.elem.appendAvro(dst, s); err != nil {
		return dst, err
	}
	return dst, s.expect(']')
}
