package dv

import (
	"errors"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// FuzzDecode feeds arbitrary bytes to Decode (as a framed blob) and to
// DecodeBitmap (as a bare bitmap, so mutations reach the Roaring decoder
// without having to fix up a CRC). Neither may panic; whatever they accept
// must satisfy the checks they were asked for and survive Encode and Decode
// unchanged.
func FuzzDecode(f *testing.F) {
	m := readManifest(f)
	seeds := func(data []byte, card int64) {
		f.Add(data, int64(-1), int64(-1))
		if card >= 0 {
			f.Add(data, card, int64(1)<<33)
			f.Add(payload(data), card, int64(-1))
			f.Add(flip(data, len(data)-1), card, int64(-1))
			f.Add(patch(data, 4, 0, 0, 0, 0), int64(-1), int64(-1))
			f.Add(data[:len(data)-3], int64(-1), int64(-1))
			f.Add(reframe(append(payload(data), 0)), int64(-1), int64(-1))
		}
	}
	for _, v := range m.Vectors {
		seeds(readTestdata(f, v.File), v.Cardinality)
	}
	for _, p := range m.Puffin {
		seeds(readTestdata(f, p.File), -1)
	}
	for _, sub := range []string{"dv/java", "dv/puffin"} {
		for _, name := range fixtureFiles(f, sub) {
			seeds(readFixture(f, sub, name), -1)
		}
	}
	f.Add(reframe(unsortedArray()), int64(-1), int64(-1))
	f.Add(unsortedArray(), int64(2), int64(10))

	f.Fuzz(func(t *testing.T, data []byte, card, records int64) {
		if b, err := Decode(data, card, records); err == nil {
			if card >= 0 && b.GetCardinality() != uint64(card) {
				t.Fatalf("accepted cardinality %d, asked for %d", b.GetCardinality(), card)
			}
			if records >= 0 && !b.IsEmpty() && b.Maximum() >= uint64(records) {
				t.Fatalf("accepted position %d with record count %d", b.Maximum(), records)
			}
			roundTrip(t, b)
		} else if !isSentinel(err) {
			t.Fatalf("Decode error without a sentinel: %v", err)
		}
		if b, err := DecodeBitmap(data); err == nil {
			roundTrip(t, b)
		} else if !errors.Is(err, ErrBitmap) && !errors.Is(err, ErrKeyRange) {
			t.Fatalf("DecodeBitmap error is neither ErrBitmap nor ErrKeyRange: %v", err)
		}
	})
}

// roundTrip checks that an accepted bitmap encodes and decodes back to itself.
func roundTrip(t *testing.T, b *roaring64.Bitmap) {
	t.Helper()
	if err := b.Validate(); err != nil {
		t.Fatalf("accepted an invalid bitmap: %v", err)
	}
	blob, err := Encode(b)
	if err != nil {
		t.Fatalf("Encode of an accepted bitmap: %v", err)
	}
	again, err := Decode(blob, int64(b.GetCardinality()), -1)
	if err != nil {
		t.Fatalf("Decode of Encode: %v", err)
	}
	if !again.Equals(b) {
		t.Fatalf("round trip changed %d positions into %d", b.GetCardinality(), again.GetCardinality())
	}
}

func isSentinel(err error) bool {
	for _, s := range []error{ErrLength, ErrMagic, ErrCRC, ErrCardinality, ErrPosition, ErrKeyRange, ErrBitmap} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
