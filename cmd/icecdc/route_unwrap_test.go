package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/internal/unwraptest"
)

// TestRunRoutesFlattenedRecords runs the daemon into Kafka with
// ByLogicalTableRouter and transforms.unwrap chained in both orders, and
// holds each record to what Debezium's chain makes of icecdc's own
// records: "route,unwrap" is ExtractNewRecordState's rules
// (internal/unwraptest) applied to the routed envelope records (the
// value schema named after the shared topic); "unwrap,route" is them
// applied to the unrouted envelope, with the routed key (the router
// renames only envelopes, and leaves the flattened value alone). Key,
// value and headers, record by record, through a create, an update, a
// delete and its tombstone.
func TestRunRoutesFlattenedRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	catalog := ordersChanged(ctx, t, 2)
	// Each run writes to a broker of its own; the table's topic
	// icecdc.orders is routed to shop.routed.
	const route = `route: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: 'icecdc\.(orders)', topic.replacement: 'shop.routed', key.field.regex: '.+\.(orders)', key.field.replacement: 'shop.$1'}`
	const unwrap = `unwrap: {delete.tombstone.handling.mode: rewrite-with-tombstone, add.fields: 'op,table,source.ts_ms', add.headers: 'op,table'}`
	run := func(name, transforms, topic string, want int) []unwraptest.Record {
		t.Helper()
		brokers := newKafka(t)
		sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic: 'icecdc.{table}', topic_partitions: 1}}\ntransforms:\n%s", brokers[0], transforms)
		return kafkaRecords(ctx, t, brokers, name, catalog, sink, topic, want)
	}
	const n = 5 // 2 c, u, d, tombstone
	envelope := run("envelope", "  {}", "icecdc.orders", n)
	routed := run("routed", "  "+route, "shop.routed", n)
	o := unwraptest.Options{Mode: "rewrite-with-tombstone", AddFields: []string{"op", "table", "source.ts_ms"}, AddHeaders: []string{"op", "table"}, Connect: true}
	for i := range routed {
		if d := unwraptest.Diff(unwraptest.Record{Key: routed[i].Key}, unwraptest.Record{Key: envelope[i].Key}); d == "" {
			t.Fatalf("record %d: the router left the key %s as it was", i, routed[i].Key)
		}
	}
	for _, tc := range []struct {
		order string
		input func(i int) unwraptest.Record
	}{
		{"route,unwrap", func(i int) unwraptest.Record { return routed[i] }},
		{"unwrap,route", func(i int) unwraptest.Record {
			r := envelope[i]
			r.Key = routed[i].Key
			return r
		}},
	} {
		t.Run(tc.order, func(t *testing.T) {
			var want []unwraptest.Record
			for i := range envelope {
				out, err := unwraptest.Apply(o, tc.input(i))
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, out...)
			}
			block := "  " + route + "\n  " + unwrap
			if tc.order == "unwrap,route" {
				block = "  " + unwrap + "\n  " + route
			}
			name := map[string]string{"route,unwrap": "ru", "unwrap,route": "ur"}[tc.order]
			got := run(name, block, "shop.routed", len(want))
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i := range got {
				if d := unwraptest.Diff(got[i], want[i]); d != "" {
					t.Fatalf("record %d: %s", i, d)
				}
			}
		})
	}
}

// changeOrders commits rows to the orders table, then an update of order
// upd by fn, then the delete of order del.
func changeOrders(ctx context.Context, t *testing.T, tbl *table.Table, rows []map[string]any, upd int64, fn func(map[string]any) map[string]any, del int64) {
	t.Helper()
	var err error
	if tbl, err = scenario.Append(ctx, tbl, rows); err != nil {
		t.Fatal(err)
	}
	if tbl, err = scenario.Update(ctx, tbl, iceberg.EqualTo(iceberg.Reference("order_id"), upd), fn); err != nil {
		t.Fatal(err)
	}
	if _, err = scenario.Delete(ctx, tbl, iceberg.EqualTo(iceberg.Reference("order_id"), del)); err != nil {
		t.Fatal(err)
	}
}

// paid marks an order paid.
func paid(r map[string]any) map[string]any {
	r["status"] = "paid"
	return r
}

// routedRecords runs the daemon with the configuration body until topic
// holds n records, and returns them.
func routedRecords(ctx context.Context, t *testing.T, brokers []string, body, topic string, n int) []*kgo.Record {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "icecdc.yaml")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, fmt.Sprintf("%d records on %s", n, topic), func() bool {
		recs, err := readCommitted(ctx, brokers, topic)
		return err == nil && len(recs) == n
	})
	d.stop(t)
	recs, err := readCommitted(ctx, brokers, topic)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// orderTables creates the tables bookshop.<name> in a fresh catalog, each
// with the schema schemaOf gives it (nil: the orders schema) and order 1
// of amount 10, 20, … in the order of names: equal keys in every table.
func orderTables(ctx context.Context, t *testing.T, names []string, schemaOf func(string) *iceberg.Schema) *scenario.Env {
	t.Helper()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	for i, name := range names {
		sc := scenario.OrdersSchema()
		if schemaOf != nil {
			sc = schemaOf(name)
		}
		tbl, err := env.CreateTable(ctx, table.Identifier{"bookshop", name}, sc, nil, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scenario.Append(ctx, tbl, []map[string]any{scenario.Order(1, "ann", "new", float64(10*(i+1)))}); err != nil {
			t.Fatal(err)
		}
	}
	return env
}
