package subscribe

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

var (
	_ cdc.Policy = Columns(nil)
	_ cdc.Stage  = (*Subscription)(nil)
)

// Columns is a table's column subscription as configured
// (tables[].columns), the Policy cmd/icecdc hands the table.
type Columns []string

// ForTable resolves the subscription against sc, the table's current
// schema; nil without columns. A column a stage before it (the shaping)
// leaves out is refused: it could never change.
func (cols Columns) ForTable(_ string, sc *iceberg.Schema, _ []string, before []cdc.Stage) (cdc.Stage, error) {
	if len(cols) == 0 {
		return nil, nil
	}
	sub, err := New("", sc, cols)
	if err != nil {
		return nil, err
	}
	for _, col := range cols {
		for _, st := range before {
			if ex, ok := st.(cdc.Excluder); ok && ex.Excludes(col) {
				return nil, fmt.Errorf("tables[].columns: %q is a column debezium.column.include.list or column.exclude.list leaves out", col)
			}
		}
	}
	return sub, nil
}

// Subscription is a table's column subscription (tables[].columns): only
// the updates that change one of the columns are emitted, inserts and
// deletes always, and every image is projected to the top-level columns
// that hold the subscribed ones and the key. A column is named as in
// changed_fields: a top-level name, or a path through structs
// (address.city); a field inside a list or a map cannot be named alone.
//
// Columns are resolved to field ids against the schema the table has when
// the subscription is made, so a later rename is followed (images and
// changed_fields carry the new name). An update paired from an equality
// delete and an insert is always emitted: it moves the row to a new row
// id. A subscribed column that a later schema drops stops the table with
// an error naming it.
type Subscription struct {
	table   string
	columns []string // as configured
	ids     []int    // their field ids

	mu   sync.Mutex
	last *subProjection // for the schema seen last
}

// subProjection is a subscription resolved against one schema.
type subProjection struct {
	from   *iceberg.Schema
	to     *iceberg.Schema // the projected schema of the events
	keep   []int           // indexes of from's top-level fields to keep
	paths  []string        // the subscribed columns' paths in from
	hasKey bool
}

// New resolves columns against sc, the table's current schema.
// table names the table in errors (empty: the caller names it).
func New(table string, sc *iceberg.Schema, columns []string) (*Subscription, error) {
	if len(columns) == 0 {
		return nil, fmt.Errorf("%scolumns: empty subscription", tablePrefix(table))
	}
	s := &Subscription{table: table, columns: columns}
	for _, col := range columns {
		f, ok := sc.FindFieldByName(col)
		if !ok {
			return nil, fmt.Errorf("%scolumns: unknown column %q (the table's columns: %s)", tablePrefix(table), col, topLevelNames(sc))
		}
		if fieldPath(sc, f.ID) == "" {
			return nil, fmt.Errorf("%scolumns: %q is inside a list or a map; subscribe to the column that holds it", tablePrefix(table), col)
		}
		s.ids = append(s.ids, f.ID)
	}
	return s, nil
}

// Columns returns the subscribed columns as configured.
func (s *Subscription) Columns() []string { return s.columns }

// Apply filters and projects events of c. It returns the commit the kept
// events are to be encoded with (c with the projected schema) and the
// kept events, which keep their event indexes.
func (s *Subscription) Apply(c *cdc.Commit, evs []cdc.Event) (*cdc.Commit, []cdc.Event, error) {
	p, err := s.projection(c)
	if err != nil {
		return nil, nil, err
	}
	sc := c.Table.Schema
	kept := make([]cdc.Event, 0, len(evs))
	var slab cdc.RowSlab
	for _, e := range evs {
		// The projection makes new Rows: the images are taken as Rows.
		if err := e.MaterializeRows(); err != nil {
			return nil, nil, fmt.Errorf("event %d: %w", e.Index, err)
		}
		if e.Op == cdc.OpUpdate && e.Source == "" && !p.touches(cdc.ChangedFields(sc, e.Before, e.After)) {
			continue
		}
		e.Before, e.After = p.project(&slab, e.Before), p.project(&slab, e.After)
		kept = append(kept, e)
	}
	pc := *c
	pc.Table.Schema = p.to
	pc.Events, pc.Rest, pc.Total = nil, nil, 0
	return &pc, kept, nil
}

