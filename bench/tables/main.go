// Command tables builds the benchmark tables of bench/run.sh in a
// directory and prints, per table, a line "name metadata-path head-seq".
//
//	go run ./bench/tables -dir DIR -files 10,1000,10000 -rows 1000000
//
// With -bulk N it builds (also) the table "bulk" of bench/delivery.sh:
// 2N rows in one append, then one deletion vector removing the first N.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

const (
	rowsPerFile    = 100  // rows in each data file of a small-commit table
	filesPerCommit = 1000 // data files per append (one manifest each)
)

func main() {
	dir := flag.String("dir", "", "directory to build the tables in")
	files := flag.String("files", "10,1000,10000", "small-commit tables to build, by data files")
	rows := flag.Int("rows", 1_000_000, "rows of the append, delete and update tables (0: none)")
	bulk := flag.Int64("bulk", 0, "rows the table bulk deletes in one deletion vector, of twice as many (0: none)")
	flag.Parse()
	err := build(context.Background(), *dir, *files, *rows)
	if err == nil && *bulk > 0 {
		err = buildBulk(context.Background(), filepath.Join(*dir, "bulk"), *bulk)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tables:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, dir, files string, rows int) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	for _, f := range strings.Split(files, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("-files %q: %w", f, err)
		}
		env, tbl, err := create(ctx, filepath.Join(dir, "files"+f))
		if err != nil {
			return err
		}
		for first := 0; first < n; first += filesPerCommit {
			var batch [][]map[string]any
			for i := first; i < min(first+filesPerCommit, n); i++ {
				from := int64(i*rowsPerFile) + 1
				batch = append(batch, orders(from, from+rowsPerFile-1))
			}
			if tbl, err = scenario.AppendFiles(ctx, tbl, batch); err != nil {
				return err
			}
		}
		base := tbl
		// The small commit: 100 rows appended, 10 deleted from the oldest file.
		from := int64(n*rowsPerFile) + 1
		if tbl, err = scenario.AppendAndDelete(ctx, tbl, orders(from, from+99), iceberg.LessThanEqual(iceberg.Reference("order_id"), int64(10))); err != nil {
			return err
		}
		print("small"+f, tbl)
		if n >= 10000 {
			// A compaction of the base table, as a second branch of
			// history: its own table, so the small commit stays the head.
			cenv, ctbl, err := create(ctx, filepath.Join(dir, "replace"+f))
			if err != nil {
				return err
			}
			_ = base
			for first := 0; first < n; first += filesPerCommit {
				var batch [][]map[string]any
				for i := first; i < min(first+filesPerCommit, n); i++ {
					from := int64(i*rowsPerFile) + 1
					batch = append(batch, orders(from, from+rowsPerFile-1))
				}
				if ctbl, err = scenario.AppendFiles(ctx, ctbl, batch); err != nil {
					return err
				}
			}
			if ctbl, err = scenario.Compact(ctx, ctbl); err != nil {
				return err
			}
			print("replace"+f, ctbl)
			cenv.Close()
		}
		env.Close()
	}
	if rows <= 0 {
		return nil
	}
	for _, kind := range []string{"append", "delete", "update"} {
		env, tbl, err := create(ctx, filepath.Join(dir, kind))
		if err != nil {
			return err
		}
		all := orders(1, int64(rows))
		if kind == "append" {
			if tbl, err = scenario.Append(ctx, tbl, all); err != nil {
				return err
			}
		} else {
			if tbl, err = scenario.Append(ctx, tbl, all); err != nil {
				return err
			}
			every := iceberg.GreaterThanEqual(iceberg.Reference("order_id"), int64(1))
			if kind == "delete" {
				tbl, err = scenario.AppendAndDelete(ctx, tbl, nil, every)
			} else {
				tbl, err = scenario.Update(ctx, tbl, every, func(r map[string]any) map[string]any {
					r["status"] = "shipped"
					return r
				})
			}
			if err != nil {
				return err
			}
		}
		print(kind, tbl)
		env.Close()
	}
	return nil
}

// buildBulk builds the table bulk: 2n rows appended, then the first n
// deleted by one deletion vector.
func buildBulk(ctx context.Context, dir string, n int64) error {
	env, tbl, err := create(ctx, dir)
	if err != nil {
		return err
	}
	defer env.Close()
	if tbl, err = scenario.BulkAppend(ctx, tbl, 2*n); err != nil {
		return err
	}
	if tbl, err = scenario.BulkDeleteFirst(ctx, tbl, n, false); err != nil {
		return err
	}
	print("bulk", tbl)
	return nil
}

func create(ctx context.Context, dir string) (*scenario.Env, *table.Table, error) {
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		env.Close()
		return nil, nil, err
	}
	return env, tbl, nil
}

func orders(from, to int64) []map[string]any {
	out := make([]map[string]any, 0, to-from+1)
	for id := from; id <= to; id++ {
		out = append(out, scenario.Order(id, "customer", "new", float64(id)))
	}
	return out
}

func print(name string, tbl *table.Table) {
	fmt.Println(name, tbl.MetadataLocation(), tbl.CurrentSnapshot().SequenceNumber)
}
