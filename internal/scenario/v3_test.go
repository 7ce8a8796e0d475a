package scenario

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestV3Lifecycle walks an unpartitioned v3 table through every kind of
// merge-on-read commit and checks live(S) and the commit's own manifest
// entries at each snapshot.
func TestV3Lifecycle(t *testing.T) {
	f := newFixture(t)
	tbl := f.create("orders", nil, 3)

	// s1: one data file, rows 0..2.
	tbl, s1 := f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{
		order(1, "alice", "new", 10), order(2, "bob", "new", 20), order(3, "alice", "new", 30),
	}))
	l1 := f.live(tbl, s1)
	wantIDs(t, "s1", l1, 1, 2, 3)
	for k, r := range l1 {
		if r.RowID != k-1 || r.LUSN != s1.SequenceNumber {
			t.Fatalf("s1 order %d: row id %d lusn %d", k, r.RowID, r.LUSN)
		}
	}
	wantCounts(t, "s1", count(f.entries(tbl, s1)), map[string]int{"ADDED data": 1})

	// s2: two data files in one commit; ids continue in file order.
	tbl, s2 := f.step(tbl, table.OpAppend)(AppendFiles(f.ctx, tbl, [][]map[string]any{
		{order(4, "dave", "new", 40), order(5, "erin", "new", 50)},
		{order(6, "carol", "new", 60), order(7, "carol", "new", 70)},
	}))
	l2 := f.live(tbl, s2)
	wantIDs(t, "s2", l2, 1, 2, 3, 4, 5, 6, 7)
	wantUnchanged(t, "s2", l1, l2)
	for k := int64(4); k <= 7; k++ {
		if r := l2[k]; r.RowID != k-1 || r.LUSN != s2.SequenceNumber {
			t.Fatalf("s2 order %d: row id %d lusn %d", k, r.RowID, r.LUSN)
		}
	}
	wantCounts(t, "s2", count(f.entries(tbl, s2)), map[string]int{"ADDED data": 2})

	// s3: one delete commit touching two files: two vectors in one Puffin.
	tbl, s3 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, in("order_id", 2, 5)))
	l3 := f.live(tbl, s3)
	wantIDs(t, "s3", l3, 1, 3, 4, 6, 7)
	wantUnchanged(t, "s3", l2, l3)
	e3 := f.entries(tbl, s3)
	wantCounts(t, "s3", count(e3), map[string]int{"ADDED dv": 2})
	if e3[0].Path != e3[1].Path || e3[0].ReferencedDataFile == e3[1].ReferencedDataFile {
		t.Fatalf("s3: want two vectors for two files in one Puffin file: %+v", e3)
	}

	// s4: a second delete on a file that has a vector: the new vector
	// holds both positions and the old one is removed in the same commit.
	tbl, s4 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, eq("order_id", int64(3))))
	l4 := f.live(tbl, s4)
	wantIDs(t, "s4", l4, 1, 4, 6, 7)
	wantUnchanged(t, "s4", l3, l4)
	e4 := f.entries(tbl, s4)
	wantCounts(t, "s4", count(e4), map[string]int{"ADDED dv": 1, "DELETED dv": 1})
	for _, e := range e4 {
		if e.Status == iceberg.EntryStatusADDED && e.Records != 2 {
			t.Fatalf("s4: folded vector has %d positions, want 2", e.Records)
		}
	}

	// s5: an update keeps the row id and takes the new sequence number.
	tbl, s5 := f.step(tbl, table.OpOverwrite)(Update(f.ctx, tbl, eq("order_id", int64(1)), func(r map[string]any) map[string]any {
		r["status"] = "shipped"
		return r
	}))
	l5 := f.live(tbl, s5)
	wantIDs(t, "s5", l5, 1, 4, 6, 7)
	wantUnchanged(t, "s5", l4, l5, 1)
	if r := l5[1]; r.RowID != l4[1].RowID || r.LUSN != s5.SequenceNumber || r.Values["status"] != "shipped" || r.Values["amount"] != 10.0 {
		t.Fatalf("s5: updated row %+v", r)
	}
	wantCounts(t, "s5", count(f.entries(tbl, s5)), map[string]int{"ADDED data": 1, "ADDED dv": 1, "DELETED dv": 1})
	// The update's file stores _row_id, not lusn (it inherits s5's).
	cols, stored := parquetColumn(t, f.addedDataFile(tbl, s5), "_row_id")
	if fmt.Sprint(cols) != "[order_id customer status amount _row_id]" || fmt.Sprint(stored) != fmt.Sprint([]any{l4[1].RowID}) {
		t.Fatalf("s5: update file columns %v, _row_id %v", cols, stored)
	}

	// s6: the same row again, now in the file s5 wrote (stored _row_id).
	tbl, s6 := f.step(tbl, table.OpOverwrite)(Update(f.ctx, tbl, eq("order_id", int64(1)), func(r map[string]any) map[string]any {
		r["amount"] = r["amount"].(float64) + 1
		return r
	}))
	l6 := f.live(tbl, s6)
	wantUnchanged(t, "s6", l5, l6, 1)
	if r := l6[1]; r.RowID != l4[1].RowID || r.LUSN != s6.SequenceNumber || r.Values["status"] != "shipped" || r.Values["amount"] != 11.0 {
		t.Fatalf("s6: updated row %+v", r)
	}
	wantCounts(t, "s6", count(f.entries(tbl, s6)), map[string]int{"ADDED data": 1, "ADDED dv": 1})

	// s7: a delete that the statistics prove covers a whole file drops it.
	tbl, s7 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, eq("customer", "carol")))
	l7 := f.live(tbl, s7)
	wantIDs(t, "s7", l7, 1, 4)
	wantUnchanged(t, "s7", l6, l7)
	e7 := f.entries(tbl, s7)
	wantCounts(t, "s7", count(e7), map[string]int{"DELETED data": 1})
	// The DELETED entry of the removed file still exposes first_row_id.
	if e7[0].FirstRowID == nil || *e7[0].FirstRowID != l6[6].RowID {
		t.Fatalf("s7: deleted entry first_row_id %v, want %d", e7[0].FirstRowID, l6[6].RowID)
	}

	// s8: compaction moves rows without changing ids or lusn.
	tbl, s8 := f.step(tbl, table.OpReplace)(Compact(f.ctx, tbl))
	l8 := f.live(tbl, s8)
	wantIDs(t, "s8", l8, 1, 4)
	wantUnchanged(t, "s8", l7, l8)
	// Live at s7: the s1 file (all rows deleted by its vector, still
	// live), the s2 file with a vector, the s5 file (vector) and the s6 file.
	wantCounts(t, "s8", count(f.entries(tbl, s8)), map[string]int{"ADDED data": 1, "DELETED data": 4, "DELETED dv": 3})
	// The compacted file stores both lineage columns.
	cols, stored = parquetColumn(t, f.addedDataFile(tbl, s8), "_last_updated_sequence_number")
	lusns := map[any]bool{l7[1].LUSN: true, l7[4].LUSN: true}
	if fmt.Sprint(cols) != "[order_id customer status amount _row_id _last_updated_sequence_number]" ||
		len(stored) != 2 || !lusns[stored[0]] || !lusns[stored[1]] || stored[0] == stored[1] {
		t.Fatalf("s8: compacted file columns %v, lusn %v", cols, stored)
	}
	for _, e := range f.entries(tbl, s8) {
		if e.Status == iceberg.EntryStatusADDED && e.DataSeq != s8.SequenceNumber {
			t.Fatalf("s8: compacted file has data sequence number %d, want %d", e.DataSeq, s8.SequenceNumber)
		}
		if e.Status == iceberg.EntryStatusDELETED && e.Content == iceberg.EntryContentData && e.FirstRowID == nil {
			t.Fatalf("s8: deleted data entry without first_row_id: %+v", e)
		}
	}

	// s9: update of a compacted row (stored ids, out of position order).
	tbl, s9 := f.step(tbl, table.OpOverwrite)(Update(f.ctx, tbl, eq("order_id", int64(4)), func(r map[string]any) map[string]any {
		r["status"] = "cancelled"
		return r
	}))
	l9 := f.live(tbl, s9)
	wantUnchanged(t, "s9", l8, l9, 4)
	if r := l9[4]; r.RowID != l8[4].RowID || r.LUSN != s9.SequenceNumber || r.Values["status"] != "cancelled" {
		t.Fatalf("s9: updated row %+v", r)
	}

	// s10: fresh rows after all that get ids above every id used so far.
	tbl, s10 := f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{order(8, "frank", "new", 80)}))
	l10 := f.live(tbl, s10)
	if r := l10[8]; r.RowID <= l2[7].RowID || r.LUSN != s10.SequenceNumber {
		t.Fatalf("s10: new row %+v", r)
	}

	if got := Snapshots(tbl); len(got) != 10 || got[0].SnapshotID != s1.SnapshotID || got[9].SnapshotID != s10.SnapshotID {
		t.Fatalf("Snapshots: %d snapshots", len(got))
	}
}

