package source_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/javatables"
	"github.com/icecdc/icecdc/internal/scenario"
)

// TestCommitSchemaChange: a snapshot reports the schema change it brings
// (by comparing its schema with its parent's), a replace with no event
// included, and the table's first snapshot and an initial read report
// the whole schema; the others report none.
func TestCommitSchemaChange(t *testing.T) {
	f := newFixture(t, 3, nil, nil)
	evolve := func(what string, fn func(*table.UpdateSchema)) {
		f.do(what, func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			tx := tb.NewTransaction()
			us := tx.UpdateSchema(true, false)
			fn(us)
			if err := us.Commit(); err != nil {
				return nil, err
			}
			return tx.Commit(ctx)
		})
	}
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 3))
	})
	evolve("add and rename", func(us *table.UpdateSchema) {
		us.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
		us.RenameColumn([]string{"customer"}, "buyer")
	})
	f.do("append with note", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{{"order_id": int64(4), "buyer": "c4", "status": "new", "amount": 6.0, "note": "gift"}})
	})
	evolve("move", func(us *table.UpdateSchema) { us.MoveFirst([]string{"note"}) })
	f.do("compact", scenario.Compact)
	f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, iceberg.EqualTo(iceberg.Reference("order_id"), int64(1)))
	})

	src := f.open()
	defer src.Close()
	snaps, err := src.Snapshots(f.ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, si := range snaps {
		c, err := src.Commit(f.ctx, si)
		if err != nil {
			t.Fatal(err)
		}
		s := fmt.Sprintf("%s %d events:", si.Operation, c.Len())
		if ch := c.SchemaChange; ch != nil {
			s += " " + ch.Type
			for _, fc := range ch.Changes {
				s += " " + fc.Kind + ":" + fc.Path
			}
		}
		got = append(got, s)
	}
	want := []string{
		"append 3 events: CREATE",
		"append 1 events: ALTER rename_column:buyer add_column:note",
		"replace 0 events: ALTER move_column:note",
		"delete 1 events:",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("snapshots:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	init, err := src.InitialRead(f.ctx, snaps[len(snaps)-1])
	if err != nil {
		t.Fatal(err)
	}
	if ch := init.SchemaChange; ch == nil || ch.Type != "CREATE" || init.Table.Schema.Fields()[0].Name != "note" {
		t.Fatalf("initial read: %+v", ch)
	}
}

// TestJavaSchemaChanges: on the table Spark wrote with a RENAME COLUMN and
// a DROP COLUMN (testdata/java/rename-drop), the snapshots that first
// carry each new schema report that change, by field id, and no other
// snapshot reports one.
func TestJavaSchemaChanges(t *testing.T) {
	tb := javatables.Load(t, "rename-drop")
	src := openJava(t, tb)
	defer src.Close()
	ctx := context.Background()
	snaps, err := src.Snapshots(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, si := range snaps {
		c, err := src.Commit(ctx, si)
		if err != nil {
			t.Fatal(err)
		}
		s := fmt.Sprintf("seq %d:", si.SequenceNumber)
		if ch := c.SchemaChange; ch != nil {
			s += " " + ch.Type
			for _, fc := range ch.Changes {
				s += fmt.Sprintf(" %s:%s(%s>%s)", fc.Kind, fc.Path, fc.From, fc.To)
			}
		}
		got = append(got, s)
	}
	want := []string{
		"seq 1: CREATE",
		"seq 2: ALTER rename_column:label(name>label)",
		"seq 3: ALTER drop_column:note(string>)",
		"seq 4:",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("schema changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
