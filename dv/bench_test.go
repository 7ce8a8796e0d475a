package dv

import (
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// BenchmarkDecodeDiff1M decodes a vector of 1,000,000 positions in a
// 4,000,000-row file (a dense merge-on-read delete of 400,000 rows plus
// 600,000 scattered ones) and diffs it against the ~500,000-position vector it
// replaces: the per-file work of one large delete commit.
func BenchmarkDecodeDiff1M(b *testing.B) {
	const rows = 4_000_000
	rng := rand.New(rand.NewPCG(1, 2))
	newDV := roaring64.New()
	newDV.AddRange(2_000_000, 2_400_000)
	oldDV := roaring64.New()
	oldDV.AddRange(2_000_000, 2_200_000)
	for newDV.GetCardinality() < 1_000_000 {
		p := rng.Uint64N(rows)
		if !newDV.CheckedAdd(p) {
			continue
		}
		if p%12 < 5 { // about 250,000 of the scattered ones were deleted before
			oldDV.Add(p)
		}
	}
	for range 50_000 { // rows the old vector deleted that were since rewritten
		oldDV.Add(rng.Uint64N(rows))
	}
	blob, err := Encode(newDV)
	if err != nil {
		b.Fatal(err)
	}
	card := int64(newDV.GetCardinality())
	b.SetBytes(int64(len(blob)))
	b.ReportAllocs()
	var added uint64
	for b.Loop() {
		got, err := Decode(blob, card, rows)
		if err != nil {
			b.Fatal(err)
		}
		added = Diff(got, oldDV).GetCardinality()
	}
	b.ReportMetric(float64(card)*float64(b.N)/b.Elapsed().Seconds(), "positions/s")
	b.ReportMetric(float64(oldDV.GetCardinality()), "old-positions")
	b.ReportMetric(float64(added), "new-positions")
}

// BenchmarkDecodeManyRuns decodes the costliest vector a canonical writer
// produces: 1,048,576 rows where every 33-row stretch starts with 20 deleted
// ones, so each container holds ~1,986 runs (Java and roaring still choose
// runs over a bitmap there). roaring's Validate checks run containers pairwise,
// O(runs²), and that dominates the decode.
func BenchmarkDecodeManyRuns(b *testing.B) {
	const rows = 1 << 20
	dv := roaring64.New()
	for start := uint64(0); start < rows; start += 33 {
		dv.AddRange(start, min(start+20, rows))
	}
	blob, err := Encode(dv)
	if err != nil {
		b.Fatal(err)
	}
	card := int64(dv.GetCardinality())
	b.SetBytes(int64(len(blob)))
	for b.Loop() {
		if _, err := Decode(blob, card, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(card)*float64(b.N)/b.Elapsed().Seconds(), "positions/s")
}
