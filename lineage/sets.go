package lineage

import "github.com/RoaringBitmap/roaring/v2/roaring64"

// Sets classifies a commit with row-id bitmaps alone, so that a commit of
// any size is classified without holding its rows: the caller feeds the
// removed row ids a file at a time (in contract order), then the live rows
// of the added files a file at a time (in contract order), and reads the
// classes off as bitmaps. It
// computes what Classify computes:
//
//	deletes = R \ A, updates = changed ∩ R, inserts = changed \ R
//
// Only a row id's first occurrence on each side counts; a later one is an
// anomaly (DuplicateRemoved, DuplicateAdded) and yields no event.
type Sets struct {
	seq     int64
	removed *roaring64.Bitmap // R
	added   *roaring64.Bitmap // A
	changed *roaring64.Bitmap // added with lusn == seq
}

// NewSets starts the classification of the snapshot with sequence number seq.
func NewSets(seq int64) *Sets {
	return &Sets{seq: seq, removed: roaring64.New(), added: roaring64.New(), changed: roaring64.New()}
}

// RemoveAll records removed row ids given as a bitmap, and returns those
// that were removed before (duplicates), which it does not record again.
func (s *Sets) RemoveAll(ids *roaring64.Bitmap) (dups *roaring64.Bitmap) {
	dups = roaring64.And(s.removed, ids)
	s.removed.Or(ids)
	return dups
}

// AddedBefore returns the ids of ids that were added before: in a file
// read concurrently with others, they are duplicates of an earlier file.
func (s *Sets) AddedBefore(ids *roaring64.Bitmap) *roaring64.Bitmap {
	return roaring64.And(s.added, ids)
}

// AddFile records the first occurrences of one added file's rows at once:
// ids are its row ids, changed those among them with lusn == seq. The
// caller has removed ids added before (AddedBefore) and reported the
// file's other anomalies itself (see Anomalies).
func (s *Sets) AddFile(ids, changed *roaring64.Bitmap) {
	s.added.Or(ids)
	s.changed.Or(changed)
}

// Anomaly returns the anomaly of the first occurrence of an added row
// without recording it: a moved row that was not removed, or a lusn above
// the snapshot's. It may be called concurrently once every removed row is
// recorded, and before AddFile changes the sets.
func (s *Sets) Anomaly(id, lusn int64) string {
	switch {
	case lusn == s.seq:
		return ""
	case lusn > s.seq:
		return FutureSequence
	case !s.removed.Contains(uint64(id)):
		return MovedNotRemoved
	}
	return ""
}

// Removed is R, the removed row ids.
func (s *Sets) Removed() *roaring64.Bitmap { return s.removed }

// Deletes returns R \ A.
func (s *Sets) Deletes() *roaring64.Bitmap { return roaring64.AndNot(s.removed, s.added) }

// Updates returns changed ∩ R.
func (s *Sets) Updates() *roaring64.Bitmap { return roaring64.And(s.changed, s.removed) }

// Inserts returns changed \ R.
func (s *Sets) Inserts() *roaring64.Bitmap { return roaring64.AndNot(s.changed, s.removed) }
