package lineage

import (
	"math"
	"reflect"
	"testing"
)

func TestClassify(t *testing.T) {
	const s = 7
	l := func(f int, p int64) Loc { return Loc{File: f, Pos: p} }
	tests := []struct {
		name      string
		removed   []Removed
		added     []Added
		want      []Change
		anomalies []string
	}{
		{
			name:  "append only",
			added: []Added{{RowID: 10, LUSN: s, Loc: l(0, 0)}, {RowID: 11, LUSN: s, Loc: l(0, 1)}},
			want: []Change{
				{Kind: Insert, RowID: 10, LUSN: s, After: l(0, 0)},
				{Kind: Insert, RowID: 11, LUSN: s, After: l(0, 1)},
			},
		},
		{
			name:    "delete only",
			removed: []Removed{{RowID: 3, LUSN: 2, Loc: l(1, 3)}},
			want:    []Change{{Kind: Delete, RowID: 3, LUSN: 2, Before: l(1, 3)}},
		},
		{
			name:    "update keeps row id, phases ordered",
			removed: []Removed{{RowID: 3, LUSN: 2, Loc: l(0, 3)}, {RowID: 4, LUSN: 2, Loc: l(0, 4)}},
			added:   []Added{{RowID: 20, LUSN: s, Loc: l(1, 0)}, {RowID: 3, LUSN: s, Loc: l(1, 1)}},
			want: []Change{
				{Kind: Delete, RowID: 4, LUSN: 2, Before: l(0, 4)},
				{Kind: Update, RowID: 3, LUSN: s, Before: l(0, 3), After: l(1, 1)},
				{Kind: Insert, RowID: 20, LUSN: s, After: l(1, 0)},
			},
		},
		{
			name:    "copy-on-write carry-over is a move",
			removed: []Removed{{RowID: 1, Loc: l(0, 0)}, {RowID: 2, Loc: l(0, 1)}},
			added:   []Added{{RowID: 1, LUSN: 3, Loc: l(1, 0)}},
			want:    []Change{{Kind: Delete, RowID: 2, Before: l(0, 1)}},
		},
		{
			name:      "moved row that was not removed is an anomaly, not an event",
			added:     []Added{{RowID: 1, LUSN: 3, Loc: l(1, 0)}},
			anomalies: []string{MovedNotRemoved},
		},
		{
			name:      "duplicate added id and future lusn",
			added:     []Added{{RowID: 1, LUSN: s, Loc: l(1, 0)}, {RowID: 1, LUSN: s, Loc: l(1, 1)}, {RowID: 2, LUSN: s + 1, Loc: l(1, 2)}},
			want:      []Change{{Kind: Insert, RowID: 1, LUSN: s, After: l(1, 0)}},
			anomalies: []string{DuplicateAdded, FutureSequence},
		},
		{
			name:      "duplicate removed id",
			removed:   []Removed{{RowID: 5, Loc: l(0, 0)}, {RowID: 5, Loc: l(1, 0)}},
			want:      []Change{{Kind: Delete, RowID: 5, Before: l(0, 0)}},
			anomalies: []string{DuplicateRemoved},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, an := Classify(s, tc.removed, tc.added)
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes:\n got %+v\nwant %+v", got, tc.want)
			}
			var kinds []string
			for _, a := range an {
				kinds = append(kinds, a.Kind)
			}
			if !reflect.DeepEqual(kinds, tc.anomalies) {
				t.Fatalf("anomalies: got %v want %v", kinds, tc.anomalies)
			}
		})
	}
}

func TestRules(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	if id, ok := RowID(nil, v(100), 5); !ok || id != 105 {
		t.Fatalf("inherited row id: %d %v", id, ok)
	}
	if id, ok := RowID(v(7), v(100), 5); !ok || id != 7 {
		t.Fatalf("stored row id must win: %d %v", id, ok)
	}
	if _, ok := RowID(nil, nil, 5); ok {
		t.Fatal("no first_row_id must give null")
	}
	if _, ok := RowID(nil, v(math.MaxInt64-6), 7); ok {
		t.Fatal("a row id past 2^63-1 must give null, not wrap around")
	}
	if _, ok := RowID(nil, v(-3), 1); ok {
		t.Fatal("a negative first_row_id must give null")
	}
	if s, ok := LastUpdatedSeq(nil, v(0), 9); !ok || s != 9 {
		t.Fatalf("inherited lusn: %d %v", s, ok)
	}
	if s, ok := LastUpdatedSeq(v(4), v(0), 9); !ok || s != 4 {
		t.Fatalf("stored lusn must win: %d %v", s, ok)
	}
	if _, ok := LastUpdatedSeq(nil, nil, 9); ok {
		t.Fatal("no first_row_id must give null lusn")
	}
}
