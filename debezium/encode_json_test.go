package debezium

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/icecdc/icecdc/values"
)

// marshalNoHTML is encoding/json's output for v without HTML escaping, the
// reference for the hand-written appenders.
func marshalNoHTML(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestAppendJSONString(t *testing.T) {
	cases := map[string]string{
		"":                       `""`,
		"plain":                  `"plain"`,
		`say "hi" \ bye`:         `"say \"hi\" \\ bye"`,
		"nl\ncr\rtab\t":          `"nl\ncr\rtab\t"`,
		"\b\f":                   `"\b\f"`,
		"\x00\x01\x1f":           `"\u0000\u0001\u001f"`,
		"del\x7f":                "\"del\x7f\"",
		"<a href='x'>&</a>":      `"<a href='x'>&</a>"`,
		"Zoë, 東京, 🙂":             `"Zoë, 東京, 🙂"`,
		"line\u2028para\u2029":   `"line\u2028para\u2029"`,
		"bad \xff byte":          `"bad \ufffd byte"`,
		"cut \xe6\x9d":           `"cut \ufffd\ufffd"`,
		"surrogate \xed\xa0\x80": `"surrogate \ufffd\ufffd\ufffd"`,
	}
	for in, want := range cases {
		got := string(appendJSONString(nil, in))
		if got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", in, got, want)
		}
		if ref := marshalNoHTML(t, in); got != ref {
			t.Errorf("appendJSONString(%q) = %s, encoding/json says %s", in, got, ref)
		}
	}
}

// FuzzAppendJSONString checks the escaper against encoding/json on any
// input: the output must be byte-identical (which implies valid JSON that
// decodes to the input with invalid UTF-8 replaced).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\xff", "\u2028", "é\xc3", "\t\\/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONString([]byte("x"), s)[1:]
		if ref := marshalNoHTML(t, s); string(got) != ref {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json says %s", s, got, ref)
		}
	})
}

func TestAppendJSONFloat(t *testing.T) {
	doubles := []float64{0, 1, -1, 0.1, 1234.5, 1e20, 1e21, 123456789e15,
		1e-6, 9.99e-7, 1e-7, -2.5e-10, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Pi}
	for _, f := range doubles {
		if got, ref := string(appendJSONFloat(nil, f, 64)), marshalNoHTML(t, f); got != ref {
			t.Errorf("double %g: got %s, encoding/json says %s", f, got, ref)
		}
	}
	floats := []float32{0, 0.1, 1.5, 1e-7, 3.4e38, 16777216, -0.3}
	for _, f := range floats {
		if got, ref := string(appendJSONFloat(nil, float64(f), 32)), marshalNoHTML(t, f); got != ref {
			t.Errorf("float %g: got %s, encoding/json says %s", f, got, ref)
		}
	}
	// encoding/json writes -0, which many parsers read as the integer 0.
	special := map[float64]string{math.NaN(): `"NaN"`, math.Inf(1): `"Infinity"`, math.Inf(-1): `"-Infinity"`, math.Copysign(0, -1): `-0.0`}
	for f, want := range special {
		for _, bits := range []int{32, 64} {
			if got := string(appendJSONFloat(nil, f, bits)); got != want {
				t.Errorf("%v (%d bits) = %s, want %s", f, bits, got, want)
			}
		}
	}
}

