package values

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/parquet/variant"
	"github.com/google/uuid"

	"github.com/icecdc/icecdc/internal/jsonfloat"
)

// VariantJSON is a variant value as JSON text, the text Spark's to_json
// gives the same value (VariantText has the rules). Variant objects keep
// their fields sorted by key (the variant spec requires it), so two
// encodings of one value give the same text: comparing texts compares
// values.
type VariantJSON string

// variantAt reads the value at row i of a, a variant column (shredded
// columns are un-shredded by arrow-go); a metadata or value buffer that
// is truncated or points out of range is an error, found by arrow-go's
// validation before any byte is walked.
func variantAt(a *extensions.VariantArray, i int) (VariantJSON, error) {
	v, err := a.Value(i)
	if err != nil {
		return "", fmt.Errorf("variant: %w", err)
	}
	b, err := AppendVariantJSON(nil, v)
	if err != nil {
		return "", fmt.Errorf("variant: %w", err)
	}
	return VariantJSON(b), nil
}

// AppendVariantJSON appends the JSON text of v, following Spark's to_json:
// objects and arrays as JSON, numbers exactly (integers in full, decimals
// as their plain decimal text without trailing fraction zeros, doubles
// and floats as Java's Double/Float.toString, NaN and infinities as the
// strings "NaN", "Infinity", "-Infinity"), dates "YYYY-MM-DD",
// timestamps "YYYY-MM-DD HH:MM:SS[.fraction]" with "+00:00" for those
// with a zone (in UTC), times "HH:MM:SS[.fraction]" (the fraction without
// trailing zeros), binary as base64 and uuids as their 8-4-4-4-12 text.
func AppendVariantJSON(dst []byte, v variant.Value) ([]byte, error) {
	switch v.Type() {
	case variant.Object:
		obj := v.Value().(variant.ObjectValue)
		dst = append(dst, '{')
		for i := range obj.NumElements() {
			f, err := obj.FieldAt(i)
			if err != nil {
				return dst, err
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONText(dst, f.Key)
			dst = append(dst, ':')
			if dst, err = AppendVariantJSON(dst, f.Value); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case variant.Array:
		arr := v.Value().(variant.ArrayValue)
		dst = append(dst, '[')
		for i := range arr.Len() {
			e, err := arr.Value(i)
			if err != nil {
				return dst, err
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = AppendVariantJSON(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	switch x := v.Value().(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case float32:
		return appendJavaFloat(dst, float64(x), 32), nil
	case float64:
		return appendJavaFloat(dst, x, 64), nil
	case string:
		return appendJSONText(dst, x), nil
	case []byte:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"'), nil
	case uuid.UUID:
		return append(append(append(dst, '"'), x.String()...), '"'), nil
	case arrow.Date32:
		return append(append(append(dst, '"'), x.ToTime().Format("2006-01-02")...), '"'), nil
	case arrow.Time64:
		t := time.UnixMicro(int64(x)).UTC()
		return append(append(append(dst, '"'), t.Format("15:04:05.999999")...), '"'), nil
	case arrow.Timestamp:
		var t time.Time
		layout := "2006-01-02 15:04:05.999999"
		zoned := false
		switch v.Type() {
		case variant.TimestampMicros:
			t, zoned = time.UnixMicro(int64(x)).UTC(), true
		case variant.TimestampMicrosNTZ:
			t = time.UnixMicro(int64(x)).UTC()
		case variant.TimestampNanos:
			t, zoned, layout = time.Unix(0, int64(x)).UTC(), true, "2006-01-02 15:04:05.999999999"
		default:
			t, layout = time.Unix(0, int64(x)).UTC(), "2006-01-02 15:04:05.999999999"
		}
		dst = append(append(dst, '"'), t.Format(layout)...)
		if zoned {
			dst = append(dst, "+00:00"...)
		}
		return append(dst, '"'), nil
	case variant.DecimalValue[decimal.Decimal32]:
		return appendPlainDecimal(dst, strconv.FormatInt(int64(x.Value.(decimal.Decimal32)), 10), int(x.Scale)), nil
	case variant.DecimalValue[decimal.Decimal64]:
		return appendPlainDecimal(dst, strconv.FormatInt(int64(x.Value.(decimal.Decimal64)), 10), int(x.Scale)), nil
	case variant.DecimalValue[decimal.Decimal128]:
		return appendPlainDecimal(dst, x.Value.(decimal.Decimal128).BigInt().String(), int(x.Scale)), nil
	}
	return dst, fmt.Errorf("variant value of type %v has no JSON form", v.Type())
}

// appendPlainDecimal appends unscaled×10^-scale as Spark writes a variant
// decimal (Java's BigDecimal stripTrailingZeros then toPlainString): no
// exponent, no trailing zeros after the point, "0" for any zero.
func appendPlainDecimal(dst []byte, unscaled string, scale int) []byte {
	neg := strings.HasPrefix(unscaled, "-")
	digits := strings.TrimPrefix(unscaled, "-")
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	intPart, frac := digits[:len(digits)-scale], strings.TrimRight(digits[len(digits)-scale:], "0")
	if strings.Trim(intPart, "0") == "" && frac == "" {
		return append(dst, '0')
	}
	if neg {
		dst = append(dst, '-')
	}
	dst = append(dst, intPart...)
	if frac != "" {
		dst = append(append(dst, '.'), frac...)
	}
	return dst
}

// appendJavaFloat appends f as Java's Double.toString (bits 64) or
// Float.toString (bits 32) writes it, the digits of Spark's to_json:
// the shortest digits that read back as f, plain for magnitudes in
// [1e-3, 1e7) with at least one fraction digit, else d.dddE±n. NaN and
// the infinities are JSON strings, as Jackson writes them by default
// (jsonfloat's rule, with -0.0).
func appendJavaFloat(dst []byte, f float64, bits int) []byte {
	if jsonfloat.Special(f) {
		return jsonfloat.AppendSpecial(dst, f)
	}
	if f == 0 {
		return append(dst, "0.0"...)
	}
	if abs := math.Abs(f); abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return append(dst, s...)
	}
	s := strconv.FormatFloat(f, 'e', -1, bits) // d.ddde±XX
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	dst = append(dst, mant...)
	dst = append(dst, 'E')
	return strconv.AppendInt(dst, int64(n), 10)
}

// appendJSONText appends s as a JSON string the way Jackson escapes it
// (quote, backslash and control characters; nothing else), so that the
// text matches Spark's; bytes that are not UTF-8 become U+FFFD.
func appendJSONText(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = utf8.AppendRune(dst, utf8.RuneError)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}
