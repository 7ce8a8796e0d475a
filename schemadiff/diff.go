package schemadiff

import (
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// FieldChange is one difference between two schemas.
type FieldChange struct {
	// Kind is add_column, drop_column, rename_column, update_column_type,
	// make_optional, make_required, update_column_doc, move_column or
	// update_identifier_fields.
	Kind string
	// FieldID is the field's id (0 for update_identifier_fields).
	FieldID int
	// Path is the field's dotted name in the new schema (the old one for
	// drop_column); From and To say what changed, in Iceberg's type
	// strings, names or positions (1-based among the field's siblings).
	Path, From, To string
	// After is, for move_column, the name of the sibling the field now
	// follows; empty when it is first.
	After string
}

// schemaField is a field of a flattened schema.
type schemaField struct {
	f      iceberg.NestedField
	path   string
	parent int // the enclosing field's id; 0 at the top level
	pos    int // 0-based among its siblings
}

// flattenSchema lists every field of sc, nested ones included, parents
// before children, in schema order.
func flattenSchema(sc *iceberg.Schema) []schemaField {
	var out []schemaField
	var walk func(fields []iceberg.NestedField, prefix string, parent int)
	walk = func(fields []iceberg.NestedField, prefix string, parent int) {
		for i, f := range fields {
			p := f.Name
			if prefix != "" {
				p = prefix + "." + f.Name
			}
			out = append(out, schemaField{f: f, path: p, parent: parent, pos: i})
			if nt, ok := f.Type.(iceberg.NestedType); ok {
				walk(nt.Fields(), p, f.ID)
			}
		}
	}
	walk(sc.Fields(), "", 0)
	return out
}

// Diff lists the changes from a to b: those of b's fields in b's
// order, then the dropped fields in a's order, then the identifier fields.
func Diff(a, b *iceberg.Schema) []FieldChange {
	old := map[int]schemaField{}
	for _, f := range flattenSchema(a) {
		old[f.f.ID] = f
	}
	nw := flattenSchema(b)
	kept := map[int]bool{}
	moved := movedFields(old, nw)

	var ch []FieldChange
	for _, f := range nw {
		o, ok := old[f.f.ID]
		if !ok {
			to := f.f.Type.String()
			if f.f.Required {
				to += " not null"
			}
			ch = append(ch, FieldChange{Kind: "add_column", FieldID: f.f.ID, Path: f.path, To: to})
			continue
		}
		kept[f.f.ID] = true
		if o.f.Name != f.f.Name {
			ch = append(ch, FieldChange{Kind: "rename_column", FieldID: f.f.ID, Path: f.path, From: o.path, To: f.path})
		}
		_, nested := f.f.Type.(iceberg.NestedType)
		if !nested && !o.f.Type.Equals(f.f.Type) {
			ch = append(ch, FieldChange{Kind: "update_column_type", FieldID: f.f.ID, Path: f.path, From: o.f.Type.String(), To: f.f.Type.String()})
		}
		if o.f.Required && !f.f.Required {
			ch = append(ch, FieldChange{Kind: "make_optional", FieldID: f.f.ID, Path: f.path})
		} else if !o.f.Required && f.f.Required {
			ch = append(ch, FieldChange{Kind: "make_required", FieldID: f.f.ID, Path: f.path})
		}
		if o.f.Doc != f.f.Doc {
			ch = append(ch, FieldChange{Kind: "update_column_doc", FieldID: f.f.ID, Path: f.path, From: o.f.Doc, To: f.f.Doc})
		}
		if after, ok := moved[f.f.ID]; ok {
			ch = append(ch, FieldChange{Kind: "move_column", FieldID: f.f.ID, Path: f.path,
				From: strconv.Itoa(o.pos + 1), To: strconv.Itoa(f.pos + 1), After: after})
		}
	}
	for _, o := range flattenSchema(a) {
		if !kept[o.f.ID] && !droppedParent(o, kept, old) {
			ch = append(ch, FieldChange{Kind: "drop_column", FieldID: o.f.ID, Path: o.path, From: o.f.Type.String()})
		}
	}
	if from, to := identifierNames(a), identifierNames(b); from != to {
		ch = append(ch, FieldChange{Kind: "update_identifier_fields", From: from, To: to})
	}
	return ch
}

// movedFields returns the fields that moved among the siblings both
// schemas have, each with the name of the sibling it now follows: the
// fewest such that the others keep their order (those outside a longest
// run of fields whose old order increases in the new order).
func movedFields(old map[int]schemaField, nw []schemaField) map[int]string {
	type member struct {
		id, rank int
		prev     string // the sibling before it in the new schema
	}
	groups := map[int][]member{}
	var parents []int
	prevName := map[int]string{}
	for _, f := range nw {
		o, ok := old[f.f.ID]
		if ok && o.parent == f.parent {
			if _, seen := groups[f.parent]; !seen {
				parents = append(parents, f.parent)
			}
			groups[f.parent] = append(groups[f.parent], member{id: f.f.ID, rank: o.pos, prev: prevName[f.parent]})
		}
		prevName[f.parent] = f.f.Name
	}
	moved := map[int]string{}
	for _, p := range parents {
		g := groups[p]
		// Longest increasing subsequence of the old positions, by
		// patience sorting: tails[k] is the index in g of the smallest
		// tail of an increasing run of length k+1.
		tails, back := []int{}, make([]int, len(g))
		for i, m := range g {
			k, _ := slices.BinarySearchFunc(tails, m.rank, func(j, r int) int { return g[j].rank - r })
			back[i] = -1
			if k > 0 {
				back[i] = tails[k-1]
			}
			if k == len(tails) {
				tails = append(tails, i)
			} else {
				tails[k] = i
			}
		}
		keep := make([]bool, len(g))
		for i := tails[len(tails)-1]; i >= 0; i = back[i] {
			keep[i] = true
		}
		for i, m := range g {
			if !keep[i] {
				moved[m.id] = m.prev
			}
		}
	}
	return moved
}

// droppedParent reports whether a dropped field's enclosing field was
// dropped too: dropping a struct reports the struct only.
func droppedParent(o schemaField, kept map[int]bool, old map[int]schemaField) bool {
	if o.parent == 0 {
		return false
	}
	_, ok := old[o.parent]
	return ok && !kept[o.parent]
}

// identifierNames returns a schema's identifier fields as a
// comma-separated list of dotted names, in id order.
func identifierNames(sc *iceberg.Schema) string {
	ids := slices.Clone(sc.IdentifierFieldIDs)
	slices.Sort(ids)
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		if n, ok := sc.FindColumnName(id); ok {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}
