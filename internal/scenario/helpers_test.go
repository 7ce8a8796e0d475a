package scenario

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

var order = Order

type fixture struct {
	t   *testing.T
	ctx context.Context
	env *Env
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	env, err := NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Error(err)
		}
	})

	return &fixture{t: t, ctx: ctx, env: env}
}

func (f *fixture) create(name string, spec *iceberg.PartitionSpec, version int) *table.Table {
	f.t.Helper()
	tbl, err := f.env.CreateTable(f.ctx, table.Identifier{"shop", name}, OrdersSchema(), spec, version, nil)
	if err != nil {
		f.t.Fatal(err)
	}

	return tbl
}

// step checks the error of a mutation and returns the new table and its
// head snapshot, which must be a child of the previous head with the given
// operation.
//
// Use as f.step(prev, op)(Mutation(...)).
func (f *fixture) step(prev *table.Table, op table.Operation) func(*table.Table, error) (*table.Table, table.Snapshot) {
	return func(next *table.Table, err error) (*table.Table, table.Snapshot) {
		f.t.Helper()

		return f.check(prev, op, next, err)
	}
}

func (f *fixture) check(prev *table.Table, op table.Operation, next *table.Table, err error) (*table.Table, table.Snapshot) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
	snap := next.CurrentSnapshot()
	if snap == nil {
		f.t.Fatal("no current snapshot")
	}
	if p := prev.CurrentSnapshot(); p != nil {
		if snap.ParentSnapshotID == nil || *snap.ParentSnapshotID != p.SnapshotID {
			f.t.Fatalf("snapshot %d is not a child of %d", snap.SnapshotID, p.SnapshotID)
		}
		if snap.SequenceNumber != p.SequenceNumber+1 {
			f.t.Fatalf("sequence number %d after %d", snap.SequenceNumber, p.SequenceNumber)
		}
	}
	if snap.Summary == nil || snap.Summary.Operation != op {
		f.t.Fatalf("snapshot %d: operation %v, want %s", snap.SnapshotID, snap.Summary, op)
	}

	return next, *snap
}

// live returns live(S) keyed by order_id.
func (f *fixture) live(tbl *table.Table, snap table.Snapshot) map[int64]Row {
	f.t.Helper()
	rows, err := LiveRows(f.ctx, tbl, snap.SnapshotID)
	if err != nil {
		f.t.Fatal(err)
	}
	out := make(map[int64]Row, len(rows))
	for id, r := range rows {
		if r.RowID != id {
			f.t.Fatalf("row keyed %d has row id %d", id, r.RowID)
		}
		k := r.Values["order_id"].(int64)
		if _, dup := out[k]; dup {
			f.t.Fatalf("order_id %d twice in snapshot %d", k, snap.SnapshotID)
		}
		out[k] = r
	}

	return out
}

func (f *fixture) entries(tbl *table.Table, snap table.Snapshot) []Entry {
	f.t.Helper()
	es, err := OwnEntries(f.ctx, tbl, snap)
	if err != nil {
		f.t.Fatal(err)
	}

	return es
}

// count tallies entries as "status content" strings, e.g. "ADDED dv".
func count(es []Entry) map[string]int {
	out := map[string]int{}
	for _, e := range es {
		kind := "data"
		switch {
		case e.DV:
			kind = "dv"
		case e.Content == iceberg.EntryContentPosDeletes:
			kind = "posdel"
		case e.Content == iceberg.EntryContentEqDeletes:
			kind = "eqdel"
		}
		out[statusName[e.Status]+" "+kind]++
	}

	return out
}

var statusName = map[iceberg.ManifestEntryStatus]string{
	iceberg.EntryStatusEXISTING: "EXISTING",
	iceberg.EntryStatusADDED:    "ADDED",
	iceberg.EntryStatusDELETED:  "DELETED",
}

func wantCounts(t *testing.T, what string, got map[string]int, want map[string]int) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: entries %v, want %v", what, got, want)
	}
}

// ids returns the sorted order ids of rows.
func ids(rows map[int64]Row) []int64 {
	out := make([]int64, 0, len(rows))
	for k := range rows {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })

	return out
}

func wantIDs(t *testing.T, what string, rows map[int64]Row, want ...int64) {
	t.Helper()
	if got := ids(rows); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: order ids %v, want %v", what, got, want)
	}
}

// wantUnchanged checks that every order in prev except those listed keeps
// its row id, lusn and values in next.
func wantUnchanged(t *testing.T, what string, prev, next map[int64]Row, except ...int64) {
	t.Helper()
	skip := map[int64]bool{}
	for _, e := range except {
		skip[e] = true
	}
	for k, p := range prev {
		n, ok := next[k]
		if skip[k] || !ok {
			continue
		}
		if n.RowID != p.RowID || n.LUSN != p.LUSN || fmt.Sprint(n.Values) != fmt.Sprint(p.Values) {
			t.Fatalf("%s: order %d changed from %+v to %+v", what, k, p, n)
		}
	}
}

func eq(col string, v any) iceberg.BooleanExpression {
	switch x := v.(type) {
	case int64:
		return iceberg.EqualTo(iceberg.Reference(col), x)
	case string:
		return iceberg.EqualTo(iceberg.Reference(col), x)
	default:
		panic(fmt.Sprintf("eq: %T", v))
	}
}

func in(col string, vs ...int64) iceberg.BooleanExpression {
	return iceberg.IsIn(iceberg.Reference(col), vs...)
}

// parquetColumn returns the column names of a local data file and the
// values of its column col (nil if absent; null values as nil).
func parquetColumn(t *testing.T, path, col string) (names []string, values []any) {
	t.Helper()
	rdr, err := file.OpenParquetFile(strings.TrimPrefix(path, "file://"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for i, f := range tbl.Schema().Fields() {
		names = append(names, f.Name)
		if f.Name != col {
			continue
		}
		for _, chunk := range tbl.Column(i).Data().Chunks() {
			for j := range chunk.Len() {
				values = append(values, valueAt(chunk, j))
			}
		}
	}

	return names, values
}

// addedDataFile returns the path of the one data file snap added.
func (f *fixture) addedDataFile(tbl *table.Table, snap table.Snapshot) string {
	f.t.Helper()
	var paths []string
	for _, e := range f.entries(tbl, snap) {
		if e.Status == iceberg.EntryStatusADDED && e.Content == iceberg.EntryContentData {
			paths = append(paths, e.Path)
		}
	}
	if len(paths) != 1 {
		f.t.Fatalf("snapshot %d added data files %v, want one", snap.SnapshotID, paths)
	}

	return paths[0]
}
