package source

import (
	"context"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestScanFileSkipsRowGroups reads positions of a 30-row file written in
// row groups of 4 rows: only the row groups holding them are decoded, and
// positions and row ids stay right.
func TestScanFileSkipsRowGroups(t *testing.T) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, iceberg.Properties{table.ParquetRowGroupLimitKey: "4"})
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	for i := int64(0); i < 30; i++ {
		rows = append(rows, scenario.Order(i, "c", "new", float64(i)))
	}
	if tbl, err = scenario.Append(ctx, tbl, rows); err != nil {
		t.Fatal(err)
	}
	src, err := Open(ctx, Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse, Table: "shop.orders"})
	if err != nil {
		t.Fatal(err)
	}
	snap := src.tbl.CurrentSnapshot()
	fs, _ := src.reader.FS(ctx)
	d, err := src.readDelta(ctx, fs, snap, src.nextRowID())
	if err != nil {
		t.Fatal(err)
	}
	m := metaOf(d.addedData[0])
	lay, err := readLayout(fs, m.file, src.footers)
	if err != nil {
		t.Fatal(err)
	}
	if len(lay.rows) != 8 || lay.storesRowID || lay.storesLUSN {
		t.Fatalf("layout %+v: want 8 row groups and no stored lineage", lay)
	}
	want := roaring64.BitmapOf(5, 6, 27)
	var seen []int64
	got, err := src.scanFile(ctx, snap, src.schemaFor(snap), m, readOpts{lay: lay, positions: want}, func(pos, id, lusn int64, ok bool) (bool, error) {
		seen = append(seen, pos)
		if !ok || id != *m.firstRowID+pos || lusn != snap.SequenceNumber {
			t.Errorf("position %d: row id %d lusn %d", pos, id, lusn)
		}
		return want.Contains(uint64(pos)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// row groups 1 (4..7) and 6 (24..27) only
	if len(seen) != 8 || seen[0] != 4 || seen[3] != 7 || seen[4] != 24 || seen[7] != 27 {
		t.Fatalf("decoded positions %v, want 4..7 and 24..27", seen)
	}
	if len(got) != 3 || got[2].row[0] != int64(27) {
		t.Fatalf("rows %+v", got)
	}
}
