package lineage

import (
	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// Loc is where a row image lives: a file (an index the caller defines, in
// manifest order) and a position in it.
type Loc struct {
	File int
	Pos  int64
}

// Removed is a row of live(P) that the snapshot took away from its place:
// deleted by a new vector, or carried by a data file the snapshot removed.
type Removed struct {
	RowID int64
	LUSN  int64
	Loc   Loc
}

// Added is a live row of a data file the snapshot added.
type Added struct {
	RowID int64
	LUSN  int64
	Loc   Loc
}

// Change is one classified row event: Before is set for deletes and
// updates, After for updates and inserts.
type Change struct {
	Kind   Kind
	RowID  int64
	LUSN   int64
	Before Loc
	After  Loc
}

// Kind is the class of a change.
type Kind int

const (
	Delete Kind = iota
	Update
	Insert
)

// Anomaly is a row that breaks the lineage rules; it yields no event.
type Anomaly struct {
	Kind  string
	RowID int64
	Loc   Loc
}

// Anomaly kinds.
const (
	DuplicateRemoved = "duplicate-removed-row-id" // one row id removed from two places
	DuplicateAdded   = "duplicate-added-row-id"   // one row id live twice in the added files
	MovedNotRemoved  = "moved-row-not-removed"    // lusn < s but the row was not live elsewhere in P
	FutureSequence   = "lusn-above-snapshot"      // lusn > s: written by a later commit?
)

// Classify computes the events of a snapshot with sequence number seq:
//
//	deletes = R \ A, updates = changed ∩ R, inserts = changed \ R
//
// where R is the removed row ids, A every added live row id and changed the
// added rows with lusn == seq. removed and added must each be in contract
// order (manifest order of the file, then position); the result keeps it
// inside each phase and puts every delete before every update before every
// insert.
func Classify(seq int64, removed []Removed, added []Added) ([]Change, []Anomaly) {
	var anomalies []Anomaly
	r := roaring64.New()
	before := make(map[int64]Loc, len(removed))
	for _, x := range removed {
		if !r.CheckedAdd(uint64(x.RowID)) {
			anomalies = append(anomalies, Anomaly{Kind: DuplicateRemoved, RowID: x.RowID, Loc: x.Loc})
			continue
		}
		before[x.RowID] = x.Loc
	}

	a := roaring64.New()
	var updates, inserts []Change
	for _, x := range added {
		if !a.CheckedAdd(uint64(x.RowID)) {
			anomalies = append(anomalies, Anomaly{Kind: DuplicateAdded, RowID: x.RowID, Loc: x.Loc})
			continue
		}
		switch {
		case x.LUSN == seq:
			if loc, ok := before[x.RowID]; ok {
				updates = append(updates, Change{Kind: Update, RowID: x.RowID, LUSN: x.LUSN, Before: loc, After: x.Loc})
			} else {
				inserts = append(inserts, Change{Kind: Insert, RowID: x.RowID, LUSN: x.LUSN, After: x.Loc})
			}
		case x.LUSN > seq:
			anomalies = append(anomalies, Anomaly{Kind: FutureSequence, RowID: x.RowID, Loc: x.Loc})
		default:
			if !r.Contains(uint64(x.RowID)) {
				anomalies = append(anomalies, Anomaly{Kind: MovedNotRemoved, RowID: x.RowID, Loc: x.Loc})
			}
		}
	}

	out := make([]Change, 0, len(removed)+len(updates)+len(inserts))
	for _, x := range removed {
		if a.Contains(uint64(x.RowID)) {
			continue
		}
		if loc, ok := before[x.RowID]; !ok || loc != x.Loc {
			continue // a duplicate, already reported
		}
		out = append(out, Change{Kind: Delete, RowID: x.RowID, LUSN: x.LUSN, Before: x.Loc})
	}
	out = append(out, updates...)
	out = append(out, inserts...)
	return out, anomalies
}
