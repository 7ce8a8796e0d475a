package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestWriterSteps: the steps change the schema three times (four schemas,
// the last with the renamed and widened columns), and the head the writer
// answers is the table's as iceberg-go reads it back, with row ids.
func TestWriterSteps(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	if err := run(dir, strings.NewReader("step\nstep\nstep\nstep\nrows\nstop\n"), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 || lines[4] != "done" {
		t.Fatalf("answers:\n%s", out.String())
	}
	var head struct {
		Columns [][2]string       `json:"columns"`
		Rows    []map[string]any  `json:"rows"`
		Renamed map[string]string `json:"renamed"`
	}
	if err := json.Unmarshal([]byte(lines[5]), &head); err != nil {
		t.Fatal(err)
	}
	wantCols := [][2]string{{"id", "long"}, {"title", "string"}, {"qty", "long"}, {"price", "double"}, {"note", "string"}}
	if len(head.Columns) != len(wantCols) {
		t.Fatalf("columns %v, want %v", head.Columns, wantCols)
	}
	for i := range wantCols {
		if head.Columns[i] != wantCols[i] {
			t.Fatalf("columns %v, want %v", head.Columns, wantCols)
		}
	}
	if len(head.Rows) != 7 || head.Renamed["title"] != "name" {
		t.Fatalf("rows %v renamed %v", head.Rows, head.Renamed)
	}
	for _, r := range head.Rows {
		if _, ok := r["_row_id"]; !ok {
			t.Fatalf("row %v has no _row_id", r)
		}
	}
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.LoadTable(ctx, table.Identifier{"interop", "evolve"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Schemas()); n != 4 {
		t.Fatalf("%d schemas, want 4", n)
	}
}
