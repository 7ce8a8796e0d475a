package dv

import (
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

func TestDiff(t *testing.T) {
	of := roaring64.BitmapOf
	for _, tc := range []struct {
		name string
		new  *roaring64.Bitmap
		old  []*roaring64.Bitmap
		want []uint64
	}{
		{"no old", of(1, 2, 3), nil, []uint64{1, 2, 3}},
		{"nil old", of(1, 2, 3), []*roaring64.Bitmap{nil}, []uint64{1, 2, 3}},
		{"nil new", nil, []*roaring64.Bitmap{of(1)}, nil},
		{"replaced vector", of(1, 3, 5, 7, 9), []*roaring64.Bitmap{of(1, 3, 5)}, []uint64{7, 9}},
		{"vector and v2 deletes", of(1, 3, 5, 7, 9), []*roaring64.Bitmap{of(1), nil, of(9, 11)}, []uint64{3, 5, 7}},
		{"all old", of(1, 2), []*roaring64.Bitmap{of(1), of(2), of(3)}, nil},
		{"above 2^32", of(5, 1<<32+5, 3<<32), []*roaring64.Bitmap{of(1<<32 + 5)}, []uint64{5, 3 << 32}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []*roaring64.Bitmap
			for _, b := range append([]*roaring64.Bitmap{tc.new}, tc.old...) {
				if b != nil {
					before = append(before, b.Clone())
				}
			}
			got := Diff(tc.new, tc.old...)
			if !slices.Equal(got.ToArray(), tc.want) {
				t.Fatalf("got %v, want %v", got.ToArray(), tc.want)
			}
			got.Add(1 << 40) // the result must not share containers with the arguments
			i := 0
			for _, b := range append([]*roaring64.Bitmap{tc.new}, tc.old...) {
				if b != nil {
					if !b.Equals(before[i]) {
						t.Errorf("argument %d changed", i)
					}
					i++
				}
			}
		})
	}
}

// TestDiffJavaVector diffs a vector Java wrote, holding every container kind
// in two buckets, against one that deletes all of the first bucket.
func TestDiffJavaVector(t *testing.T) {
	v, blob := vector(t, "container-kinds.bin")
	newDV, err := Decode(blob, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	oldDV := roaring64.New()
	oldDV.AddRange(0, bucket) // everything in the first bucket
	got := Diff(newDV, oldDV)
	var want []uint64
	for _, p := range expand(v.Positions) {
		if p >= bucket {
			want = append(want, p)
		}
	}
	if !slices.Equal(got.ToArray(), want) {
		t.Fatalf("got %d positions, want %d", got.GetCardinality(), len(want))
	}
}
