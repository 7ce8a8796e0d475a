package source_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// mintingHistory writes, as a writer that mints new row ids on update
// does (a deletion vector for the old row and a fresh row, one snapshot
// each), updates of two keys, a key change, one key upserted twice more,
// and a mixed commit (an upsert, a delete, an insert).
func mintingHistory(f *fixture) {
	up := func(what string, filter iceberg.BooleanExpression, fn func(map[string]any) map[string]any, inserts ...map[string]any) {
		f.do(what, func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			return scenario.MintingUpsert(ctx, tb, filter, fn, inserts)
		})
	}
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 6))
	})
	up("upsert 2 and 3", in("order_id", 2, 3), setStatus("paid"))
	up("key change 4 to 400", eq("order_id", 4), func(r map[string]any) map[string]any {
		r["order_id"], r["status"] = int64(400), "moved"
		return r
	})
	up("upsert 2 again", eq("order_id", 2), setStatus("shipped"))
	up("upsert 2 a third time", eq("order_id", 2), setStatus("returned"))
	up("upsert 5, delete 6, insert 7", in("order_id", 5, 6), func(r map[string]any) map[string]any {
		if r["order_id"] == int64(6) {
			return nil
		}
		r["status"] = "paid"
		return r
	}, order(7, "c0", "new", 10.5))
}

// TestMintingUpserts: a table with identifier fields written by a writer
// that mints new row ids on update. Where the commit is held, a delete by
// vector and an insert of one key are one update naming the old row id
// (source.paired "deletion-vector"); a key change stays a delete and an
// insert. Above max_held_rows the commit is streamed and its deletes and
// inserts stay unpaired, with a not-paired-by-key anomaly, still right by
// row id. Every snapshot is checked by the replay oracle.
func TestMintingUpserts(t *testing.T) {
	t.Run("held", func(t *testing.T) {
		f := newFixture(t, 3, nil, nil)
		mintingHistory(f)
		steps := f.check()
		wantOps(t, steps, "d:0 u:0 c:6", "d:0 u:2 c:0", "d:1 u:0 c:1", "d:0 u:1 c:0", "d:0 u:1 c:0", "d:1 u:1 c:1")
		// order 2 upserted three times: each update names the row id the
		// previous one minted
		prev := int64(-1)
		for i, k := range []int{1, 3, 4} {
			var u *replay.Event
			for j, e := range steps[k].Events {
				if e.Op == "u" && fmt.Sprint(e.After["order_id"]) == "2" {
					u = &steps[k].Events[j]
				}
			}
			if u == nil {
				t.Fatalf("snapshot %d: no update of order 2: %+v", k, steps[k].Events)
			}
			if u.Source.Paired != source.PairedByDeletionVector || u.Source.PairedRowID == u.Source.RowID {
				t.Fatalf("snapshot %d: update of order 2 not paired by its vector: %+v", k, u.Source)
			}
			if i > 0 && u.Source.PairedRowID != prev {
				t.Fatalf("snapshot %d: paired row id %d, want the row id %d the previous upsert minted", k, u.Source.PairedRowID, prev)
			}
			prev = u.Source.RowID
			if i == 0 {
				t.Logf("paired update: op %s before %v after %v source %+v", u.Op, u.Before, u.After, u.Source)
			}
		}
		for _, s := range steps {
			if len(s.Commit.Anomalies) > 0 {
				t.Fatalf("snapshot %d: anomalies %v", s.Snapshot.SequenceNumber, s.Commit.Anomalies)
			}
		}
	})
	t.Run("above max_held_rows", func(t *testing.T) {
		f := newFixture(t, 3, nil, nil)
		f.held = 3 // the upsert of 2 and 3 removes 2 rows and adds 2
		mintingHistory(f)
		steps := f.check()
		wantOps(t, steps, "d:0 u:0 c:6", "d:2 u:0 c:2", "d:1 u:0 c:1", "d:0 u:1 c:0", "d:0 u:1 c:0", "d:2 u:0 c:2")
		for k, s := range steps {
			var kinds []string
			for _, a := range s.Commit.Anomalies {
				kinds = append(kinds, a.Kind)
			}
			// the commits above the limit that deleted and inserted
			want := "[]"
			if k == 1 || k == 5 {
				want = "[" + cdc.NotPaired + "]"
			}
			if fmt.Sprint(kinds) != want {
				t.Errorf("snapshot %d: anomalies %v, want %s", k, s.Commit.Anomalies, want)
			}
		}
	})
	t.Run("no identifier fields", func(t *testing.T) {
		sc := scenario.OrdersSchema()
		f := newFixture(t, 3, nil, iceberg.NewSchema(0, sc.Fields()...))
		mintingHistory(f)
		wantOps(t, f.check(), "d:0 u:0 c:6", "d:2 u:0 c:2", "d:1 u:0 c:1", "d:1 u:0 c:1", "d:1 u:0 c:1", "d:2 u:0 c:2")
	})
}
