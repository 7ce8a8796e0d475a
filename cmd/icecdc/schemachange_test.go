package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestRunSchemaChanges: with debezium.include.schema.changes, every
// snapshot that changes the schema writes one record to
// <prefix>.schema-changes, keyed and shaped as Debezium's: the first
// snapshot (CREATE), a compaction with no event that takes an added
// column, and a rename made while the daemon was stopped; the events
// after the rename carry the new Connect schema. Both delivery modes.
func TestRunSchemaChanges(t *testing.T) {
	for _, delivery := range []string{"at-least-once", "exactly-once"} {
		t.Run(delivery, func(t *testing.T) { runSchemaChanges(t, delivery) })
	}
}

func runSchemaChanges(t *testing.T, delivery string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := newKafka(t)
	env, tbl := newOrders(ctx, t)
	var err error
	step, evolve := tableSteps(ctx, t, &tbl)
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1, delivery: %s}}\ndebezium: {include.schema.changes: true, topic.prefix: shop}", brokers[0], delivery)
	cfg := writeConfig(t, "shop-cdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
	const topic, changes = "icecdc.bookshop.orders", "shop.schema-changes"
	read := func(topic string) int {
		recs, err := readCommitted(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}

	step("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{scenario.Order(1, "ann", "new", 10), scenario.Order(2, "bob", "new", 20)})
	})
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "the first events", func() bool { return read(topic) == 2 && read(changes) == 1 })
	evolve("add note", func(us *table.UpdateSchema) {
		us.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "for the courier", false, nil)
	})
	step("compact", scenario.Compact)
	d.waitFor(t, "the compaction's schema change", func() bool { return read(changes) == 2 })
	d.stop(t)
	evolve("rename", func(us *table.UpdateSchema) { us.RenameColumn([]string{"customer"}, "buyer") })
	step("append with note", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{{"order_id": int64(3), "buyer": "cy", "status": "new", "amount": 30.0, "note": "gift"}})
	})
	step("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, iceberg.EqualTo(iceberg.Reference("order_id"), int64(1)))
	})
	d = startDaemon(t, "-c", cfg)
	d.waitFor(t, "every event", func() bool { return read(topic) == 5 && read(changes) == 3 }) // 3 c, d, tombstone
	d.stop(t)

	recs, err := readCommitted(ctx, brokers, changes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		k, v := splitConnect(t, string(r.Key)), splitConnect(t, string(r.Value))
		var m struct {
			Source struct {
				SequenceNumber int64  `json:"sequence_number"`
				Operation      string `json:"operation"`
			}
			DDL          string
			TableChanges []struct {
				Type  string
				Table struct {
					Columns []struct{ Name string }
				}
			}
			Changes []struct{ Kind, Path string }
		}
		if err := json.Unmarshal(v.Payload, &m); err != nil || string(k.Payload) != `{"databaseName":"`+scenario.CatalogName+`"}` {
			t.Fatalf("record %s / %s: %v", k.Payload, v.Payload, err)
		}
		var cols []string
		for _, c := range m.TableChanges[0].Table.Columns {
			cols = append(cols, c.Name)
		}
		s := fmt.Sprintf("seq %d %s %s [%s]", m.Source.SequenceNumber, m.Source.Operation, m.TableChanges[0].Type, strings.Join(cols, " "))
		for _, c := range m.Changes {
			s += " " + c.Kind + ":" + c.Path
		}
		got = append(got, s)
	}
	want := []string{
		"seq 1 append CREATE [order_id customer status amount]",
		"seq 2 replace ALTER [order_id customer status amount note] add_column:note",
		"seq 3 append ALTER [order_id buyer status amount note] rename_column:buyer",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("schema changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	events, err := readCommitted(ctx, brokers, topic)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(events[2].Value); !strings.Contains(s, `"field":"buyer"`) || !strings.Contains(s, `"buyer":"cy"`) || !strings.Contains(s, `"note":"gift"`) {
		t.Fatalf("the event after the rename: %.600s", s)
	}
}
