package lineage

import "math"

// RowID returns the effective _row_id of the row at pos of a data file:
// the stored value when present, else firstRowID+pos; ok is false when the
// file carries no lineage (firstRowID nil) and nothing is stored, and when
// firstRowID or pos is negative or their sum overflows: corrupt metadata
// yields no row id rather than a wrapped-around one.
func RowID(stored *int64, firstRowID *int64, pos int64) (id int64, ok bool) {
	if stored != nil {
		return *stored, true
	}
	if firstRowID == nil || *firstRowID < 0 || pos < 0 || *firstRowID > math.MaxInt64-pos {
		return 0, false
	}
	return *firstRowID + pos, true
}

// LastUpdatedSeq returns the effective _last_updated_sequence_number: the
// stored value when present, else the file's data sequence number; ok is
// false when the file carries no lineage.
func LastUpdatedSeq(stored *int64, firstRowID *int64, dataSeq int64) (seq int64, ok bool) {
	if stored != nil {
		return *stored, true
	}
	if firstRowID == nil {
		return 0, false
	}
	return dataSeq, true
}
