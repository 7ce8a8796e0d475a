package source

import (
	"context"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestReaderKeepsNoManifestListCache: two scans planned through a reader
// read the snapshot's manifest list twice (it keeps no cache of decoded
// manifest lists), where a table.New of the same metadata reads it once;
// the metadata's own properties are left as they were.
func TestReaderKeepsNoManifestListCache(t *testing.T) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = scenario.Append(ctx, tbl, []map[string]any{scenario.Order(1, "c", "new", 1)}); err != nil {
		t.Fatal(err)
	}
	list := tbl.CurrentSnapshot().ManifestList
	listReads := func(mk func(md table.Metadata, fsF func(context.Context) (iceio.IO, error)) *table.Table) int {
		t.Helper()
		fs, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c := &namedOpens{IO: fs, name: list}
		r := mk(tbl.Metadata(), func(context.Context) (iceio.IO, error) { return c, nil })
		for range 2 {
			if _, err := r.Scan().PlanFiles(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return c.opens
	}
	if n := listReads(func(md table.Metadata, fsF func(context.Context) (iceio.IO, error)) *table.Table {
		return table.New(tbl.Identifier(), md, tbl.MetadataLocation(), fsF, nil)
	}); n != 1 {
		t.Fatalf("table.New: manifest list read %d times by two scans, want 1 (its cache)", n)
	}
	if n := listReads(func(md table.Metadata, fsF func(context.Context) (iceio.IO, error)) *table.Table {
		return newReader(tbl.Identifier(), md, tbl.MetadataLocation(), fsF)
	}); n != 2 {
		t.Fatalf("reader: manifest list read %d times by two scans, want 2 (no cache)", n)
	}
	if _, ok := tbl.Metadata().Properties()[table.ReadManifestListCacheEnabledKey]; ok {
		t.Fatalf("the table's metadata properties gained %s", table.ReadManifestListCacheEnabledKey)
	}
}

// namedOpens counts the opens of one file.
type namedOpens struct {
	iceio.IO
	name  string
	opens int
}

func (c *namedOpens) Open(name string) (iceio.File, error) {
	if name == c.name {
		c.opens++
	}
	return c.IO.Open(name)
}
