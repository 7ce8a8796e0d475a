package scenario

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestPartitioned runs appends, a delete, a cross-partition update, an
// equality delete and upsert and a compaction on a table partitioned by
// identity(status).
func TestPartitioned(t *testing.T) {
	f := newFixture(t)
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{3}, FieldID: 1000, Name: "status", Transform: iceberg.IdentityTransform{},
	})
	tbl := f.create("orders_by_status", &spec, 3)

	tbl, s1 := f.step(tbl, table.OpAppend)(Append(f.ctx, tbl, []map[string]any{
		order(1, "alice", "new", 10), order(2, "bob", "new", 20),
		order(3, "carol", "paid", 30), order(4, "dave", "paid", 40),
		order(5, "erin", "shipped", 50),
	}))
	l1 := f.live(tbl, s1)
	wantIDs(t, "s1", l1, 1, 2, 3, 4, 5)
	wantCounts(t, "s1", count(f.entries(tbl, s1)), map[string]int{"ADDED data": 3})

	tbl, s2 := f.step(tbl, table.OpDelete)(Delete(f.ctx, tbl, in("order_id", 1, 3)))
	l2 := f.live(tbl, s2)
	wantIDs(t, "s2", l2, 2, 4, 5)
	wantUnchanged(t, "s2", l1, l2)
	wantCounts(t, "s2", count(f.entries(tbl, s2)), map[string]int{"ADDED dv": 2})

	// The update moves order 2 to partition status=paid; its row id stays.
	tbl, s3 := f.step(tbl, table.OpOverwrite)(Update(f.ctx, tbl, eq("order_id", int64(2)), func(r map[string]any) map[string]any {
		r["status"] = "paid"
		return r
	}))
	l3 := f.live(tbl, s3)
	wantIDs(t, "s3", l3, 2, 4, 5)
	wantUnchanged(t, "s3", l2, l3, 2)
	if r := l3[2]; r.RowID != l1[2].RowID || r.LUSN != s3.SequenceNumber || r.Values["status"] != "paid" {
		t.Fatalf("s3: updated row %+v", r)
	}
	wantCounts(t, "s3", count(f.entries(tbl, s3)), map[string]int{"ADDED data": 1, "ADDED dv": 1, "DELETED dv": 1})

	// Equality delete in partition status=paid (the key carries the
	// partition source column).
	tbl, s4 := f.step(tbl, table.OpDelete)(EqualityDelete(f.ctx, tbl, []string{"order_id"},
		[]map[string]any{{"order_id": int64(4), "status": "paid"}}))
	l4 := f.live(tbl, s4)
	wantIDs(t, "s4", l4, 2, 5)
	wantUnchanged(t, "s4", l3, l4)
	wantCounts(t, "s4", count(f.entries(tbl, s4)), map[string]int{"ADDED eqdel": 1})

	// Upsert of order 5 within its partition: a new row id.
	tbl, s5 := f.step(tbl, table.OpOverwrite)(EqualityUpsert(f.ctx, tbl, []string{"order_id"},
		[]map[string]any{order(5, "erin", "shipped", 55)}))
	l5 := f.live(tbl, s5)
	wantIDs(t, "s5", l5, 2, 5)
	wantUnchanged(t, "s5", l4, l5, 5)
	if r := l5[5]; r.RowID == l4[5].RowID || r.LUSN != s5.SequenceNumber || r.Values["amount"] != 55.0 {
		t.Fatalf("s5: upserted row %+v (was %+v)", r, l4[5])
	}

	tbl, s6 := f.step(tbl, table.OpReplace)(Compact(f.ctx, tbl))
	l6 := f.live(tbl, s6)
	wantUnchanged(t, "s6", l5, l6)
	wantIDs(t, "s6", l6, 2, 5)
	// Five live data files go; partition status=new has no live row left
	// and gets no file. The equality-delete file stays live (iceberg-go
	// removes it only when asked), harmless since it only applies to files
	// with a lower sequence number.
	wantCounts(t, "s6", count(f.entries(tbl, s6)), map[string]int{"ADDED data": 2, "DELETED data": 5, "DELETED dv": 2})
}