func TestAppendDecimal(t *testing.T) {
	cases := []struct {
		d    values.Decimal
		want string
	}{
		{values.Decimal{Unscaled: "12345", Scale: 2}, "123.45"},
		{values.Decimal{Unscaled: "-12345", Scale: 2}, "-123.45"},
		{values.Decimal{Unscaled: "-5", Scale: 2}, "-0.05"},
		{values.Decimal{Unscaled: "5", Scale: 3}, "0.005"},
		{values.Decimal{Unscaled: "7", Scale: 0}, "7"},
		{values.Decimal{Unscaled: "-7", Scale: 0}, "-7"},
		{values.Decimal{Unscaled: "0", Scale: 2}, "0.00"},
		{values.Decimal{Unscaled: "-0", Scale: 2}, "0.00"},
		{values.Decimal{Unscaled: "000120", Scale: 1}, "12.0"},
		{values.Decimal{Unscaled: "-100", Scale: 2}, "-1.00"},
		{values.Decimal{Unscaled: "99999999999999999999999999999999999999", Scale: 10}, "9999999999999999999999999999.9999999999"},
		{values.Decimal{Unscaled: "-12345678901234567890123456789012345678", Scale: 38}, "-0.12345678901234567890123456789012345678"},
	}
	for _, tc := range cases {
		got, ok := appendDecimal(nil, tc.d)
		if !ok || string(got) != strconv.Quote(tc.want) {
			t.Errorf("appendDecimal(%+v) = %s, %v; want %q", tc.d, got, ok, tc.want)
		}
	}
	for _, bad := range []values.Decimal{{Unscaled: "", Scale: 0}, {Unscaled: "-", Scale: 2}, {Unscaled: "1.5", Scale: 1}, {Unscaled: "+1", Scale: 0},
		{Unscaled: " 1", Scale: 0}, {Unscaled: "1e3", Scale: 0}, {Unscaled: "--1", Scale: 0}, {Unscaled: "1", Scale: -1}} {
		if got, ok := appendDecimal([]byte("x"), bad); ok || string(got) != "x" {
			t.Errorf("appendDecimal(%+v) = %s, %v; want rejected with dst unchanged", bad, got, ok)
		}
	}
	// Against math/big for random values of every precision and scale.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		digits := make([]byte, rng.IntN(38)+1)
		for i := range digits {
			digits[i] = byte('0' + rng.IntN(10))
		}
		unscaled := string(digits)
		if rng.IntN(2) == 0 {
			unscaled = "-" + unscaled
		}
		n, _ := new(big.Int).SetString(unscaled, 10)
		scale := rng.IntN(39)
		want := new(big.Rat).SetFrac(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).FloatString(scale)
		got, ok := appendDecimal(nil, values.Decimal{Unscaled: unscaled, Scale: scale})
		if !ok || string(got) != strconv.Quote(want) {
			t.Fatalf("appendDecimal(%s, %d) = %s, math/big says %s", unscaled, scale, got, want)
		}
	}
}

func TestAppendDate(t *testing.T) {
	cases := map[int64]string{
		0:          "1970-01-01",
		-1:         "1969-12-31",
		11_016:     "2000-02-29",
		-25_567:    "1900-01-01",
		-719_162:   "0001-01-01",
		-719_528:   "0000-01-01",
		-719_529:   "-0001-12-31",
		-1_084_041: "-0999-12-31",
		-1_084_042: "-0999-12-30",
		2_932_896:  "9999-12-31",
		2_932_897:  "+10000-01-01",
	}
	for days, want := range cases {
		if got := string(appendDate(nil, days)); got != strconv.Quote(want) {
			t.Errorf("appendDate(%d) = %s, want %q", days, got, want)
		}
	}
	// Days from 0001-01-01 to 9999-12-31 against the time package: a
	// stride that lands on every day of the month and of the 400-year
	// cycle over the range, and every day around the epoch.
	for days := int64(-719_162); days <= 2_932_896; days += 37 {
		want := time.Unix(days*86_400, 0).UTC().Format(`"2006-01-02"`)
		if got := string(appendDate(nil, days)); got != want {
			t.Fatalf("appendDate(%d) = %s, time says %s", days, got, want)
		}
	}
	for days := int64(-4 * 366); days <= 4*366; days++ {
		want := time.Unix(days*86_400, 0).UTC().Format(`"2006-01-02"`)
		if got := string(appendDate(nil, days)); got != want {
			t.Fatalf("appendDate(%d) = %s, time says %s", days, got, want)
		}
	}
}

