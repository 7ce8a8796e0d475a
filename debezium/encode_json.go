package debezium

import (
	"encoding/base64"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/icecdc/icecdc/internal/jsonfloat"
	"github.com/icecdc/icecdc/values"
)

// This file holds the scalar JSON appenders shared by the JSON encodings.
// They are written by hand because encoding/json has no append API: going
// through json.Marshal would allocate for every value of every event. Their
// output is checked against encoding/json in the tests.

const hexDigits = "0123456789abcdef"

// jsonSafe reports, per byte, whether it may appear unescaped inside a JSON
// string as it is. Control characters, '"' and '\\' need escaping; bytes
// from utf8.RuneSelf up need a UTF-8 check. HTML characters (<, >, &) are
// left alone: the output is a message payload, never inlined into a page.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s as a quoted JSON string. Invalid UTF-8 becomes
// \ufffd, as encoding/json does, so that the output is always valid JSON and
// a consumer never sees bytes it cannot decode. U+2028 and U+2029 are
// escaped too (also as encoding/json does): they are legal JSON but end lines
// in JavaScript.
func appendJSONString(dst []byte, s string) []byte {
	// Most strings in events are plain ASCII: copy them in one go.
	n := plainPrefix(s)
	dst = append(dst, '"')
	dst = append(dst, s[:n]...)
	if n < len(s) {
		dst = appendEscaped(dst, s, n)
	}
	return append(dst, '"')
}

// appendEscaped appends s[i:] escaped, without quotes.
func appendEscaped(dst []byte, s string, i int) []byte {
	start := i
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i += 1 + plainPrefix(s[i+1:])
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}

const (
	lsb8 = 0x0101010101010101 // the low bit of each byte of a word
	msb8 = 0x8080808080808080 // the high bit of each byte of a word
)

// plainPrefix returns the length of the longest prefix of s that needs no
// escaping and no UTF-8 check. It tests eight bytes at a time with the
// word-at-a-time tricks of "Bit Twiddling Hacks" (haszero, hasless): each
// sets a byte's high bit when some byte of the word is a control character,
// '"', '\\' or not ASCII — exact as to whether any byte matches, which is all
// that is asked here — and finishes byte by byte.
func plainPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		c := s[i : i+8]
		x := uint64(c[0]) | uint64(c[1])<<8 | uint64(c[2])<<16 | uint64(c[3])<<24 |
			uint64(c[4])<<32 | uint64(c[5])<<40 | uint64(c[6])<<48 | uint64(c[7])<<56
		quote := x ^ (lsb8 * '"')
		backslash := x ^ (lsb8 * '\\')
		control := (x - lsb8*0x20) &^ x
		if (control|(quote-lsb8)&^quote|(backslash-lsb8)&^backslash|x)&msb8 != 0 {
			break
		}
	}
	for ; i < len(s) && jsonSafe[s[i]]; i++ {
	}
	return i
}

// appendJSONFloat appends f the way encoding/json does (the shortest
// representation that round-trips, ES6-style exponent switch). JSON has no
// NaN or infinities, and Iceberg float columns can hold them: they and
// negative zero follow jsonfloat's rule, instead of failing the event or
// turning them into null, which would lose the value.
func appendJSONFloat(dst []byte, f float64, bits int) []byte {
	if jsonfloat.Special(f) {
		return jsonfloat.AppendSpecial(dst, f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, f, format, -1, bits)
	if format == 'e' {
		// Shorten e-09 to e-9, as encoding/json does.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendBase64 appends b as a quoted standard base64 string, the encoding
// Debezium uses for bytes.
func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// appendUUID appends u in its canonical quoted form, lowercase 8-4-4-4-12.
func appendUUID(dst []byte, u values.UUID) []byte {
	dst = append(dst, '"')
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xf])
	}
	return append(dst, '"')
}

// appendDecimal appends d as a quoted plain decimal string with d.Scale
// fraction digits: a string because a JSON number would be read as a double
// by most consumers and lose digits of a decimal(38, s). ok is false when
// d.Unscaled is not base-10 digits with an optional leading '-'. Leading zeros
// are dropped and a negative zero is written without its sign.
func appendDecimal(dst []byte, d values.Decimal) (_ []byte, ok bool) {
	digits := d.Unscaled
	neg := len(digits) > 0 && digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) == 0 || d.Scale < 0 {
		return dst, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return dst, false
		}
	}
	for len(digits) > 1 && digits[0] == '0' {
		digits = digits[1:]
	}
	dst = append(dst, '"')
	if neg && digits != "0" {
		dst = append(dst, '-')
	}
	if len(digits) <= d.Scale {
		dst = append(dst, '0', '.')
		for i := len(digits); i < d.Scale; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	} else {
		point := len(digits) - d.Scale
		dst = append(dst, digits[:point]...)
		if d.Scale > 0 {
			dst = append(dst, '.')
			dst = append(dst, digits[point:]...)
		}
	}
	return append(dst, '"'), true
}

