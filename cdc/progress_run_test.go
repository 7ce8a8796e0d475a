package cdc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/changes"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// progressLines returns the lines a Progress drew on out, in order.
func progressLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\r\x1b[K") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestProgressOfRuns: over a real table, the progress line of a changes
// run counts the files its snapshots' summaries name, and that of a
// daemon's initial read counts the data files it reads, up to all of
// them, then is cleared.
func TestProgressOfRuns(t *testing.T) {
	h := newHarness(t)
	var files [][]map[string]any
	for i := range int64(4) {
		files = append(files, []map[string]any{scenario.Order(2*i+1, "c", "new", 1), scenario.Order(2*i+2, "c", "new", 2)})
	}
	tbl, err := scenario.AppendFiles(h.ctx, h.tbl, files) // 4 files, 8 rows
	if err != nil {
		t.Fatal(err)
	}
	h.tbl = tbl
	h.append(9, 11) // 1 file, 3 rows

	var out strings.Builder
	prog := cdc.NewProgress(&out)
	prog.Every = 0 // every step drawn
	src, err := source.Open(h.ctx, source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: "shop.orders"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := changes.ChangesOf(h.ctx, src, changes.ChangesOptions{Progress: prog, What: "changes"}, func(*cdc.Commit) error { return nil }); err != nil {
		t.Fatal(err)
	}
	lines := progressLines(out.String())
	if got := fmt.Sprint(lines); !strings.HasPrefix(got, "[changes: 1/2 snapshots, 4/5 files, 8 rows") ||
		!strings.Contains(got, " changes: 2/2 snapshots, 5/5 files, 11 rows") || !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Fatalf("progress of changes: %q", out.String())
	}

	out.Reset()
	if err := h.runWith(runOpts{start: "initial", chunk: 2, progress: prog}); err != nil {
		t.Fatal(err)
	}
	lines = progressLines(out.String())
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "initial read of shop.orders: 0/5 files, 0/11 rows") ||
		!strings.HasPrefix(lines[len(lines)-1], "initial read of shop.orders: 5/5 files, 11/11 rows") || !strings.HasSuffix(out.String(), "\r\x1b[K") {
		t.Fatalf("progress of the initial read: %q", out.String())
	}
	if n := len(h.consumed()); n != 11 {
		t.Fatalf("%d events, want the 11 rows read", n)
	}
}
