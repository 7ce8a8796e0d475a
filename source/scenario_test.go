package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

var (
	ordersSchema = scenario.OrdersSchema
	order        = scenario.Order
)

func orders(from, to int64) []map[string]any {
	var out []map[string]any
	for i := from; i <= to; i++ {
		out = append(out, order(i, fmt.Sprintf("c%d", i%7), "new", float64(i)*1.5))
	}
	return out
}

// fixture is a table under construction plus the commits made so far.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	env   *scenario.Env
	ident table.Identifier
	tbl   *table.Table
	held  int // MaxHeldRows of the source; 1 streams every commit of 2+ events
	// memory is MaxMemory of the source; 1 spills every update's before image
	memory int64
	keys   []string // KeyFields of the source
}

func newFixture(t *testing.T, version int, spec *iceberg.PartitionSpec, sc *iceberg.Schema) *fixture {
	t.Helper()
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	if sc == nil {
		sc = ordersSchema()
	}
	ident := table.Identifier{"shop", "orders"}
	tbl, err := env.CreateTable(ctx, ident, sc, spec, version, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, env: env, ident: ident, tbl: tbl}
}

// do applies one mutation and keeps the new table.
func (f *fixture) do(what string, fn func(context.Context, *table.Table) (*table.Table, error)) {
	f.t.Helper()
	tbl, err := fn(f.ctx, f.tbl)
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
	f.tbl = tbl
}

func (f *fixture) open() *source.Table {
	f.t.Helper()
	src, err := source.Open(f.ctx, source.Options{
		CatalogType: "sql", CatalogURI: f.env.CatalogURI, Warehouse: f.env.Warehouse,
		Table: strings.Join(f.ident, "."), MaxHeldRows: f.held, MaxMemory: f.memory, KeyFields: f.keys,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return src
}

// check replays every snapshot against the oracle and returns the steps.
func (f *fixture) check() []replay.Step {
	f.t.Helper()
	steps, err := replay.Check(f.ctx, f.open(), f.tbl)
	if err != nil {
		f.t.Fatal(err)
	}
	return steps
}

// ops summarises the events of a step as e.g. "d:3 u:1 c:0".
func ops(s replay.Step) string {
	n := map[string]int{}
	for _, e := range s.Events {
		n[e.Op]++
	}
	return fmt.Sprintf("d:%d u:%d c:%d", n["d"], n["u"], n["c"])
}

func wantOps(t *testing.T, steps []replay.Step, want ...string) {
	t.Helper()
	if len(steps) != len(want) {
		t.Fatalf("%d snapshots, want %d", len(steps), len(want))
	}
	for i, s := range steps {
		if got := ops(s); got != want[i] {
			t.Errorf("snapshot %d (seq %d, %s): %s, want %s", i, s.Snapshot.SequenceNumber, s.Snapshot.Operation, got, want[i])
		}
	}
}

func eq(col string, v int64) iceberg.BooleanExpression {
	return iceberg.EqualTo(iceberg.Reference(col), v)
}

func in(col string, vs ...int64) iceberg.BooleanExpression {
	return iceberg.IsIn(iceberg.Reference(col), vs...)
}

func setStatus(s string) func(map[string]any) map[string]any {
	return func(r map[string]any) map[string]any { r["status"] = s; return r }
}

func TestAppendsOfSeveralFiles(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.AppendFiles(ctx, tb, [][]map[string]any{orders(1, 3), orders(4, 8), orders(9, 9)})
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(10, 12))
	})
	wantOps(t, f.check(), "d:0 u:0 c:9", "d:0 u:0 c:3")
}

