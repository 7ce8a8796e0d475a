// Command evolvewriter is the interop stage's table writer for the avro
// part (interop/parts/avro.sh): it creates the format-v3 table
// interop.evolve in a SQL (SQLite) catalog with iceberg-go and changes its
// schema between commits, one step a command, so that the schema changes
// land while `icecdc run` streams the table. Commands on stdin, one a line:
//
//	step    make the next step; answers "step N: WHAT" or "done" when there is none
//	rows    answers one JSON line: the table's columns and live rows with
//	        their _row_id (the expected head, in run_scenarios.py's --heads
//	        form) as iceberg-go reads the head back, and the renamed columns
//	        (new name: old name); an error if that read differs from the
//	        rows the writer made
//	stop    exits
//
// Step 0 (at the start, before the first command) creates the table and
// appends; the next ones add a column, rename one, widen two (int to long,
// float to double), each followed by commits that use the new schema.
// Every value stays within what the columns' first types hold: Debezium's
// JDBC sink adds columns to its PostgreSQL table but does not widen them.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// writer is the table and the rows it holds, by id.
type writer struct {
	tbl  *table.Table
	rows map[int64]map[string]any
	// cols are the columns and their Iceberg types, in order.
	cols [][2]string
	// renamed maps a renamed column's name to the one it had.
	renamed map[string]string
}

func (w *writer) append(ctx context.Context, rows ...map[string]any) error {
	next, err := scenario.Append(ctx, w.tbl, rows)
	if err != nil {
		return err
	}
	w.tbl = next
	for _, r := range rows {
		w.rows[r["id"].(int64)] = r
	}
	return nil
}

// update sets the columns of set on row id (every other column is kept).
func (w *writer) update(ctx context.Context, id int64, set map[string]any) error {
	want := map[string]any{}
	for k, v := range w.rows[id] {
		want[k] = v
	}
	for k, v := range set {
		want[k] = v
	}
	next, err := scenario.Update(ctx, w.tbl, iceberg.EqualTo(iceberg.Reference("id"), id), func(map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range want {
			out[k] = v
		}
		return out
	})
	if err != nil {
		return err
	}
	w.tbl = next
	w.rows[id] = want
	return nil
}

func (w *writer) delete(ctx context.Context, id int64) error {
	next, err := scenario.Delete(ctx, w.tbl, iceberg.EqualTo(iceberg.Reference("id"), id))
	if err != nil {
		return err
	}
	w.tbl = next
	delete(w.rows, id)
	return nil
}

func (w *writer) evolve(ctx context.Context, fn func(*table.UpdateSchema)) error {
	tx := w.tbl.NewTransaction()
	us := tx.UpdateSchema(true, false)
	fn(us)
	if err := us.Commit(); err != nil {
		return err
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return err
	}
	w.tbl = next
	return nil
}

// rename renames a column in the writer's rows and columns too.
func (w *writer) rename(from, to string) {
	w.renamed[to] = from
	for _, r := range w.rows {
		r[to] = r[from]
		delete(r, from)
	}
	for i := range w.cols {
		if w.cols[i][0] == from {
			w.cols[i][0] = to
		}
	}
}

func (w *writer) retype(name, typ string) {
	for i := range w.cols {
		if w.cols[i][0] == name {
			w.cols[i][1] = typ
		}
	}
}

// head reads the table's live rows back, checks them against the writer's
// and returns them by id with their _row_id.
func (w *writer) head(ctx context.Context) ([]map[string]any, error) {
	live, err := scenario.LiveRows(ctx, w.tbl, w.tbl.CurrentSnapshot().SnapshotID)
	if err != nil {
		return nil, fmt.Errorf("read interop.evolve back: %w", err)
	}
	if len(live) != len(w.rows) {
		return nil, fmt.Errorf("read interop.evolve back: %d rows, the writer made %d", len(live), len(w.rows))
	}
	out := make([]map[string]any, 0, len(live))
	for rid, r := range live {
		id, _ := r.Values["id"].(int64)
		want, ok := w.rows[id]
		if !ok {
			return nil, fmt.Errorf("read interop.evolve back: row %d, which the writer did not make", id)
		}
		for _, c := range w.cols {
			if fmt.Sprint(want[c[0]]) != fmt.Sprint(r.Values[c[0]]) {
				return nil, fmt.Errorf("read interop.evolve back: row %d column %s is %v, the writer made %v", id, c[0], r.Values[c[0]], want[c[0]])
			}
		}
		o := map[string]any{iceberg.RowIDColumnName: rid}
		for k, v := range r.Values {
			o[k] = v
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["id"].(int64) < out[j]["id"].(int64) })
	return out, nil
}