// SchemaChange returns ch as it is: a schema change record describes the
// table's schema, whatever the subscription projects.
func (s *Subscription) SchemaChange(ch *cdc.SchemaChange) (*cdc.SchemaChange, error) { return ch, nil }

var errNoSchema = errors.New("no schema")

func (s *Subscription) projection(c *cdc.Commit) (*subProjection, error) {
	sc := c.Table.Schema
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && s.last.from == sc {
		return s.last, nil
	}
	if sc == nil {
		return nil, errNoSchema
	}
	p := &subProjection{from: sc}
	want := map[int]bool{} // top-level field ids to keep
	for i, id := range s.ids {
		path := fieldPath(sc, id)
		if path == "" {
			return nil, cdc.Permanent(fmt.Errorf("%scolumns: the subscribed column %q (field id %d) is not in the schema of snapshot %d (schema %d): it was dropped; change tables[].columns and restart",
				tablePrefix(s.table), s.columns[i], id, c.Snapshot.ID, sc.ID))
		}
		p.paths = append(p.paths, path)
		want[topID(sc, id)] = true
	}
	for _, k := range c.Table.KeyFields {
		if f, ok := sc.FindFieldByName(k); ok {
			want[topID(sc, f.ID)] = true
		}
	}
	var fields []iceberg.NestedField
	for i, f := range sc.Fields() {
		if want[f.ID] {
			p.keep = append(p.keep, i)
			fields = append(fields, f)
		}
	}
	var ids []int
	for _, id := range sc.IdentifierFieldIDs {
		if want[topID(sc, id)] {
			ids = append(ids, id)
		}
	}
	p.to = iceberg.NewSchemaWithIdentifiers(sc.ID, ids, fields...)
	s.last = p
	return p, nil
}

// touches reports whether a changed field is, holds or lies inside a
// subscribed column.
func (p *subProjection) touches(changed []string) bool {
	for _, c := range changed {
		for _, s := range p.paths {
			if c == s || strings.HasPrefix(c, s+".") || strings.HasPrefix(s, c+".") {
				return true
			}
		}
	}
	return false
}

func (p *subProjection) project(slab *cdc.RowSlab, r values.Row) values.Row {
	if r == nil {
		return nil
	}
	out := slab.Row(len(p.keep))
	for i, k := range p.keep {
		out[i] = valueAt(r, k)
	}
	return out
}

// valueAt is r[i], or nil (null) past the end of r.
func valueAt(r values.Row, i int) any {
	if i < len(r) {
		return r[i]
	}
	return nil
}

// fieldPath returns the path of field id through structs only, or "" when
// the field is not in sc or lies inside a list or a map.
func fieldPath(sc *iceberg.Schema, id int) string {
	p, _ := findPath(sc, id)
	return p
}

// topID returns the id of the top-level field holding field id.
func topID(sc *iceberg.Schema, id int) int {
	_, top := findPath(sc, id)
	return top
}

func findPath(sc *iceberg.Schema, id int) (path string, top int) {
	var walk func(prefix string, fields []iceberg.NestedField) string
	walk = func(prefix string, fields []iceberg.NestedField) string {
		for _, f := range fields {
			path := f.Name
			if prefix != "" {
				path = prefix + "." + f.Name
			}
			if f.ID == id {
				return path
			}
			if st, ok := f.Type.(*iceberg.StructType); ok {
				if p := walk(path, st.FieldList); p != "" {
					return p
				}
			}
		}
		return ""
	}
	for _, f := range sc.Fields() {
		if p := walk("", []iceberg.NestedField{f}); p != "" {
			return p, f.ID
		}
	}
	return "", 0
}

func topLevelNames(sc *iceberg.Schema) string {
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

func tablePrefix(table string) string {
	if table == "" {
		return ""
	}
	return "table " + table + ": "
}
