package scenario

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestCopyOnWrite checks iceberg-go's copy-on-write overwrite and delete on
// files without deletes: survivors of a rewritten file keep row id and lusn
// (moved rows), new rows get new ids and the commit's sequence number.
func TestCopyOnWrite(t *testing.T) {
	f := newFixture(t)
	tbl := f.create("orders", nil, 3)
	tbl, s1 := f.step(tbl, table.OpAppend)(AppendFiles(f.ctx, tbl, [][]map[string]any{
		{order(1, "alice", "new", 10), order(2, "bob", "new", 20), order(3, "carol", "new", 30)},
		{order(4, "dave", "paid", 40), order(5, "dave", "paid", 50)},
	}))
	l1 := f.live(tbl, s1)

	// Overwrite: order 2 replaced by a new version, order 4 and 5's file
	// (all rows match by statistics) removed, one new row added.
	tbl, s2 := f.step(tbl, table.OpOverwrite)(OverwriteCoW(f.ctx, tbl,
		iceberg.NewOr(eq("order_id", int64(2)), eq("customer", "dave")),
		[]map[string]any{order(2, "bob", "paid", 21), order(6, "erin", "new", 60)}))
	l2 := f.live(tbl, s2)
	wantIDs(t, "s2", l2, 1, 2, 3, 6)
	wantUnchanged(t, "s2", l1, l2, 2)
	if r := l2[2]; r.RowID == l1[2].RowID || r.LUSN != s2.SequenceNumber || r.Values["status"] != "paid" {
		t.Fatalf("s2: overwritten row %+v (was %+v)", r, l1[2])
	}
	if r := l2[6]; r.LUSN != s2.SequenceNumber {
		t.Fatalf("s2: new row %+v", r)
	}
	// The rewritten survivors 1 and 3 live in a new file with the old lusn.
	e2 := f.entries(tbl, s2)
	wantCounts(t, "s2", count(e2), map[string]int{"ADDED data": 2, "DELETED data": 2})
	for _, e := range e2 {
		if e.Status == iceberg.EntryStatusDELETED && e.FirstRowID == nil {
			t.Fatalf("s2: deleted entry without first_row_id: %+v", e)
		}
	}

	// Copy-on-write delete: the file holding 1, 3 is rewritten without 3,
	// and so is the file holding 2, 6 although none of its rows matches:
	// its order_id bounds [2, 6] contain 3 and iceberg-go rewrites every
	// file the statistics cannot exclude. Its rows are moved, not changed.
	tbl, s3 := f.step(tbl, table.OpDelete)(DeleteCoW(f.ctx, tbl, eq("order_id", int64(3))))
	l3 := f.live(tbl, s3)
	wantIDs(t, "s3", l3, 1, 2, 6)
	wantUnchanged(t, "s3", l2, l3)
	wantCounts(t, "s3", count(f.entries(tbl, s3)), map[string]int{"ADDED data": 2, "DELETED data": 2})
	if tbl.Properties()[table.WriteDeleteModeKey] != table.WriteModeMergeOnRead {
		t.Fatalf("DeleteCoW left write.delete.mode=%s", tbl.Properties()[table.WriteDeleteModeKey])
	}
}

// TestCopyOnWriteIgnoresVector pins the iceberg-go pitfall documented on
// OverwriteCoW: a copy-on-write rewrite of a file with a deletion vector
// brings the deleted rows back and leaves the vector live, dangling.
func TestCopyOnWriteIgnoresVector(t *testing.T) {
	f := newFixture(t)
	tbl := f.create("orders", nil, 3)
	tbl, _ = f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{
		order(1, "alice", "new", 10), order(2, "bob", "new", 20), order(3, "carol", "new", 30),
	}))
	tbl, s2 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, eq("order_id", int64(2))))
	wantIDs(t, "s2", f.live(tbl, s2), 1, 3)

	tbl, s3 := f.step(tbl, table.OpOverwrite)(OverwriteCoW(f.ctx, tbl, eq("order_id", int64(3)), nil))
	// Spec: live(s3) = {1}. iceberg-go resurrects the deleted order 2.
	wantIDs(t, "s3 (iceberg-go resurrects order 2)", f.live(tbl, s3), 1, 2)
	wantCounts(t, "s3", count(f.entries(tbl, s3)), map[string]int{"ADDED data": 1, "DELETED data": 1})
	assertDangling(t, f, tbl, s3, 1)
}

// TestDeleteDropsFileWithVector pins another iceberg-go behaviour: when a
// merge-on-read delete removes a whole data file that has a deletion
// vector, the vector is not removed.
func TestDeleteDropsFileWithVector(t *testing.T) {
	f := newFixture(t)
	tbl := f.create("orders", nil, 3)
	tbl, _ = f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{
		order(1, "carol", "new", 10), order(2, "carol", "new", 20),
	}))
	tbl, _ = f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, eq("order_id", int64(1))))
	tbl, s3 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, eq("customer", "carol")))
	if rows := f.live(tbl, s3); len(rows) != 0 {
		t.Fatalf("s3: %d live rows", len(rows))
	}
	wantCounts(t, "s3", count(f.entries(tbl, s3)), map[string]int{"DELETED data": 1})
	assertDangling(t, f, tbl, s3, 1)
}

// assertDangling checks that snap has n live deletion vectors referencing
// data files that are not live.
func assertDangling(t *testing.T, f *fixture, tbl *table.Table, snap table.Snapshot, n int) {
	t.Helper()
	dvs, err := LiveDeletionVectors(f.ctx, tbl, snap)
	if err != nil {
		t.Fatal(err)
	}
	data, err := LiveDataFiles(f.ctx, tbl, snap)
	if err != nil {
		t.Fatal(err)
	}
	dangling := 0
	for ref := range dvs {
		if !data[ref] {
			dangling++
		}
	}
	if dangling != n {
		t.Fatalf("snapshot %d: %d dangling deletion vectors, want %d (vectors %v)", snap.SnapshotID, dangling, n, dvs)
	}
}
