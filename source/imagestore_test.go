package source

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/icecdc/icecdc/values"
)

func sampleRow(i int) values.Row {
	return values.Row{nil, true, false, int32(-i), int64(i) << 40, float32(1.5), float64(i) / 3,
		fmt.Sprint("row ", i), []byte{1, 2, byte(i)}, values.Decimal{Unscaled: "-12345", Scale: 2},
		values.Date(i), values.Time(i), values.Timestamp(-i), values.TimestampTZ(i), values.TimestampNano(i), values.TimestampTZNano(i),
		values.UUID{byte(i), 2, 3}, []any{int64(1), nil, "x"}, []values.MapEntry{{Key: "k", Value: int32(i)}},
		values.Row{"nested", values.Row{nil}}, []any{}, string(make([]byte, 600+i%1000)), values.VariantJSON(fmt.Sprintf(`{"n":%d}`, i))}
}

// TestImageStore writes images in one order and reads them in another,
// held and spilled, and wants every value back as it was.
func TestImageStore(t *testing.T) {
	for _, budget := range []int64{16 << 20, 0} {
		const n = 5000 // a few chunks' worth
		s := newImageStore(n, budget, t.TempDir())
		var buf []byte
		for i := n - 1; i >= 0; i -= 2 { // odd slots only, backwards
			var err error
			if buf, err = appendRow(buf[:0], sampleRow(i)); err != nil {
				t.Fatal(err)
			}
			if err := s.put(i, buf); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.put(n-1, buf); err == nil {
			t.Fatal("a slot written twice must be an error")
		}
		if err := s.done(); err != nil {
			t.Fatal(err)
		}
		if s.spilled() != (budget == 0) || !s.spilled() && len(s.chunks) < 2 {
			t.Fatalf("budget %d: spilled %v, %d chunks", budget, s.spilled(), len(s.chunks))
		}
		for i := 0; i < n; i++ {
			rec, ok, err := s.get(i)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (i%2 == 1) {
				t.Fatalf("slot %d: present %v", i, ok)
			}
			if !ok {
				continue
			}
			d := rowDecoder{b: rec}
			got, err := d.row()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, sampleRow(i)) {
				t.Fatalf("slot %d:\n got %#v\nwant %#v", i, got, sampleRow(i))
			}
		}
		s.close()
	}
}

// TestRowDecoderTruncated: every prefix of an image is an error, never a
// panic or a row.
func TestRowDecoderTruncated(t *testing.T) {
	b, err := appendRow(nil, sampleRow(7))
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < len(b); k++ {
		d := rowDecoder{b: b[:k]}
		if _, err := d.row(); err == nil {
			t.Fatalf("prefix of %d bytes decoded", k)
		}
	}
	// Some fields decoded, the others skipped.
	d := rowDecoder{b: b}
	got, err := d.fields([]int{1, 7, 17, 19, 21}, len(sampleRow(7)))
	if err != nil {
		t.Fatal(err)
	}
	want := make(values.Row, len(sampleRow(7)))
	for _, i := range []int{1, 7, 17, 19, 21} {
		want[i] = sampleRow(7)[i]
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields:\n got %#v\nwant %#v", got, want)
	}
	if _, err := appendRow(nil, values.Row{struct{}{}}); err == nil {
		t.Fatal("an unknown value type must be an error")
	}
}
