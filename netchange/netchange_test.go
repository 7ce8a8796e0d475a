package netchange

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// TestNetReducesARange: the rules of Net's comment on a small range, one
// row each.
func TestNetReducesARange(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
	row := func(id int64, v string) values.Row { return values.Row{id, v} }
	commit := func(seq int64, evs ...cdc.Event) *cdc.Commit {
		for i := range evs {
			evs[i].Index = i
		}
		return &cdc.Commit{Table: cdc.TableInfo{Schema: sc}, Snapshot: cdc.SnapshotInfo{ID: 100 + seq, SequenceNumber: seq}, Events: evs}
	}
	n := New()
	ctx := context.Background()
	for _, c := range []*cdc.Commit{
		commit(1,
			cdc.Event{Op: cdc.OpCreate, RowID: 10, After: row(10, "a")},                     // inserted, then updated: c with its last image
			cdc.Event{Op: cdc.OpCreate, RowID: 11, After: row(11, "a")},                     // inserted, then deleted: nothing
			cdc.Event{Op: cdc.OpUpdate, RowID: 1, Before: row(1, "x"), After: row(1, "y")}), // back where it started: nothing
		commit(2,
			cdc.Event{Op: cdc.OpDelete, RowID: 11, Before: row(11, "a")},
			cdc.Event{Op: cdc.OpDelete, RowID: 2, Before: row(2, "x")},
			cdc.Event{Op: cdc.OpUpdate, RowID: 1, Before: row(1, "y"), After: row(1, "x")},
			cdc.Event{Op: cdc.OpUpdate, RowID: 10, Before: row(10, "a"), After: row(10, "b")},
			cdc.Event{Op: cdc.OpUpdate, RowID: 3, Before: row(3, "x"), After: row(3, "z")}),
	} {
		if err := n.Add(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if n.Len() != 5 {
		t.Errorf("Len %d, want 5", n.Len())
	}
	var got []string
	for _, c := range n.Commits() {
		for _, e := range c.Events {
			got = append(got, fmt.Sprintf("%d:%d %s %d %v %v", c.Snapshot.SequenceNumber, e.Index, e.Op, e.RowID, e.Before, e.After))
		}
	}
	want := "2:0 d 2 [2 x] []|2:1 u 3 [3 x] [3 z]|2:2 c 10 [] [10 b]"
	if strings.Join(got, "|") != want {
		t.Errorf("net events\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}

	// A stream that breaks the change contract is refused, naming where.
	err := n.Add(ctx, commit(3, cdc.Event{Op: cdc.OpCreate, RowID: 3, After: row(3, "w")}))
	if !errors.Is(err, ErrNetContract) || !strings.Contains(err.Error(), "snapshot 103 (sequence number 3), event 0: events break the change contract: insert of row 3, which is live") {
		t.Errorf("insert of a live row: %v", err)
	}
	if err := n.Add(ctx, commit(3)); err == nil || !strings.Contains(err.Error(), "added after sequence number 3") {
		t.Errorf("a commit out of order: %v", err)
	}
}
