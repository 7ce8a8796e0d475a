package dv

import "github.com/RoaringBitmap/roaring/v2/roaring64"

// Diff returns the positions in newDV that are in none of old: the rows a
// commit newly deleted, given the vector it replaced and any v2 position
// deletes still live for the same data file. Nil bitmaps in old are skipped,
// and a nil newDV yields an empty bitmap. Diff modifies none of its arguments.
func Diff(newDV *roaring64.Bitmap, old ...*roaring64.Bitmap) *roaring64.Bitmap {
	if newDV == nil {
		return roaring64.New()
	}
	var out *roaring64.Bitmap
	for _, o := range old {
		switch {
		case o == nil:
		case out == nil:
			out = roaring64.AndNot(newDV, o)
		default:
			out.AndNot(o)
		}
		if out != nil && out.IsEmpty() {
			return out
		}
	}
	if out == nil {
		return newDV.Clone()
	}
	return out
}
