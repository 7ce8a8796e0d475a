package cdc_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/shape"
	"github.com/icecdc/icecdc/state"
	"github.com/icecdc/icecdc/subscribe"
	"github.com/icecdc/icecdc/values"
)

// TestPipelineShapesBeforeTheSubscription: a table that subscribes to
// some columns and masks another (outside the subscription) runs: the
// shaping comes first, so the subscription's projection is not taken for
// a schema that dropped the masked column. Skipped deletes move the
// checkpoint past them, and no masked or excluded value is written.
func TestPipelineShapesBeforeTheSubscription(t *testing.T) {
	info := cdc.TableInfo{Catalog: "test", Namespace: "shop", Name: "users", UUID: "00000000-0000-4000-8000-000000000002",
		Schema: iceberg.NewSchemaWithIdentifiers(0, []int{1},
			iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String},
			iceberg.NestedField{ID: 3, Name: "ssn", Type: iceberg.PrimitiveTypes.String},
			iceberg.NestedField{ID: 4, Name: "plan", Type: iceberg.PrimitiveTypes.String}),
		KeyFields: []string{"id"}}
	src := cdctest.New(info)
	src.Append(
		cdc.Event{Op: cdc.OpCreate, After: values.Row{int64(1), "ann@example.com", "123-45-6789", "free"}},
		cdc.Event{Op: cdc.OpCreate, After: values.Row{int64(2), "bob@example.com", "987-65-4321", "free"}},
	)
	src.Append(
		cdc.Event{Op: cdc.OpUpdate, Before: values.Row{int64(1), "ann@example.com", "123-45-6789", "free"}, After: values.Row{int64(1), "ann@example.org", "123-45-6789", "pro"}},
		cdc.Event{Op: cdc.OpDelete, Before: values.Row{int64(2), "bob@example.com", "987-65-4321", "free"}},
	)
	sh, err := shape.Parse(map[string]string{
		"column.mask.with.4.chars": `shop\.users\.email`,
		"column.exclude.list":      `shop\.users\.ssn`,
		"skipped.operations":       "d",
	})
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sink := &cdctest.Sink{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard only
	defer cancel()
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.users", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest},
		Policies: []cdc.Policy{sh, subscribe.Columns{"plan"}}}},
		Encoder: newEncoder("p"), Sink: sink, Store: store, Poll: time.Millisecond,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond, Once: true}
	if err := p.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var values []string
	for _, b := range sink.Batches() {
		values = append(values, b.Values...)
	}
	all := strings.Join(values, "\n")
	if len(values) != 3 || strings.Contains(all, "example") || strings.Contains(all, "-45-") || strings.Contains(all, "-65-") || strings.Contains(all, `"ssn"`) {
		t.Fatalf("values:\n%s", all)
	}
	if !strings.Contains(values[2], `"op":"u"`) || !strings.Contains(values[2], `"after":{"id":1,"plan":"pro"}`) {
		t.Errorf("the update: %s", values[2])
	}
	cp, _, err := store.Load(ctx, "p", "shop.users")
	if err != nil || cp.Seq != 2 || !cp.Done {
		t.Errorf("checkpoint %+v (%v), want snapshot 2 done past the skipped delete", cp, err)
	}

	// A subscription to a column the shaping leaves out is refused.
	p.Tables[0].Policies = []cdc.Policy{sh, subscribe.Columns{"ssn"}}
	p.Tables[0].Source = cdctest.New(info)
	err = p.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), `tables[].columns: "ssn" is a column debezium.column.include.list or column.exclude.list leaves out`) {
		t.Errorf("a subscription to an excluded column: %v", err)
	}
}
