package scenario

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// TestUpgradeFromV2 builds a v2 table with v2 position deletes, upgrades
// it to v3 and checks the first_row_id back-fill of the next commit.
func TestUpgradeFromV2(t *testing.T) {
	f := newFixture(t)
	tbl := f.create("legacy", nil, 2)
	tbl, _ = f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{
		order(1, "alice", "new", 10), order(2, "bob", "new", 20), order(3, "carol", "new", 30),
	}))
	tbl, _ = f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{
		order(4, "dave", "new", 40), order(5, "erin", "new", 50), order(6, "frank", "new", 60),
	}))
	// A merge-on-read delete on v2 writes one Parquet position-delete file
	// for both data files (so with no referenced_data_file).
	tbl, s3 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, in("order_id", 2, 5)))
	e3 := f.entries(tbl, s3)
	wantCounts(t, "s3", count(e3), map[string]int{"ADDED posdel": 1})
	if e3[0].Records != 2 || e3[0].ReferencedDataFile != "" {
		t.Fatalf("s3: position-delete file %+v", e3[0])
	}
	rows, err := AllRows(f.ctx, tbl, s3.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].RowID != NoLineage || rows[0].LUSN != NoLineage {
		t.Fatalf("v2 rows: %+v", rows)
	}

	tbl, err = UpgradeToV3(f.ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if v := tbl.Metadata().Version(); v != 3 || tbl.CurrentSnapshot().SnapshotID != s3.SnapshotID {
		t.Fatalf("upgrade: version %d, head %d (want 3, %d)", v, tbl.CurrentSnapshot().SnapshotID, s3.SnapshotID)
	}
	if _, err := LiveRows(f.ctx, tbl, s3.SnapshotID); !errors.Is(err, ErrNoLineage) {
		t.Fatalf("pre-upgrade snapshot: err %v, want ErrNoLineage", err)
	}

	// The first v3 commit assigns first_row_id: its own manifest first,
	// then the pre-upgrade manifests, counting deleted rows too.
	tbl, s4 := f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{order(7, "gina", "new", 70)}))
	l4 := f.live(tbl, s4)
	wantIDs(t, "s4", l4, 1, 3, 4, 6, 7)
	if r := l4[7]; r.RowID != 0 || r.LUSN != s4.SequenceNumber {
		t.Fatalf("s4: new row %+v", r)
	}
	// Files keep their position order: order 1 and 3 are two apart (the
	// deleted order 2 holds the id in between), likewise 4 and 6.
	if l4[3].RowID-l4[1].RowID != 2 || l4[6].RowID-l4[4].RowID != 2 {
		t.Fatalf("s4: back-filled ids %d %d %d %d", l4[1].RowID, l4[3].RowID, l4[4].RowID, l4[6].RowID)
	}
	if l4[1].LUSN != 1 || l4[4].LUSN != 2 {
		t.Fatalf("s4: back-filled lusn %d %d, want 1 2", l4[1].LUSN, l4[4].LUSN)
	}
	t.Logf("back-filled row ids: 1→%d 3→%d 4→%d 6→%d", l4[1].RowID, l4[3].RowID, l4[4].RowID, l4[6].RowID)

	// Update folds the file's v2 position delete into its new vector, so
	// order 2 stays deleted.
	tbl, s5 := f.step(tbl, table.OpOverwrite)(Update(f.ctx, tbl, eq("order_id", int64(3)), func(r map[string]any) map[string]any {
		r["status"] = "paid"
		return r
	}))
	l5 := f.live(tbl, s5)
	wantIDs(t, "s5", l5, 1, 3, 4, 6, 7)
	wantUnchanged(t, "s5", l4, l5, 3)
	if r := l5[3]; r.RowID != l4[3].RowID || r.LUSN != s5.SequenceNumber {
		t.Fatalf("s5: updated row %+v", r)
	}
	for _, e := range f.entries(tbl, s5) {
		if e.DV && e.Records != 2 {
			t.Fatalf("s5: vector with %d positions, want 2 (v2 delete + update)", e.Records)
		}
	}

	// iceberg-go's own merge-on-read delete does not fold the v2 position
	// delete of order 5 into the new vector, and since a vector makes
	// readers skip position-delete files, order 5 comes back.
	tbl, s6 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, eq("order_id", int64(4))))
	l6 := f.live(tbl, s6)
	wantIDs(t, "s6 (iceberg-go resurrects order 5)", l6, 1, 3, 5, 6, 7)
}
