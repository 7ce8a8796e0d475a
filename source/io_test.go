package source_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/internal/slowio"
	"github.com/icecdc/icecdc/source"
)

// ioHistory is a table whose commits read data files in every way a
// commit does: appends, an update (vector and before images), compaction,
// an update of the compacted file (narrow and full reads of a file that
// stores lineage), a copy-on-write delete (a removed file).
func ioHistory(t *testing.T) *fixture {
	f := newFixture(t, 3, nil, nil)
	// A file larger than one tail read, and small ones read whole.
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(100, 30000))
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 10))
	})
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(11, 20))
	})
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, in("order_id", 2, 12, 150), setStatus("paid"))
	})
	f.do("compact", func(ctx context.Context, tb *table.Table) (*table.Table, error) { return scenario.Compact(ctx, tb) })
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, eq("order_id", 5), setStatus("shipped"))
	})
	f.do("cow delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.DeleteCoW(ctx, tb, eq("order_id", 7))
	})
	return f
}

// TestFootersReadOnce: however often a commit (and the commits after it,
// and an initial read) opens a data file, its footer is read from storage
// once: a file up to a tail read (64 KiB) is read whole once, then served
// from memory; a file up to 1 MiB is read whole by its first open, and its
// footer is never read again; a larger one (here: with whole reads off)
// has one read ending at its end.
func TestFootersReadOnce(t *testing.T) {
	f := ioHistory(t)
	t.Run("whole", func(t *testing.T) { footersReadOnce(t, f, 1<<20) })
	t.Run("ranged", func(t *testing.T) {
		defer source.SetWholeRead(0)()
		footersReadOnce(t, f, 0)
	})
}

func footersReadOnce(t *testing.T, f *fixture, whole int64) {
	sio, restore := slowio.Install()
	defer restore()
	src := f.open()
	defer src.Close()
	sio.Record(true)
	ctx := context.Background()
	snaps, err := src.Snapshots(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range snaps {
		c, err := src.Commit(ctx, si)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.EachBatch(ctx, 0, func([]cdc.Event) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := src.InitialRead(ctx, snaps[len(snaps)-1]); err != nil {
		t.Fatal(err)
	}
	type counts struct{ size, opens, tails, reads, first int64 }
	files := map[string]*counts{}
	for _, r := range sio.Reads() {
		if !strings.HasSuffix(r.Name, ".parquet") {
			continue
		}
		c := files[r.Name]
		if c == nil {
			st, err := os.Stat(strings.TrimPrefix(r.Name, "file://"))
			if err != nil {
				t.Fatal(err)
			}
			c = &counts{size: st.Size()}
			files[r.Name] = c
		}
		switch {
		case r.Len < 0:
			c.opens++
			if c.first == 0 {
				c.first = -1 // the first request was an open
			}
		case r.Off+r.Len == c.size:
			if c.first == 0 {
				c.first = 1
			}
			c.tails++
		default:
			c.reads++
		}
	}
	large := 0
	for name, c := range files {
		if c.size > 64<<10 && c.size <= whole {
			large++
			// Read whole by the open that came first, and by every open
			// after: no ranged read at all.
			if c.tails != 0 || c.reads != 0 || c.first != -1 {
				t.Errorf("data file %s (%d bytes): %d tail and %d other ranged reads; want every open to read it whole", name, c.size, c.tails, c.reads)
			}
			continue
		}
		if c.size > 64<<10 {
			large++
			if c.tails != 1 {
				t.Errorf("data file %s (%d bytes): its footer was read %d times", name, c.size, c.tails)
			}
			continue
		}
		if c.opens != 1 || c.tails+c.reads != 0 {
			t.Errorf("data file %s (%d bytes): opened %d times, %d ranged reads; want one open that reads it whole", name, c.size, c.opens, c.tails+c.reads)
		}
	}
	if large == 0 || len(files) < 5 {
		t.Fatalf("%d data files read, %d of them larger than a tail read: want the history's files, one large", len(files), large)
	}
}

// TestIdleRefresh: a Refresh of an unchanged table reads the metadata and
// nothing else, and says nothing changed; a commit changes it.
func TestIdleRefresh(t *testing.T) {
	f := ioHistory(t)
	sio, restore := slowio.Install()
	defer restore()
	ctx := context.Background()
	for _, o := range []source.Options{
		{MetadataPath: f.tbl.MetadataLocation()},
		{CatalogType: "sql", CatalogURI: f.env.CatalogURI, Warehouse: f.env.Warehouse, Table: "shop.orders"},
	} {
		src, err := source.Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		sio.Reset()
		changed, err := src.Refresh(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := sio.Requests(); changed || n != 1 {
			t.Errorf("%+v: idle Refresh: changed %v after %d requests, want false after 1", o, changed, n)
		}
		src.Close()
	}
	src := f.open()
	defer src.Close()
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(30, 31))
	})
	if changed, err := src.Refresh(ctx); err != nil || !changed {
		t.Fatalf("Refresh after a commit: changed %v, %v", changed, err)
	}
}

// TestVectorsReadTogether: the vectors a commit wrote into one Puffin file
// are read with one open and one ranged read, not one of each per vector.
func TestVectorsReadTogether(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	for i := int64(0); i < 5; i++ {
		f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, tb, orders(10*i+1, 10*i+10))
		})
	}
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, in("order_id", 3, 13, 23, 33, 43), setStatus("paid"))
	})
	sio, restore := slowio.Install()
	defer restore()
	src := f.open()
	defer src.Close()
	ctx := context.Background()
	head, _ := src.Head()
	sio.Record(true)
	c, err := src.Commit(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Events) != 5 {
		t.Fatalf("%d events, want 5 updates", len(c.Events))
	}
	opens, reads := 0, 0
	for _, r := range sio.Reads() {
		if strings.HasSuffix(r.Name, ".puffin") {
			if r.Len < 0 {
				opens++
			} else {
				reads++
			}
		}
	}
	if opens != 1 || reads != 1 {
		t.Fatalf("5 vectors of one Puffin file: %d opens and %d ranged reads, want 1 and 1", opens, reads)
	}
}
