package lineage

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// TestSetsAgreeWithClassify feeds random commits (duplicates, moves,
// future sequence numbers included) to Sets a file at a time, as a
// streamed commit does, and wants the classes and anomalies Classify
// computes from the rows.
func TestSetsAgreeWithClassify(t *testing.T) {
	const seq = 5
	for seed := uint64(0); seed < 500; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		var removed []Removed
		var added []Added
		files := 1 + rng.IntN(3)
		for f := range files {
			for p := range rng.IntN(12) {
				removed = append(removed, Removed{RowID: int64(rng.IntN(20)), LUSN: int64(rng.IntN(seq)), Loc: Loc{File: f, Pos: int64(p)}})
			}
		}
		for f := files; f < files+1+rng.IntN(3); f++ {
			for p := range rng.IntN(12) {
				added = append(added, Added{RowID: int64(rng.IntN(30)), LUSN: int64(seq - 2 + rng.IntN(4)), Loc: Loc{File: f, Pos: int64(p)}})
			}
		}
		changes, anoms := Classify(seq, removed, added)

		// The same, a file at a time.
		s := NewSets(seq)
		var got []Anomaly
		byFile := func(locs []Loc) [][]int {
			var out [][]int
			for i, l := range locs {
				if i == 0 || l.File != locs[i-1].File {
					out = append(out, nil)
				}
				out[len(out)-1] = append(out[len(out)-1], i)
			}
			return out
		}
		var rl, al []Loc
		for _, x := range removed {
			rl = append(rl, x.Loc)
		}
		for _, x := range added {
			al = append(al, x.Loc)
		}
		for _, idx := range byFile(rl) {
			ids := roaring64.New()
			for _, i := range idx {
				if !ids.CheckedAdd(uint64(removed[i].RowID)) {
					got = append(got, Anomaly{Kind: DuplicateRemoved, RowID: removed[i].RowID, Loc: removed[i].Loc})
				}
			}
			cross := s.RemoveAll(ids)
			for _, i := range idx {
				if cross.Contains(uint64(removed[i].RowID)) && !slices.Contains(got, Anomaly{Kind: DuplicateRemoved, RowID: removed[i].RowID, Loc: removed[i].Loc}) {
					got = append(got, Anomaly{Kind: DuplicateRemoved, RowID: removed[i].RowID, Loc: removed[i].Loc})
				}
			}
		}
		for _, idx := range byFile(al) {
			ids, changed := roaring64.New(), roaring64.New()
			var fileAnoms []Anomaly
			for _, i := range idx {
				x := added[i]
				if !ids.CheckedAdd(uint64(x.RowID)) {
					fileAnoms = append(fileAnoms, Anomaly{Kind: DuplicateAdded, RowID: x.RowID, Loc: x.Loc})
					continue
				}
				if x.LUSN == seq {
					changed.Add(uint64(x.RowID))
				} else if k := s.Anomaly(x.RowID, x.LUSN); k != "" {
					fileAnoms = append(fileAnoms, Anomaly{Kind: k, RowID: x.RowID, Loc: x.Loc})
				}
			}
			cross := s.AddedBefore(ids)
			for _, a := range fileAnoms {
				if a.Kind == DuplicateAdded || !cross.Contains(uint64(a.RowID)) {
					got = append(got, a)
				}
			}
			for _, i := range idx {
				if x := added[i]; cross.Contains(uint64(x.RowID)) && !slices.Contains(got, Anomaly{Kind: DuplicateAdded, RowID: x.RowID, Loc: x.Loc}) {
					got = append(got, Anomaly{Kind: DuplicateAdded, RowID: x.RowID, Loc: x.Loc})
				}
			}
			ids.AndNot(cross)
			changed.AndNot(cross)
			s.AddFile(ids, changed)
		}

		want := map[Kind]*roaring64.Bitmap{Delete: roaring64.New(), Update: roaring64.New(), Insert: roaring64.New()}
		for _, c := range changes {
			want[c.Kind].Add(uint64(c.RowID))
		}
		for k, b := range map[Kind]*roaring64.Bitmap{Delete: s.Deletes(), Update: s.Updates(), Insert: s.Inserts()} {
			if !b.Equals(want[k]) {
				t.Fatalf("seed %d: class %d: sets %v, Classify %v", seed, k, b.ToArray(), want[k].ToArray())
			}
		}
		key := func(a Anomaly) [4]int64 {
			return [4]int64{int64(a.Loc.File), a.Loc.Pos, a.RowID, int64(len(a.Kind))}
		}
		cmp := func(a, b Anomaly) int { x, y := key(a), key(b); return slices.Compare(x[:], y[:]) }
		slices.SortFunc(got, cmp)
		slices.SortFunc(anoms, cmp)
		if !slices.Equal(got, anoms) {
			t.Fatalf("seed %d: anomalies\n got %v\nwant %v", seed, got, anoms)
		}
	}
}