func TestMergeOnReadDeletes(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 5))
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(6, 10))
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(11, 12))
	})
	// one commit touching two files
	f.do("delete two files", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 2, 7))
	})
	// a second delete on a file that already has a vector
	f.do("delete again", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 3, 4))
	})
	// a delete emptying a file
	f.do("delete whole file", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 11, 12))
	})
	// a delete emptying a file that has a vector already
	f.do("delete rest of file", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 1, 5))
	})
	wantOps(t, f.check(), "d:0 u:0 c:5", "d:0 u:0 c:5", "d:0 u:0 c:2", "d:2 u:0 c:0", "d:2 u:0 c:0", "d:2 u:0 c:0", "d:2 u:0 c:0")
}

func TestUpdatesKeepRowID(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 5))
	})
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, in("order_id", 1, 3), setStatus("paid"))
	})
	// the same row updated twice: now it lives in the file the first update wrote
	f.do("update again", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, eq("order_id", 1), setStatus("shipped"))
	})
	f.do("delete updated", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 1, 4))
	})
	steps := f.check()
	wantOps(t, steps, "d:0 u:0 c:5", "d:0 u:2 c:0", "d:0 u:1 c:0", "d:2 u:0 c:0")
	u := steps[2].Events[0]
	if u.Before["status"] != "paid" || u.After["status"] != "shipped" || u.Source.LUSN != steps[2].Snapshot.SequenceNumber {
		t.Fatalf("second update: before %v after %v lusn %d", u.Before, u.After, u.Source.LUSN)
	}
}

func TestCopyOnWrite(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 5))
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(6, 8))
	})
	f.do("overwrite", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.OverwriteCoW(ctx, tb, in("order_id", 2, 3), []map[string]any{order(2, "c2", "paid", 3)})
	})
	f.do("cow delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.DeleteCoW(ctx, tb, eq("order_id", 7))
	})
	// The overwrite removes rows 2 and 3 and adds a new row for order 2
	// with a new row id: by row id two deletes and an insert; with the
	// identifier field order_id, the delete and the insert of order 2 are
	// one update (docs/contract.md).
	steps := f.check()
	wantOps(t, steps, "d:0 u:0 c:5", "d:0 u:0 c:3", "d:1 u:1 c:0", "d:1 u:0 c:0")
	for _, e := range steps[2].Events {
		if e.Op == "u" && (e.Source.Paired != source.PairedByRemovedFile || e.Source.PairedRowID == e.Source.RowID) {
			t.Fatalf("update of order 2: %+v", e.Source)
		}
	}
}

func TestCompactionThenChanges(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 4))
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(5, 8))
	})
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, eq("order_id", 2), setStatus("paid"))
	})
	f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, eq("order_id", 6))
	})
	f.do("compact", scenario.Compact)
	// inside the compacted file, ids are stored out of position order
	f.do("delete in compacted", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 2, 7))
	})
	f.do("update in compacted", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, in("order_id", 1, 8), setStatus("shipped"))
	})
	steps := f.check()
	wantOps(t, steps, "d:0 u:0 c:4", "d:0 u:0 c:4", "d:0 u:1 c:0", "d:1 u:0 c:0", "d:0 u:0 c:0", "d:2 u:0 c:0", "d:0 u:2 c:0")
	if steps[4].Snapshot.Operation != "replace" {
		t.Fatalf("compaction operation %q", steps[4].Snapshot.Operation)
	}
}

func TestPartitionedTable(t *testing.T) {
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "status", Transform: iceberg.IdentityTransform{}})
	f := newFixture(t, 3, &spec, nil)
	rows := orders(1, 6)
	for i, r := range rows {
		r["status"] = []string{"new", "paid"}[i%2]
	}
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, rows)
	})
	f.do("delete across partitions", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 1, 2))
	})
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, eq("order_id", 3), func(r map[string]any) map[string]any { r["amount"] = 99.5; return r })
	})
	wantOps(t, f.check(), "d:0 u:0 c:6", "d:2 u:0 c:0", "d:0 u:1 c:0")
}

