package jsonfloat

import (
	"math"
	"testing"
)

func TestSpecial(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string // "": not special
	}{
		{math.NaN(), `"NaN"`},
		{math.Inf(1), `"Infinity"`},
		{math.Inf(-1), `"-Infinity"`},
		{math.Copysign(0, -1), "-0.0"},
		{0, ""},
		{-1.5, ""},
		{math.MaxFloat64, ""},
		{-math.SmallestNonzeroFloat64, ""},
	} {
		if got := Special(tc.f); got != (tc.want != "") {
			t.Errorf("Special(%v) = %v", tc.f, got)
			continue
		}
		if tc.want != "" {
			if got := string(AppendSpecial(nil, tc.f)); got != tc.want {
				t.Errorf("AppendSpecial(%v) = %q, want %q", tc.f, got, tc.want)
			}
		}
	}
}
