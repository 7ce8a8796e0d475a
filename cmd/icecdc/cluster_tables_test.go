package main

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/source"
)

// TestClusterTablesAtScale: every member of a cluster holds every table
// of the pipeline, so what it adds per table to the listed sources must
// stay small: with a copy of each table's source options in its Open it
// was 392 bytes a table (39 MB at 100,000 tables); the cluster.Table and
// a closure that reads the options from the list are 184.
func TestClusterTablesAtScale(t *testing.T) {
	const n = 100_000
	ts := make([]tableSource, n)
	for i := range ts {
		name := fmt.Sprintf("ns%03d.table_%06d", i/1000, i)
		ts[i] = tableSource{spec: cdc.TableSpec{Name: name}, opts: source.Options{Table: name, CatalogURI: "file:/x/catalog.db"}}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tables := clusterTables(ts, nil)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perTable := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("the member's tables add %.0f bytes a table to the sources listed", perTable)
	if perTable > 250 {
		t.Errorf("the member's tables add %.0f bytes a table to the sources listed, want at most 250", perTable)
	}
	if tables[n-1].Name != ts[n-1].spec.Name {
		t.Fatalf("the last table is %q, want %q", tables[n-1].Name, ts[n-1].spec.Name)
	}
	runtime.KeepAlive(ts)
}
