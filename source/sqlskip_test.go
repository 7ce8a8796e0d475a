package source_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// TestSQLCheckSkipsUnchangedCatalog: the change checks of a SQLite
// catalog that no one committed to since the last full check do not query
// iceberg_tables again (and keep their tables covered); a writer's commit
// makes the next check full, which wakes its table, and so does that
// table's load of the new metadata.
func TestSQLCheckSkipsUnchangedCatalog(t *testing.T) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	names, err := env.ManyTables(ctx, "many", 3)
	if err != nil {
		t.Fatal(err)
	}
	cat, srcs := sharedTables(t, source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse}, 2, names)
	checks := func(n int) int64 {
		t.Helper()
		before := source.SQLFullChecks()
		for range n {
			if err := cat.CheckChanges(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i, src := range srcs {
			if _, covered := src.Changes(); !covered {
				t.Fatalf("%s not covered", names[i])
			}
		}
		return source.SQLFullChecks() - before
	}
	if n := checks(5); n != 1 {
		t.Fatalf("5 checks of an unchanged catalog queried it %d times, want once", n)
	}
	tbl, err := env.LoadTable(ctx, catalog.ToIdentifier(names[1]))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Append(ctx, tbl, orders(50, 50)); err != nil {
		t.Fatal(err)
	}
	if n := checks(3); n != 1 {
		t.Fatalf("3 checks after a commit queried the catalog %d times, want once", n)
	}
	ch, _ := srcs[1].Changes()
	select {
	case <-ch:
	default:
		t.Fatal("the committed table was not woken")
	}
	if changed, err := srcs[1].Refresh(ctx); err != nil || !changed {
		t.Fatalf("refresh of the woken table: changed %v, err %v", changed, err)
	}
	if n := checks(3); n != 1 {
		t.Fatalf("3 checks after the woken table loaded queried the catalog %d times, want once", n)
	}
}
