package cdc

import (
	"testing"
	"unsafe"
)

// TestOpCounts: a batch counts its events per Op, each Op apart, and a
// follower (three batch builders, held for the table's whole life, one per
// followed table) stays small: with counts indexed by the Op byte it was
// over 6 KiB.
func TestOpCounts(t *testing.T) {
	var n opCounts
	for _, op := range []Op{OpCreate, OpCreate, OpUpdate, OpDelete, OpDelete, OpDelete, OpSnapshot} {
		n.add(op)
	}
	want := map[Op]int{OpCreate: 2, OpUpdate: 1, OpDelete: 3, OpSnapshot: 1}
	for i, k := range n {
		if op := countedOps[i]; k != want[op] {
			t.Errorf("op %s counted %d times, want %d", op, k, want[op])
		}
	}
	if s := unsafe.Sizeof(follower{}); s > 2048 {
		t.Errorf("a follower is %d bytes, want at most 2 KiB", s)
	}
}