func TestUpgradeFromV2(t *testing.T) {
	f := newFixture(t, 2, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 4))
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(5, 7))
	})
	f.do("upgrade", scenario.UpgradeToV3)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(8, 9))
	})
	f.do("delete old rows", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 2, 6, 8))
	})
	f.do("update old row", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, eq("order_id", 3), setStatus("paid"))
	})
	wantOps(t, f.check(), "d:0 u:0 c:0", "d:0 u:0 c:0", "d:0 u:0 c:2", "d:3 u:0 c:0", "d:0 u:1 c:0")
}

func TestEqualityDeletes(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 5))
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(6, 8))
	})
	f.do("mor delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, eq("order_id", 4))
	})
	// an equality delete of a live row, of a row already deleted by a vector, and of no row
	f.do("equality delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.EqualityDelete(ctx, tb, []string{"order_id"}, []map[string]any{{"order_id": int64(2)}, {"order_id": int64(4)}, {"order_id": int64(99)}})
	})
	// a Flink-style upsert: equality delete + insert of the same keys; order 2 is gone, 9 is new
	f.do("upsert", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.EqualityUpsert(ctx, tb, []string{"order_id"}, []map[string]any{
			order(3, "c3", "paid", 4.5), order(7, "c0", "shipped", 10.5), order(2, "c2", "again", 1), order(9, "c9", "new", 9)})
	})
	// a vector after equality deletes: rows the equality deletes removed stay removed
	f.do("mor delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 1, 3))
	})
	steps := f.check()
	// identifier field order_id: upserts of live keys pair into updates
	wantOps(t, steps, "d:0 u:0 c:5", "d:0 u:0 c:3", "d:1 u:0 c:0", "d:1 u:0 c:0", "d:0 u:2 c:2", "d:2 u:0 c:0")
	for _, e := range steps[4].Events {
		if e.Op == "u" && (e.Source.Paired != "equality-delete" || e.Source.PairedRowID == e.Source.RowID) {
			t.Fatalf("paired update must name the removed row: %+v", e.Source)
		}
	}
}

// TestFirstLineageSnapshotChanges: the first v3 commit after an upgrade
// deletes and updates pre-upgrade rows. Their row ids in the parent are
// null, so the contract has no delete or update for them: the commit's
// changed rows are inserts and the baseline is what it did not change.
func TestFirstLineageSnapshotChanges(t *testing.T) {
	f := newFixture(t, 2, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 4))
	})
	f.do("upgrade", scenario.UpgradeToV3)
	f.do("first v3 commit deletes old rows", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 1, 2))
	})
	f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, eq("order_id", 3))
	})
	wantOps(t, f.check(), "d:0 u:0 c:0", "d:0 u:0 c:0", "d:1 u:0 c:0")
}

func replayCheck(f *fixture) ([]replay.Step, error) {
	return replay.Check(f.ctx, f.open(), f.tbl)
}

// TestRowGroups uses files of many row groups (4 rows each): deletes and
// updates read only the row groups holding their positions, and a
// compacted file (stored ids out of position order) is read the same way.
func TestRowGroups(t *testing.T) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	ident := table.Identifier{"shop", "orders"}
	tbl, err := env.CreateTable(ctx, ident, ordersSchema(), nil, 3, iceberg.Properties{table.ParquetRowGroupLimitKey: "4"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: ctx, env: env, ident: ident, tbl: tbl}
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 30))
	})
	f.do("delete in two row groups", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 6, 7, 22))
	})
	f.do("update in the last row group", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, in("order_id", 29, 3), setStatus("paid"))
	})
	f.do("compact", scenario.Compact)
	f.do("delete in compacted", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 29, 10, 11))
	})
	f.do("update in compacted", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, in("order_id", 3, 18), setStatus("shipped"))
	})
	f.do("cow rewrite", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(40, 49))
	})
	f.do("cow delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.DeleteCoW(ctx, tb, eq("order_id", 45))
	})
	wantOps(t, f.check(), "d:0 u:0 c:30", "d:3 u:0 c:0", "d:0 u:2 c:0", "d:0 u:0 c:0", "d:3 u:0 c:0", "d:0 u:2 c:0", "d:0 u:0 c:10", "d:1 u:0 c:0")
}