// TestUpdateManyFiles updates rows of two data files in one commit: one
// Puffin file with a vector per file, one new data file, every id kept.
func TestUpdateManyFiles(t *testing.T) {
	f := newFixture(t)
	tbl := f.create("orders", nil, 3)
	tbl, s1 := f.step(tbl, table.OpAppend)(AppendFiles(f.ctx, tbl, [][]map[string]any{
		{order(1, "alice", "new", 10), order(2, "bob", "paid", 20)},
		{order(3, "carol", "new", 30), order(4, "dave", "new", 40)},
	}))
	l1 := f.live(tbl, s1)
	tbl, s2 := f.step(tbl, table.OpOverwrite)(Update(f.ctx, tbl, eq("status", "new"), func(r map[string]any) map[string]any {
		r["status"] = "paid"
		return r
	}))
	l2 := f.live(tbl, s2)
	wantIDs(t, "s2", l2, 1, 2, 3, 4)
	wantUnchanged(t, "s2", l1, l2, 1, 3, 4)
	for _, k := range []int64{1, 3, 4} {
		if r := l2[k]; r.RowID != l1[k].RowID || r.LUSN != s2.SequenceNumber || r.Values["status"] != "paid" {
			t.Fatalf("s2: order %d: %+v", k, r)
		}
	}
	e2 := f.entries(tbl, s2)
	wantCounts(t, "s2", count(e2), map[string]int{"ADDED data": 1, "ADDED dv": 2})
	var puffins = map[string]bool{}
	for _, e := range e2 {
		if e.DV {
			puffins[e.Path] = true
		}
	}
	if len(puffins) != 1 {
		t.Fatalf("s2: vectors in %d Puffin files", len(puffins))
	}
}
