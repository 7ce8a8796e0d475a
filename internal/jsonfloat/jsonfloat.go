// Package jsonfloat holds the one rule every JSON text of icecdc follows
// for the floats JSON has no number for: NaN and the infinities are the
// strings "NaN", "Infinity" and "-Infinity", Java's spelling, which
// Jackson (Debezium's consumers, Spark's to_json) reads and writes; and
// negative zero is -0.0, since many parsers read -0 as the integer 0 and
// lose the sign. Each text keeps its own rules for the other values.
package jsonfloat

import "math"

// AppendSpecial appends f when it is NaN, an infinity or negative zero,
// and reports whether it was; any other value is left to the caller.
func AppendSpecial(dst []byte, f float64) ([]byte, bool) {
	switch {
	case f == 0 && math.Signbit(f):
		return append(dst, "-0.0"...), true
	case math.IsNaN(f):
		return append(dst, `"NaN"`...), true
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...), true
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...), true
	}
	return dst, false
}
