package source_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// A SQLite catalog replaced by rename (cp catalog.db new; commit to new;
// mv new catalog.db) is reopened: Refresh sees the commits made in the
// copy, not the deleted file the open handle still reads. A catalog file
// that disappears is an error, not the last answer again.
func TestSQLiteCatalogReplacedByRename(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"shop", "orders"}
	tbl, err := env.CreateTable(ctx, ident, ordersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Append(ctx, tbl, orders(1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}

	var logs bytes.Buffer
	src, err := source.Open(ctx, source.Options{
		CatalogURI: env.CatalogURI, Warehouse: env.Warehouse, Table: "shop.orders",
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	headSeq := func() int64 {
		t.Helper()
		if _, err := src.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		h, _ := src.Head()
		return h.SequenceNumber
	}
	if got := headSeq(); got != 1 {
		t.Fatalf("head at sequence number %d, want 1", got)
	}

	// Commit twice through a copy of the catalog file, then rename the
	// copy over the original.
	dbPath := filepath.Join(dir, "catalog.db")
	copyPath := dbPath + ".new"
	raw, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	props := env.CatalogProperties()
	props["uri"] = "file:" + copyPath
	cat, err := catalog.Load(ctx, scenario.CatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	ctbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(3); i <= 4; i++ {
		if ctbl, err = scenario.Append(ctx, ctbl, orders(i, i)); err != nil {
			t.Fatal(err)
		}
	}
	cat.(catalog.Closer).Close()
	if got := headSeq(); got != 1 {
		t.Fatalf("before the rename: head at sequence number %d, want 1", got)
	}
	if err := os.Rename(copyPath, dbPath); err != nil {
		t.Fatal(err)
	}
	if got := headSeq(); got != 3 {
		t.Fatalf("after the rename: head at sequence number %d, want 3 (the commits made in the copy)", got)
	}
	if n := strings.Count(logs.String(), "sql catalog file was replaced"); n != 1 || !strings.Contains(logs.String(), "level=INFO") {
		t.Fatalf("want one INFO line about the replaced file, got:\n%s", logs.String())
	}
	if got := headSeq(); got != 3 || strings.Count(logs.String(), "replaced") != 1 {
		t.Fatalf("a second Refresh reopened again or lost the head (%d):\n%s", got, logs.String())
	}

	// Deleted: an error naming the file, until it is back.
	if err := os.Rename(dbPath, dbPath+".away"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		_, err := src.Refresh(ctx)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), dbPath) {
			t.Fatalf("Refresh with the catalog file gone: %v, want a not-exist error naming %s", err, dbPath)
		}
	}
	if err := os.Rename(dbPath+".away", dbPath); err != nil {
		t.Fatal(err)
	}
	if got := headSeq(); got != 3 {
		t.Fatalf("file back: head at sequence number %d, want 3", got)
	}
}
