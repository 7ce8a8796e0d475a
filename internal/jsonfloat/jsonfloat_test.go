package jsonfloat

import (
	"math"
	"testing"
)

func TestAppendSpecial(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
		ok   bool
	}{
		{math.NaN(), `"NaN"`, true},
		{math.Inf(1), `"Infinity"`, true},
		{math.Inf(-1), `"-Infinity"`, true},
		{math.Copysign(0, -1), "-0.0", true},
		{0, "", false},
		{-1.5, "", false},
		{math.MaxFloat64, "", false},
	} {
		got, ok := AppendSpecial(nil, tc.f)
		if string(got) != tc.want || ok != tc.ok {
			t.Errorf("AppendSpecial(%v) = %q, %v; want %q, %v", tc.f, got, ok, tc.want, tc.ok)
		}
	}
}
