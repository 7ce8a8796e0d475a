package shape

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

func shapeSchema(id int, fields ...iceberg.NestedField) *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(id, []int{1}, fields...)
}

var (
	fID    = iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}
	fEmail = iceberg.NestedField{ID: 2, Name: "email", Type: iceberg.PrimitiveTypes.String}
	fSSN   = iceberg.NestedField{ID: 3, Name: "ssn", Type: iceberg.PrimitiveTypes.Int64}
	fNote  = iceberg.NestedField{ID: 4, Name: "note", Type: iceberg.PrimitiveTypes.String}
)

// TestShaperRefusesWithOneLine: each option that cannot apply to the
// table stops it with one line naming the option.
func TestShaperRefusesWithOneLine(t *testing.T) {
	sc := shapeSchema(0, fID, fEmail, fSSN)
	for _, tc := range []struct {
		opts map[string]string
		keys []string
		want string
	}{
		{map[string]string{"column.mask.with.4.chars": `shop\.users\.emial`}, nil, `column.mask.with.4.chars: no column "emial" (the table's columns: id, email, ssn)`},
		{map[string]string{"column.mask.with.4.chars": `shop.users.ssn`}, nil, "column.mask.with.4.chars: column ssn is long, and this option applies to string columns only"},
		{map[string]string{"column.mask.hash.MD5.with.salt.x": `shop\.users\..*`}, nil, "column.mask.hash.MD5.with.salt.…: column id is long"},
		{map[string]string{"column.truncate.to.3.chars": `shop.users.ssn`}, nil, "column.truncate.to.3.chars: column ssn is long, and this option applies to string and binary columns only"},
		{map[string]string{"column.exclude.list": `shop.users.id`}, []string{"id"}, `column.exclude.list: "id" is the table's key and cannot be left out`},
		{map[string]string{"column.include.list": `shop.users.email`}, []string{"id"}, `column.include.list: "id" is the table's key and cannot be left out`},
	} {
		sh, err := Parse(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = sh.ForTable("shop.users", sc, tc.keys, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v, want one line starting %q", tc.opts, err, tc.want)
		}
	}
	// A pattern of another table, or a regular expression, names no
	// column in particular.
	sh, _ := Parse(map[string]string{"column.mask.with.4.chars": `shop\.other\.x,shop\.users\.e.*`})
	if _, err := sh.ForTable("shop.users", sc, nil, nil); err != nil {
		t.Errorf("a pattern of another table: %v", err)
	}
}

// TestShaperFollowsTheSchema: a masked column renamed keeps its mask, a
// column added later is matched by name, a masked column dropped stops
// the table naming the option, and the shaped schema and schema change
// leave the excluded column out.
func TestShaperFollowsTheSchema(t *testing.T) {
	sh, err := Parse(map[string]string{
		"column.mask.with.3.chars":   `shop\.users\.email`,
		"column.exclude.list":        `shop\.users\.ssn`,
		"column.truncate.to.2.chars": `shop\.users\.no.*`,
		"skipped.operations":         "d",
	})
	if err != nil {
		t.Fatal(err)
	}
	s0 := shapeSchema(0, fID, fEmail, fSSN)
	s, err := sh.ForTable("shop.users", s0, []string{"id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	renamed := fEmail
	renamed.Name = "mail"
	s1 := shapeSchema(1, fID, renamed, fSSN, fNote)
	c := &cdc.Commit{Table: cdc.TableInfo{Schema: s1}}
	evs := []cdc.Event{
		{Op: cdc.OpCreate, Index: 0, After: values.Row{int64(1), "a@b.c", int64(123456789), "hello"}},
		{Op: cdc.OpDelete, Index: 1, Before: values.Row{int64(2), "x@y.z", int64(987654321), nil}},
		{Op: cdc.OpUpdate, Index: 2, Before: values.Row{int64(3), "p@q.r", int64(5), "ab"}, After: values.Row{int64(3), "s@t.u", int64(6), "ab"}},
	}
	sc, kept, err := s.Apply(c, evs)
	if err != nil {
		t.Fatal(err)
	}
	if got := topLevelNames(sc.Table.Schema); got != "id, mail, note" {
		t.Errorf("shaped schema: %s", got)
	}
	if len(kept) != 2 || kept[0].Index != 0 || kept[1].Index != 2 {
		t.Fatalf("kept %+v, want the c and the u", kept)
	}
	if got := kept[0].After; len(got) != 3 || got[1] != "***" || got[2] != "he" {
		t.Errorf("shaped insert: %v", got)
	}
	if ch := sc.Table.ChangedFields(kept[1].Before, kept[1].After); len(ch) != 0 {
		t.Errorf("changed_fields of an update of a masked and an excluded column: %v", ch)
	}
	change := cdc.NewSchemaChange(s0, true, s1)
	shaped, err := s.SchemaChange(change)
	if err != nil {
		t.Fatal(err)
	}
	if got := topLevelNames(shaped.Previous); got != "id, email" {
		t.Errorf("previous schema: %s", got)
	}
	for _, fc := range shaped.Changes {
		if fc.FieldID == fSSN.ID {
			t.Errorf("a change of the excluded column: %+v", fc)
		}
	}
	s2 := shapeSchema(2, fID, fSSN)
	_, _, err = s.Apply(&cdc.Commit{Table: cdc.TableInfo{Schema: s2}, Snapshot: cdc.SnapshotInfo{ID: 9}}, evs[:1])
	if err == nil || !cdc.IsPermanent(err) || !strings.HasPrefix(err.Error(), "column.mask.with.3.chars: the masked column (field id 2) is not in schema 2: it was dropped") {
		t.Errorf("a masked column dropped: %v", err)
	}
}

// topLevelNames lists the top-level columns of sc.
func topLevelNames(sc *iceberg.Schema) string {
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}