func row(id int64, name string, qty int32, price float32) map[string]any {
	return map[string]any{"id": id, "name": name, "qty": qty, "price": price}
}

// steps are the writer's steps after the first; each names what it did.
var steps = []struct {
	what string
	do   func(context.Context, *writer) error
}{
	{"add column note", func(ctx context.Context, w *writer) error {
		if err := w.evolve(ctx, func(us *table.UpdateSchema) {
			us.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
		}); err != nil {
			return err
		}
		w.cols = append(w.cols, [2]string{"note", "string"})
		r := row(7, "gus", 7, 7.5)
		r["note"] = "added"
		if err := w.append(ctx, r); err != nil {
			return err
		}
		return w.update(ctx, 1, map[string]any{"note": "first"})
	}},
	{"rename name to title", func(ctx context.Context, w *writer) error {
		if err := w.evolve(ctx, func(us *table.UpdateSchema) { us.RenameColumn([]string{"name"}, "title") }); err != nil {
			return err
		}
		w.rename("name", "title")
		if err := w.append(ctx, map[string]any{"id": int64(8), "title": "hal", "qty": int32(8), "price": float32(8.25), "note": "renamed"}); err != nil {
			return err
		}
		return w.update(ctx, 4, map[string]any{"title": "dee-renamed"})
	}},
	{"widen qty to long and price to double", func(ctx context.Context, w *writer) error {
		if err := w.evolve(ctx, func(us *table.UpdateSchema) {
			us.UpdateColumn([]string{"qty"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
			us.UpdateColumn([]string{"price"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Float64}})
		}); err != nil {
			return err
		}
		w.retype("qty", "long")
		w.retype("price", "double")
		for _, r := range w.rows {
			r["qty"] = int64(r["qty"].(int32))
			r["price"] = float64(r["price"].(float32))
		}
		if err := w.append(ctx, map[string]any{"id": int64(9), "title": "ivy", "qty": int64(2_000_000_000), "price": 9.125, "note": "widened"}); err != nil {
			return err
		}
		if err := w.update(ctx, 2, map[string]any{"qty": int64(1_500_000_000), "price": 2.75}); err != nil {
			return err
		}
		return w.delete(ctx, 5)
	}},
}

func main() {
	dir := flag.String("dir", "", "directory of the catalog (catalog.db) and warehouse")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "evolvewriter: -dir is required")
		os.Exit(2)
	}
	if err := run(*dir, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "evolvewriter:", err)
		os.Exit(1)
	}
}

func run(dir string, stdin io.Reader, stdout io.Writer) error {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return err
	}
	defer env.Close()
	// No identifier field: the events are keyed by _row_id unless a
	// daemon names key columns, as on the Spark tables.
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.PrimitiveTypes.Float32},
	)
	tbl, err := env.CreateTable(ctx, table.Identifier{"interop", "evolve"}, sc, nil, 3, nil)
	if err != nil {
		return fmt.Errorf("create table interop.evolve: %w", err)
	}
	w := &writer{tbl: tbl, rows: map[int64]map[string]any{}, renamed: map[string]string{},
		cols: [][2]string{{"id", "long"}, {"name", "string"}, {"qty", "int"}, {"price", "float"}}}
	if err := w.append(ctx, row(1, "ann", 1, 1.5), row(2, "bob", 2, 2.5), row(3, "cy", 3, 3.5),
		row(4, "dee", 4, 4.5), row(5, "eve", 5, 5.5), row(6, "flo", 6, 6.5)); err != nil {
		return err
	}
	if err := w.update(ctx, 3, map[string]any{"qty": int32(30)}); err != nil {
		return err
	}
	if err := w.delete(ctx, 6); err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	say := func(format string, args ...any) {
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	say("ready: interop.evolve in %s", env.CatalogURI)
	in := bufio.NewScanner(stdin)
	next := 0
	for in.Scan() {
		switch in.Text() {
		case "step":
			if next == len(steps) {
				say("done")
				continue
			}
			if err := steps[next].do(ctx, w); err != nil {
				return fmt.Errorf("step %d (%s): %w", next+1, steps[next].what, err)
			}
			next++
			say("step %d: %s", next, steps[next-1].what)
		case "rows":
			rows, err := w.head(ctx)
			if err != nil {
				return err
			}
			b, err := json.Marshal(map[string]any{"columns": w.cols, "rows": rows, "renamed": w.renamed})
			if err != nil {
				return err
			}
			say("%s", b)
		case "stop":
			return nil
		default:
			return fmt.Errorf("unknown command %q", in.Text())
		}
	}
	return in.Err()
}