// TestStreamedInserts holds at most one inserted row: appends are streamed
// (with deletes and updates in the same histories), and the replay still
// matches at every snapshot.
func TestStreamedInserts(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	f.held = 1
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.AppendFiles(ctx, tb, [][]map[string]any{orders(1, 5), orders(6, 9)})
	})
	f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, in("order_id", 2, 7))
	})
	f.do("append and delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.AppendAndDelete(ctx, tb, orders(10, 14), in("order_id", 3))
	})
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, in("order_id", 1, 12), setStatus("paid"))
	})
	steps := f.check()
	wantOps(t, steps, "d:0 u:0 c:9", "d:2 u:0 c:0", "d:1 u:0 c:5", "d:0 u:2 c:0")
	c, err := f.open().Commit(f.ctx, steps[2].Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	if c.Rest == nil || len(c.Events) != 0 || c.Len() != 6 {
		t.Fatalf("append and delete: want 6 streamed events (1 delete, 5 inserts), got %d held, rest %v, len %d", len(c.Events), c.Rest != nil, c.Len())
	}
	// resuming inside the streamed file yields exactly the tail
	var tail []int
	if err := c.EachBatch(f.ctx, 4, func(evs []cdc.Event) error {
		for _, e := range evs {
			tail = append(tail, e.Index)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(tail) != "[4 5]" {
		t.Fatalf("events from index 4: %v", tail)
	}
}

// TestEqualityDeletesPerPartition: one commit deletes key 1 in partition
// "new" and key 2 in partition "paid"; each delete file applies to its own
// partition only, although both keys exist in both.
func TestEqualityDeletesPerPartition(t *testing.T) {
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "status", Transform: iceberg.IdentityTransform{}})
	f := newFixture(t, 3, &spec, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{
			order(1, "a", "new", 1), order(2, "b", "new", 2), order(1, "c", "paid", 3), order(2, "d", "paid", 4), order(300, "e", "new", 5),
		})
	})
	f.do("equality delete in two partitions", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.EqualityDelete(ctx, tb, []string{"order_id"}, []map[string]any{
			{"order_id": int64(1), "status": "new"}, {"order_id": int64(2), "status": "paid"},
		})
	})
	steps := f.check()
	wantOps(t, steps, "d:0 u:0 c:5", "d:2 u:0 c:0")
}

// TestEqualityDeletePrunesByBounds: a file whose order_id bounds exclude
// every deleted key is not read.
func TestEqualityDeletePrunesByBounds(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	f.do("append low", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 5))
	})
	f.do("append high", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(100, 105))
	})
	f.do("equality delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.EqualityDelete(ctx, tb, []string{"order_id"}, []map[string]any{{"order_id": int64(2)}, {"order_id": int64(4)}})
	})
	steps := f.check()
	wantOps(t, steps, "d:0 u:0 c:5", "d:0 u:0 c:6", "d:2 u:0 c:0")
	// The high file's rows are gone (its footer is left: the prune reads
	// it to check the manifest's bounds): were they read, the commit would
	// fail.
	high := secondDataFile(t, f.env.Dir)
	corruptData(t, high)
	if _, err := f.open().Commit(f.ctx, steps[2].Snapshot); err != nil {
		t.Fatalf("the file outside the bounds was read: %v", err)
	}
	// Its data is read when it could hold a deleted key.
	corruptData(t, firstDataFile(t, f.env.Dir))
	if _, err := f.open().Commit(f.ctx, steps[2].Snapshot); err == nil {
		t.Fatal("the file inside the bounds, corrupt, was not read")
	}
}

// secondDataFile returns the local path of the second data file written.
func secondDataFile(t *testing.T, dir string) string { return nthDataFile(t, dir, 1) }