// decimalDigits counts the significant digits of a valid Decimal's unscaled
// value, to check it against the type's precision.
func decimalDigits(unscaled string) int {
	if len(unscaled) > 0 && unscaled[0] == '-' {
		unscaled = unscaled[1:]
	}
	for len(unscaled) > 1 && unscaled[0] == '0' {
		unscaled = unscaled[1:]
	}
	return len(unscaled)
}

const (
	microsPerDay = 86_400_000_000
	nanosPerDay  = 86_400_000_000_000
)

// appendDate appends the quoted ISO-8601 calendar date of days since
// 1970-01-01 in the proleptic Gregorian calendar.
func appendDate(dst []byte, days int64) []byte {
	dst = append(dst, '"')
	dst = appendCivilDate(dst, days)
	return append(dst, '"')
}

// appendTimeOfDay appends the quoted HH:MM:SS.ffffff of a time of day in
// microseconds. The caller checks the range [0, 24h).
func appendTimeOfDay(dst []byte, micros int64) []byte {
	dst = append(dst, '"')
	dst = appendClock(dst, micros/1_000_000)
	dst = append(dst, '.')
	dst = appendFraction(dst, micros%1_000_000, 6)
	return append(dst, '"')
}

// appendTimestamp appends the quoted ISO-8601 local date-time of ticks since
// the epoch, where one second has perSecond ticks (1e6 or 1e9), with all
// fraction digits so that every value of a column has the same width; zone
// adds "Z" for the UTC-adjusted types. Floor division keeps instants before
// 1970 on the right day.
func appendTimestamp(dst []byte, ticks int64, perSecond int64, digits int, zone bool) []byte {
	perDay := perSecond * 86_400
	days, rem := ticks/perDay, ticks%perDay
	if rem < 0 {
		days--
		rem += perDay
	}
	dst = append(dst, '"')
	dst = appendCivilDate(dst, days)
	dst = append(dst, 'T')
	dst = appendClock(dst, rem/perSecond)
	dst = append(dst, '.')
	dst = appendFraction(dst, rem%perSecond, digits)
	if zone {
		dst = append(dst, 'Z')
	}
	return append(dst, '"')
}

// appendCivilDate appends YYYY-MM-DD for days since 1970-01-01, using Howard
// Hinnant's days-to-civil algorithm (exact for the whole int64 day range
// used here, no time.Time needed). Years outside 0..9999 are written as
// java.time does (ISO-8601 expanded years): "+10000", "-0001".
func appendCivilDate(dst []byte, days int64) []byte {
	z := days + 719_468 // shift the epoch to 0000-03-01
	era := z
	if era < 0 {
		era -= 146_096
	}
	era /= 146_097
	doe := z - era*146_097                                    // [0, 146096]
	yoe := (doe - doe/1_460 + doe/36_524 - doe/146_096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)                  // [0, 365]
	mp := (5*doy + 2) / 153                                   // [0, 11], from March
	day := doy - (153*mp+2)/5 + 1
	month := mp + 3
	if month > 12 {
		month -= 12
	}
	year := yoe + era*400
	if month <= 2 {
		year++
	}
	switch {
	case year > 9999:
		dst = append(dst, '+')
		dst = strconv.AppendInt(dst, year, 10)
	case year < 0:
		dst = append(dst, '-')
		if year > -1000 {
			dst = appendFraction(dst, -year, 4)
		} else {
			dst = strconv.AppendInt(dst, -year, 10)
		}
	default:
		dst = appendFraction(dst, year, 4)
	}
	dst = append(dst, '-')
	dst = append2(dst, month)
	dst = append(dst, '-')
	return append2(dst, day)
}

// appendClock appends HH:MM:SS for seconds since midnight.
func appendClock(dst []byte, secs int64) []byte {
	dst = append2(dst, secs/3600)
	dst = append(dst, ':')
	dst = append2(dst, secs/60%60)
	dst = append(dst, ':')
	return append2(dst, secs%60)
}

// append2 appends a two-digit, zero-padded v in [0, 99].
func append2(dst []byte, v int64) []byte {
	return append(dst, byte('0'+v/10), byte('0'+v%10))
}

// appendFraction appends v (non-negative, < 10^width) zero-padded to width
// digits.
func appendFraction(dst []byte, v int64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for range width {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[i:]...)
}
