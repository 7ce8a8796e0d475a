package scenario

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// TestEqualityDeletes checks equality deletes and upserts on an
// unpartitioned v3 table: deleted rows vanish, an upserted row gets a new
// row id and the commit's sequence number.
func TestEqualityDeletes(t *testing.T) {
	f := newFixture(t)
	tbl := f.create("orders", nil, 3)
	tbl, s1 := f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{
		order(1, "alice", "new", 10), order(2, "bob", "new", 20), order(3, "carol", "new", 30),
	}))
	l1 := f.live(tbl, s1)

	tbl, s2 := f.step(tbl, table.OpDelete)(EqualityDelete(f.ctx, tbl, []string{"order_id"},
		[]map[string]any{{"order_id": int64(2)}}))
	l2 := f.live(tbl, s2)
	wantIDs(t, "s2", l2, 1, 3)
	wantUnchanged(t, "s2", l1, l2)
	e2 := f.entries(tbl, s2)
	wantCounts(t, "s2", count(e2), map[string]int{"ADDED eqdel": 1})
	if len(e2[0].EqualityFieldIDs) != 1 || e2[0].EqualityFieldIDs[0] != 1 {
		t.Fatalf("s2: equality field ids %v", e2[0].EqualityFieldIDs)
	}

	// Upsert of an existing and a new key in one commit.
	tbl, s3 := f.step(tbl, table.OpOverwrite)(EqualityUpsert(f.ctx, tbl, []string{"order_id"}, []map[string]any{
		order(3, "carol", "paid", 31), order(4, "dave", "new", 40),
	}))
	l3 := f.live(tbl, s3)
	wantIDs(t, "s3", l3, 1, 3, 4)
	wantUnchanged(t, "s3", l2, l3, 3, 4)
	if r := l3[3]; r.RowID == l2[3].RowID || r.LUSN != s3.SequenceNumber || r.Values["status"] != "paid" {
		t.Fatalf("s3: upserted row %+v (was %+v)", r, l2[3])
	}
	if r := l3[4]; r.LUSN != s3.SequenceNumber {
		t.Fatalf("s3: inserted row %+v", r)
	}
	wantCounts(t, "s3", count(f.entries(tbl, s3)), map[string]int{"ADDED data": 1, "ADDED eqdel": 1})

	// A position-delta update after equality deletes still finds the row.
	tbl, s4 := f.step(tbl, table.OpOverwrite)(Update(f.ctx, tbl, eq("order_id", int64(3)), func(r map[string]any) map[string]any {
		r["status"] = "shipped"
		return r
	}))
	l4 := f.live(tbl, s4)
	wantUnchanged(t, "s4", l3, l4, 3)
	if r := l4[3]; r.RowID != l3[3].RowID || r.LUSN != s4.SequenceNumber {
		t.Fatalf("s4: updated row %+v", r)
	}
}

// TestNoCommit checks what mutations that change nothing do, and that
// Update refuses a v2 table.
func TestNoCommit(t *testing.T) {
	f := newFixture(t)
	tbl := f.create("orders", nil, 3)
	tbl, s1 := f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{order(1, "alice", "new", 10)}))
	if _, err := Update(f.ctx, tbl, eq("order_id", int64(9)), func(r map[string]any) map[string]any { return r }); !errors.Is(err, ErrNoCommit) {
		t.Fatalf("update of nothing: %v", err)
	}
	// iceberg-go commits a delete that matches nothing: an empty snapshot.
	tbl, s2 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, eq("order_id", int64(9))))
	if es := f.entries(tbl, s2); len(es) != 0 {
		t.Fatalf("empty delete wrote %+v", es)
	}
	wantUnchanged(t, "s2", f.live(tbl, s1), f.live(tbl, s2))

	v2 := f.create("legacy", nil, 2)
	v2, _ = f.step(v2, table.OpAppend)(Append(f.ctx, v2, []map[string]any{order(1, "alice", "new", 10)}))
	if _, err := Update(f.ctx, v2, eq("order_id", int64(1)), func(r map[string]any) map[string]any { return r }); err == nil {
		t.Fatal("update on v2: no error")
	}
}
