package source_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
)

// TestSpecFormDefaults: a table whose columns of every temporal type were
// added with a default after rows were written gives the same events
// whether its metadata holds the defaults as numbers (as iceberg-go
// writes them) or in the spec's JSON form (ISO-8601 strings, as Trino and
// Iceberg Java write them), and the old rows' images hold the defaults.
func TestSpecFormDefaults(t *testing.T) {
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 4, Name: "city", Type: iceberg.PrimitiveTypes.String}}}},
	)
	f := newFixture(t, 3, nil, sc)
	var rows []map[string]any
	for i := range 4 {
		rows = append(rows, map[string]any{"id": int64(i), "status": "new", "addr": map[string]any{"city": "x"}})
	}
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, rows)
	})
	at := time.Date(2001, 2, 3, 4, 5, 6, 789012000, time.UTC)
	ns := time.Date(1970, 1, 2, 0, 0, 0, 123456789, time.UTC) // exact as a JSON number
	u := uuid.MustParse("f79c3e09-677c-4bbd-a479-3f349cb785e7")
	// Each column added without a default (iceberg-go refuses defaults of
	// the tz types), then given one by rewriting the metadata files: as
	// the number iceberg-go writes, then in the spec's form.
	cols := []struct {
		name   string
		typ    iceberg.Type
		number any
		spec   string
		nested bool
	}{
		{name: "d", typ: iceberg.PrimitiveTypes.Date, number: 11356, spec: "2001-02-03"},
		{name: "d0", typ: iceberg.PrimitiveTypes.Date, number: -1, spec: "1969-12-31"},
		{name: "tm", typ: iceberg.PrimitiveTypes.Time, number: (4*3600+5*60+6)*1000000 + 789012, spec: "04:05:06.789012"},
		{name: "ts", typ: iceberg.PrimitiveTypes.Timestamp, number: at.UnixMicro(), spec: "2001-02-03T04:05:06.789012"},
		{name: "tstz", typ: iceberg.PrimitiveTypes.TimestampTz, number: at.UnixMicro(), spec: "2001-02-03T04:05:06.789012+00:00"},
		// before the epoch, in another zone: floors, not truncates
		{name: "tsold", typ: iceberg.PrimitiveTypes.TimestampTz, number: -1500000, spec: "1969-12-31T18:59:58.5-05:00"},
		{name: "tsns", typ: iceberg.PrimitiveTypes.TimestampNs, number: ns.UnixNano(), spec: "1970-01-02T00:00:00.123456789"},
		{name: "tstzns", typ: iceberg.PrimitiveTypes.TimestampTzNs, number: ns.UnixNano(), spec: "1970-01-02T00:00:00.123456789Z"},
		{name: "u", typ: iceberg.PrimitiveTypes.UUID, number: u.String(), spec: u.String()},
		{name: "seen", typ: iceberg.PrimitiveTypes.TimestampTz, number: at.UnixMicro(), spec: "2001-02-03T04:05:06.789012+00:00", nested: true},
	}
	f.do("add columns", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		tx := tb.NewTransaction()
		us := tx.UpdateSchema(true, false)
		for _, c := range cols {
			path := []string{c.name}
			if c.nested {
				path = []string{"addr", c.name}
			}
			us.AddColumn(path, c.typ, "", false, nil)
		}
		if err := us.Commit(); err != nil {
			return nil, err
		}
		return tx.Commit(ctx)
	})
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, iceberg.EqualTo(iceberg.Reference("id"), int64(1)), func(r map[string]any) map[string]any {
			r["status"] = "paid"
			return r
		})
	})
	f.do("delete old", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, iceberg.EqualTo(iceberg.Reference("id"), int64(2)))
	})

	numbers, spec := map[string]any{}, map[string]any{}
	for _, c := range cols {
		numbers[c.name], spec[c.name] = c.number, c.spec
	}
	setDefaults(t, f.tableDir(), numbers)
	numeric := specEvents(t, f)
	for _, want := range []string{`"seen":"2001-02-03T04:05:06.789012Z"`, `"d":"2001-02-03"`, `"d0":"1969-12-31"`, `"tm":"04:05:06.789012"`,
		`"ts":"2001-02-03T04:05:06.789012"`, `"tstz":"2001-02-03T04:05:06.789012Z"`, `"tsold":"1969-12-31T23:59:58.500000Z"`,
		`"tsns":"1970-01-02T00:00:00.123456789"`, `"tstzns":"1970-01-02T00:00:00.123456789Z"`, `"u":"` + u.String() + `"`} {
		if !strings.Contains(numeric, want) {
			t.Errorf("the events of the numeric defaults lack %s", want)
		}
	}
	setDefaults(t, f.tableDir(), spec)
	if got := specEvents(t, f); got != numeric {
		t.Errorf("the events differ with the spec's form:\nnumeric:\n%s\nspec form:\n%s", numeric, got)
	}
}

// setDefaults sets, in every metadata file under dir, the initial and
// write defaults of the fields named in values (at any depth).
func setDefaults(t *testing.T, dir string, values map[string]any) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "metadata", "*.metadata.json"))
	set := 0
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var md map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // snapshot ids are past float64's exact range
		if err := dec.Decode(&md); err != nil {
			t.Fatal(err)
		}
		schemas, _ := md["schemas"].([]any)
		for _, s := range schemas {
			set += specDefaults(s.(map[string]any)["fields"], values)
		}
		if b, err = json.Marshal(md); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if set == 0 {
		t.Fatal("no default set")
	}
}

// specDefaults sets the defaults of the fields named in values (at any
// depth), and returns how many it set.
func specDefaults(fields any, values map[string]any) int {
	n := 0
	list, _ := fields.([]any)
	for _, f := range list {
		m := f.(map[string]any)
		if v, ok := values[m["name"].(string)]; ok {
			m["initial-default"], m["write-default"] = v, v
			n++
		}
		if typ, ok := m["type"].(map[string]any); ok {
			n += specDefaults(typ["fields"], values)
		}
	}
	return n
}

// specEvents is every event of f's table, one debezium-json line each.
func specEvents(t *testing.T, f *fixture) string {
	t.Helper()
	src := f.open()
	defer src.Close()
	snaps, err := src.Snapshots(f.ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, si := range snaps {
		c, err := src.Commit(f.ctx, si)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Materialize(f.ctx); err != nil {
			t.Fatal(err)
		}
		for i := range c.Events {
			b, err := (&debezium.JSON{}).AppendValue(nil, c, &c.Events[i], 0)
			if err != nil {
				t.Fatal(err)
			}
			all.Write(b)
			all.WriteByte('\n')
		}
	}
	return all.String()
}
