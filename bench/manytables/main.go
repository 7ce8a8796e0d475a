// Command manytables builds a SQLite catalog of many small v3 tables, one
// commit each, for measuring what a daemon following a whole namespace
// costs (open files, memory), and prints an icecdc.yaml that follows
// them all.
//
//	go run ./bench/manytables -dir DIR -tables 1000 > DIR/icecdc.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/icecdc/icecdc/internal/scenario"
)

func main() {
	dir := flag.String("dir", "", "directory to build the catalog in")
	n := flag.Int("tables", 1000, "tables to create in namespace many")
	flag.Parse()
	if err := build(context.Background(), *dir, *n); err != nil {
		fmt.Fprintln(os.Stderr, "manytables:", err)
		os.Exit(1)
	}
}

func build(ctx context.Context, dir string, n int) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return err
	}
	defer env.Close()
	if _, err := env.ManyTables(ctx, "many", n); err != nil {
		return err
	}
	fmt.Printf(`name: many
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: 'many.*', start: earliest}]
sink: {type: file, file: {path: %s}}
state: {path: %s}
`, scenario.CatalogName, env.CatalogURI, env.Warehouse, filepath.Join(env.Dir, "events.jsonl"), filepath.Join(env.Dir, "state.db"))
	return nil
}
