package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestRunIcebergSink: `icecdc run --once` with sink.type iceberg writes a
// merge-on-read v3 table's inserts, update and delete to
// bookshop.orders_changes in the pipeline's catalog, in the changelog
// view's shape. A second run writes nothing more, and so does a run whose
// state file was lost: the target's checkpoint is the position.
func TestRunIcebergSink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, tbl := newOrders(ctx, t)
	changeOrders(ctx, t, tbl, []map[string]any{scenario.Order(1, "ann", "new", 10), scenario.Order(2, "bob", "new", 20)}, 1, paid, 2)
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	statePath := filepath.Join(t.TempDir(), "state.db")
	cfg := writeConfig(t, "audit", catalog, "{type: iceberg, iceberg: {table: '{namespace}.{table}_changes'}}", statePath)
	want := []string{"1 INSERT order=1 new", "1 INSERT order=2 new", "2 UPDATE_AFTER order=1 paid", "2 UPDATE_BEFORE order=1 new", "3 DELETE order=2 new"}
	for _, run := range []string{"first", "again", "state file lost"} {
		if run == "state file lost" {
			if err := os.Remove(statePath); err != nil {
				t.Fatal(err)
			}
		}
		if _, errOut, code := runCmd("run", "--once", "-c", cfg); code != 0 {
			t.Fatalf("%s run: exit %d\n%s", run, code, errOut)
		}
		if got := changesTable(ctx, t, env); !slices.Equal(got, want) {
			t.Fatalf("%s run: bookshop.orders_changes holds\n%q\nwant\n%q", run, got, want)
		}
	}
}

// changesTable reads bookshop.orders_changes: "<seq> <change type>
// order=<id> <status>" per row, sorted.
func changesTable(ctx context.Context, t *testing.T, env *scenario.Env) []string {
	t.Helper()
	tbl, err := env.Catalog.LoadTable(ctx, table.Identifier{"bookshop", "orders_changes"})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		col := func(name string) any { return rec.Column(rec.Schema().FieldIndices(name)[0]) }
		seq, ct, id, st := col("_sequence_number").(*array.Int64), col("_change_type").(*array.String), col("order_id").(*array.Int64), col("status").(*array.String)
		for i := range int(rec.NumRows()) {
			out = append(out, fmt.Sprintf("%d %s order=%d %s", seq.Value(i), ct.Value(i), id.Value(i), st.Value(i)))
		}
		rec.Release()
	}
	slices.Sort(out)
	return out
}

// TestIcebergSinkRefusals: what the iceberg sink cannot do is refused
// with one line naming the key.
func TestIcebergSinkRefusals(t *testing.T) {
	for _, tc := range []struct{ extra, want string }{
		{"transforms: {unwrap: {}}", "config: transforms: sink iceberg writes rows, not records: remove the transforms"},
		{"sink: {type: iceberg, iceberg: {table: 'nonamespace'}}", `config: sink.iceberg.table: "nonamespace": want namespace.table`},
		{"sink: {type: iceberg, iceberg: {format_version: 1}}", "config: sink.iceberg.format_version: 1: want 2 or 3"},
	} {
		body := "name: p\ncatalog: " + noCatalog + "\ntables: [{name: a.b}]\n"
		if !strings.HasPrefix(tc.extra, "sink:") {
			body += "sink: {type: iceberg}\n"
		}
		body += tc.extra + "\n"
		_, err := parseConfig([]byte(body), func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.extra, err, tc.want)
		}
	}
}

// TestRunIcebergSinkShaped: a column debezium.column.exclude.list leaves
// out is not in the target table the sink creates, nor its values.
func TestRunIcebergSinkShaped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env, tbl := newOrders(ctx, t)
	changeOrders(ctx, t, tbl, []map[string]any{scenario.Order(1, "ann", "new", 10), scenario.Order(2, "bob", "new", 20)}, 1, paid, 2)
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	cfg := writeConfig(t, "audit", catalog, "{type: iceberg, iceberg: {table: 'audit.{table}'}}\ndebezium: {column.exclude.list: 'bookshop\\.orders\\.customer'}",
		filepath.Join(t.TempDir(), "state.db"))
	if _, errOut, code := runCmd("run", "--once", "-c", cfg); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	target, err := env.Catalog.LoadTable(ctx, table.Identifier{"audit", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := target.Schema().FindFieldByName("customer"); ok {
		t.Errorf("the target has the excluded column: %v", f)
	}
	if _, ok := target.Schema().FindFieldByName("status"); !ok {
		t.Errorf("the target lacks status: %v", target.Schema())
	}
	if n := target.CurrentSnapshot().Summary.Properties["total-records"]; n != "5" {
		t.Errorf("target rows: %s, want 5", n)
	}
}