// firstDataFile returns the local path of the first data file written.
func firstDataFile(t *testing.T, dir string) string { return nthDataFile(t, dir, 0) }

// nthDataFile returns the local path of the data file written n-th (from
// 0).
func nthDataFile(t *testing.T, dir string, n int) string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "delete") {
			found = append(found, p)
		}
		return nil
	})
	// data files in write order
	slices.SortFunc(found, func(a, b string) int {
		ia, _ := os.Stat(a)
		ib, _ := os.Stat(b)
		return ia.ModTime().Compare(ib.ModTime())
	})
	if len(found) <= n {
		t.Fatalf("data files: %v", found)
	}
	return found[n]
}

// TestKeyChange: an update that changes the event key is a delete (in the
// delete phase) and an insert (in the insert phase), held, streamed and
// with its before images spilled alike.
func TestKeyChange(t *testing.T) {
	for _, tc := range []struct {
		name   string
		held   int
		memory int64
	}{{"held", 0, 0}, {"streamed", 1, 0}, {"spilled", 1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 3, nil, nil)
			f.held, f.memory, f.keys = tc.held, tc.memory, []string{"order_id"}
			f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Append(ctx, tb, orders(1, 6))
			})
			f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Update(ctx, tb, in("order_id", 2, 3, 5), func(r map[string]any) map[string]any {
					if r["order_id"] == int64(3) {
						r["order_id"] = int64(300)
					}
					r["status"] = "paid"
					return r
				})
			})
			f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Delete(ctx, tb, in("order_id", 1, 300))
			})
			steps := f.check()
			wantOps(t, steps, "d:0 u:0 c:6", "d:1 u:2 c:1", "d:2 u:0 c:0")
			var got []string
			for _, e := range steps[1].Events {
				got = append(got, fmt.Sprint(e.Op, e.Source.RowID))
			}
			if want := "[d2 u1 u4 c2]"; fmt.Sprint(got) != want {
				t.Fatalf("update events: %v, want %s", got, want)
			}
		})
	}
}

// TestProgressCounts: what the progress line counts comes with the
// snapshots and reads, at no extra I/O: a snapshot's files (added or
// removed, data and delete files) from its summary, and an initial read's
// data files as the event index where each one's rows end, whether the
// rows are held or streamed.
func TestProgressCounts(t *testing.T) {
	for _, held := range []int{0, 1} {
		t.Run(fmt.Sprint("held=", held), func(t *testing.T) {
			f := newFixture(t, 3, nil, nil)
			f.held = held
			f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.AppendFiles(ctx, tb, [][]map[string]any{orders(1, 3), orders(4, 8), orders(9, 9)})
			})
			f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Delete(ctx, tb, in("order_id", 2, 9))
			})
			src := f.open()
			defer src.Close()
			snaps, err := src.Snapshots(f.ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var files []int
			for _, s := range snaps {
				files = append(files, s.Files)
			}
			// The delete writes a vector for the file of order 2 and drops
			// the file whose one row was order 9.
			if fmt.Sprint(files) != "[3 2]" {
				t.Fatalf("files of the snapshots %v, want [3 2]", files)
			}
			c, err := src.InitialRead(f.ctx, snaps[len(snaps)-1])
			if err != nil {
				t.Fatal(err)
			}
			if (c.Rest != nil) != (held == 1) {
				t.Fatalf("streamed %v with MaxHeldRows %d", c.Rest != nil, held)
			}
			var sizes []int
			prev := 0
			for _, end := range c.FileEnds {
				sizes = append(sizes, end-prev)
				prev = end
			}
			slices.Sort(sizes)
			if fmt.Sprint(sizes) != "[2 5]" || prev != c.Len() {
				t.Fatalf("file ends %v of a read of %d rows, want the 2 live files' rows (2 and 5) in turn", c.FileEnds, c.Len())
			}
		})
	}
}
