// Package jsonfloat holds the one rule every JSON text of icecdc follows
// for the floats JSON has no number for: NaN and the infinities are the
// strings "NaN", "Infinity" and "-Infinity", Java's spelling, which
// Jackson (Debezium's consumers, Spark's to_json) reads and writes; and
// negative zero is -0.0, since many parsers read -0 as the integer 0 and
// lose the sign. Each text keeps its own rules for the other values.
package jsonfloat

import "math"

// Special reports whether f is NaN, an infinity or negative zero: a value
// AppendSpecial writes. It is small enough for the encoders to inline, so
// the finite values, nearly every one, cost no call.
func Special(f float64) bool {
	return f-f != 0 || f == 0 && math.Signbit(f)
}

// AppendSpecial appends f, a value Special reports.
func AppendSpecial(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return append(dst, "-0.0"...)
}