func TestAppendTimestamp(t *testing.T) {
	cases := []struct {
		ticks   int64
		nanos   bool
		zone    bool
		want    string
		comment string
	}{
		{0, false, false, "1970-01-01T00:00:00.000000", "epoch"},
		{-1, false, false, "1969-12-31T23:59:59.999999", "one microsecond before the epoch"},
		{-1, true, true, "1969-12-31T23:59:59.999999999Z", "one nanosecond before the epoch"},
		{-86_400_000_000, false, true, "1969-12-31T00:00:00.000000Z", "a whole day before"},
		{-2_208_988_800_000_000, false, false, "1900-01-01T00:00:00.000000", "1900"},
		{-62_135_596_800_000_001, false, false, "0000-12-31T23:59:59.999999", "before year 1"},
		{1_717_331_696_789_012, false, true, "2024-06-02T12:34:56.789012Z", ""},
		{math.MaxInt64, true, false, "2262-04-11T23:47:16.854775807", "last timestamp_ns"},
		{math.MinInt64, true, false, "1677-09-21T00:12:43.145224192", "first timestamp_ns"},
	}
	for _, tc := range cases {
		perSec, digits := int64(1_000_000), 6
		if tc.nanos {
			perSec, digits = 1_000_000_000, 9
		}
		if got := string(appendTimestamp(nil, tc.ticks, perSec, digits, tc.zone)); got != strconv.Quote(tc.want) {
			t.Errorf("%s: appendTimestamp(%d) = %s, want %q", tc.comment, tc.ticks, got, tc.want)
		}
	}
	// Random instants against the time package, both units.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		const first, last = -62_135_596_800_000_000, 253_402_300_799_999_999 // years 1 to 9999
		us := first + rng.Int64N(last-first)
		want := time.UnixMicro(us).UTC().Format(`"2006-01-02T15:04:05.000000Z"`)
		if got := string(appendTimestamp(nil, us, 1_000_000, 6, true)); got != want {
			t.Fatalf("appendTimestamp(%d µs) = %s, time says %s", us, got, want)
		}
		ns := int64(rng.Uint64())
		want = time.Unix(0, ns).UTC().Format(`"2006-01-02T15:04:05.000000000"`)
		if got := string(appendTimestamp(nil, ns, 1_000_000_000, 9, false)); got != want {
			t.Fatalf("appendTimestamp(%d ns) = %s, time says %s", ns, got, want)
		}
	}
}

func TestAppendTimeOfDay(t *testing.T) {
	cases := map[int64]string{
		0:              "00:00:00.000000",
		1:              "00:00:00.000001",
		45_296_789_012: "12:34:56.789012",
		86_399_999_999: "23:59:59.999999",
	}
	for us, want := range cases {
		if got := string(appendTimeOfDay(nil, us)); got != strconv.Quote(want) {
			t.Errorf("appendTimeOfDay(%d) = %s, want %q", us, got, want)
		}
	}
}

func TestAppendUUIDAndBase64(t *testing.T) {
	u := values.UUID{0xF8, 0x1D, 0x4F, 0xAE, 0x7D, 0xEC, 0x11, 0xD0, 0xA7, 0x65, 0x00, 0xA0, 0xC9, 0x1E, 0x6B, 0xF6}
	if got := string(appendUUID(nil, u)); got != `"f81d4fae-7dec-11d0-a765-00a0c91e6bf6"` {
		t.Errorf("appendUUID = %s", got)
	}
	for _, b := range [][]byte{nil, {}, {0}, {0xfb, 0xff}, []byte("any carnal pleasure")} {
		if got, ref := string(appendBase64(nil, b)), marshalNoHTML(t, b); got != ref && !(b == nil && got == `""`) {
			t.Errorf("appendBase64(%x) = %s, encoding/json says %s", b, got, ref)
		}
	}
}

// TestPlainPrefix checks the word-at-a-time scan against the byte table
// for every byte value in every position of a word and of the tail.
func TestPlainPrefix(t *testing.T) {
	for pos := range 11 {
		for c := range 256 {
			b := []byte("abcdefghijk")
			b[pos] = byte(c)
			want := len(b)
			if c >= utf8.RuneSelf || !jsonSafe[c] {
				want = pos
			}
			if got := plainPrefix(string(b)); got != want {
				t.Errorf("plainPrefix(%q) = %d, want %d", b, got, want)
			}
		}
	}
}
