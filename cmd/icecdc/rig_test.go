package main

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/icecdc/icecdc/internal/scenario"
)

// The rigs the daemon tests against Kafka share: a kfake broker, the
// bookshop's orders table in a fresh catalog, and the steps that commit
// to it.

// newKafka starts a one-broker kfake cluster, closed when the test ends,
// and returns its addresses.
func newKafka(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// newOrders creates the orders table (3-field orders schema, format
// version 3) in a fresh SQLite catalog, closed when the test ends.
func newOrders(ctx context.Context, t *testing.T) (*scenario.Env, *table.Table) {
	t.Helper()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	tbl, err := env.CreateTable(ctx, table.Identifier{"bookshop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	return env, tbl
}

// tableSteps returns step, which commits fn to *tbl and keeps the table
// it gives, and evolve, which commits a schema update the same way.
func tableSteps(ctx context.Context, t *testing.T, tbl **table.Table) (step func(string, func(context.Context, *table.Table) (*table.Table, error)), evolve func(string, func(*table.UpdateSchema))) {
	step = func(what string, fn func(context.Context, *table.Table) (*table.Table, error)) {
		t.Helper()
		next, err := fn(ctx, *tbl)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		*tbl = next
	}
	evolve = func(what string, fn func(*table.UpdateSchema)) {
		t.Helper()
		step(what, func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			tx := tb.NewTransaction()
			us := tx.UpdateSchema(true, false)
			fn(us)
			if err := us.Commit(); err != nil {
				return nil, err
			}
			return tx.Commit(ctx)
		})
	}
	return step, evolve
}
