package source

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// boundsFile is a data file with column bounds on field 1 (long) and 2
// (string); a nil bound is absent.
type boundsFile struct {
	iceberg.DataFile
	lo, hi map[int][]byte
}

func (f boundsFile) LowerBoundValues() map[int][]byte { return f.lo }
func (f boundsFile) UpperBoundValues() map[int][]byte { return f.hi }

func bytesOf(t *testing.T, l iceberg.Literal) []byte {
	t.Helper()
	b, err := l.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEqualityMayMatch: which data files a delete keyed on (id, name) or
// on id alone can touch, judged by bounds and key tuples; a file is never
// skipped where a key could be in it.
func TestEqualityMayMatch(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	file := func(idLo, idHi int64, nameLo, nameHi string) dataFileMeta {
		f := boundsFile{lo: map[int][]byte{}, hi: map[int][]byte{}}
		if idLo <= idHi {
			f.lo[1], f.hi[1] = bytesOf(t, iceberg.Int64Literal(idLo)), bytesOf(t, iceberg.Int64Literal(idHi))
		}
		if nameLo != "" {
			f.lo[2], f.hi[2] = bytesOf(t, iceberg.StringLiteral(nameLo)), bytesOf(t, iceberg.StringLiteral(nameHi))
		}
		return dataFileMeta{file: f}
	}
	deletes := func(fields int, keys ...[]any) *eqDeletes {
		e := &eqDeletes{keys: map[string]struct{}{}}
		for i := 0; i < fields; i++ {
			e.fieldIdx = append(e.fieldIdx, i)
			e.ranges = append(e.ranges, keyRange{fieldID: i + 1})
		}
		for _, k := range keys {
			row := values.Row(k)
			e.keys[keyOf(row, e.fieldIdx)] = struct{}{}
			e.widen(row)
		}
		return e
	}
	k := func(id int64, name any) []any { return []any{id, name} }
	two := deletes(2, k(2, "a"), k(104, "y"))
	many := deletes(2)
	for i := int64(0); i <= maxTupleKeys; i++ { // one past the cap: ranges only
		row := values.Row(k(i*10, fmt.Sprint("k", i)))
		many.keys[keyOf(row, many.fieldIdx)] = struct{}{}
		many.widen(row)
	}
	for _, tc := range []struct {
		name string
		e    *eqDeletes
		m    dataFileMeta
		want bool
	}{
		{"holds the tuple (2, a)", two, file(1, 5, "a", "c"), true},
		{"overlaps both ranges, no tuple inside", two, file(1, 5, "x", "y"), false},
		{"overlaps both ranges, no tuple inside (2)", two, file(100, 105, "a", "a"), false},
		{"outside the id range", two, file(200, 300, "a", "z"), false},
		{"outside the name range", two, file(1, 200, "z", "zz"), false},
		{"no name bounds: id decides", two, file(100, 105, "", ""), true},
		{"no bounds at all", two, file(1, 0, "", ""), true},
		{"a null name key turns name pruning off", deletes(2, k(2, nil)), file(1, 5, "x", "y"), true},
		{"a null name key: id still prunes", deletes(2, k(2, nil)), file(10, 20, "x", "y"), false},
		{"one field", deletes(1, []any{int64(7)}), file(1, 5, "", ""), false},
		{"one field, in range", deletes(1, []any{int64(3)}), file(1, 5, "", ""), true},
		{"no keys deletes nothing", deletes(2), file(1, 5, "a", "c"), false},
		{"past the tuple cap: ranges only", many, file(5, 9, "k0", "k9"), true},
		{"past the tuple cap: outside the id range", many, file(-9, -1, "k0", "k9"), false},
	} {
		if got := tc.e.mayMatch(tc.m, sc); got != tc.want {
			t.Errorf("%s: mayMatch %v, want %v", tc.name, got, tc.want)
		}
	}
	if many.tuples != nil {
		t.Errorf("%d keys: %d tuples kept, want none past %d", len(many.keys), len(many.tuples), maxTupleKeys)
	}
}

// BenchmarkEqualityMayMatch: the cost of judging one candidate data file
// against a two-field delete, by key count (past maxTupleKeys only the
// ranges are compared). The file misses every tuple but overlaps both
// ranges, the worst case of the tuple check.
func BenchmarkEqualityMayMatch(b *testing.B) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	lo, _ := iceberg.Int64Literal(5).MarshalBinary()
	hi, _ := iceberg.Int64Literal(9).MarshalBinary()
	nlo, _ := iceberg.StringLiteral("k0").MarshalBinary()
	nhi, _ := iceberg.StringLiteral("k9").MarshalBinary()
	m := dataFileMeta{file: boundsFile{lo: map[int][]byte{1: lo, 2: nlo}, hi: map[int][]byte{1: hi, 2: nhi}}}
	for _, n := range []int{16, 1024, 1025} {
		e := &eqDeletes{keys: map[string]struct{}{}, fieldIdx: []int{0, 1},
			ranges: []keyRange{{fieldID: 1}, {fieldID: 2}}}
		for i := 0; i < n; i++ {
			row := values.Row{int64(i * 10), fmt.Sprint("k", i)}
			e.keys[keyOf(row, e.fieldIdx)] = struct{}{}
			e.widen(row)
		}
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			for b.Loop() {
				e.mayMatch(m, sc)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/file")
		})
	}
}
