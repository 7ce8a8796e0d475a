package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// splitName splits a target name into namespace and table.
func splitName(name string) (ns table.Identifier, tbl string, err error) {
	parts := strings.Split(name, ".")
	if len(parts) < 2 || parts[len(parts)-1] == "" || parts[0] == "" {
		return nil, "", fmt.Errorf("%q: want namespace.table", name)
	}
	return parts[:len(parts)-1], parts[len(parts)-1], nil
}

// openTarget loads the target table, or creates it with the shape of
// source schema src; with src nil, a missing table is (nil, nil).
func (s *Sink) openTarget(ctx context.Context, cat catalog.Catalog, name string, src *iceberg.Schema) (*table.Table, error) {
	ns, tn, err := splitName(name)
	if err != nil {
		return nil, cdc.Permanent(err)
	}
	ident := append(append(table.Identifier{}, ns...), tn)
	tbl, err := cat.LoadTable(ctx, ident)
	if err == nil {
		return tbl, nil
	}
	if !errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("load: %w", err)
	}
	if src == nil {
		return nil, nil
	}
	sc, err := targetSchema(src)
	if err != nil {
		return nil, cdc.Permanent(err)
	}
	if s.cfg.FormatVersion < 3 {
		for _, f := range sc.Fields() {
			if typ := v3Only(f.Type); typ != "" {
				return nil, cdc.Permanent(fmt.Errorf("column %s holds %s, which format version %d does not have: set sink.iceberg.format_version: 3",
					f.Name, typ, s.cfg.FormatVersion))
			}
		}
	}
	props := iceberg.Properties{"format-version": fmt.Sprint(s.cfg.FormatVersion)}
	for k, v := range s.cfg.Properties {
		props[k] = v
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(props)}
	if s.cfg.Partition == "day" {
		ts, _ := sc.FindFieldByName(ColCommitTimestamp)
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{ts.ID}, FieldID: 1000,
			Name: "_commit_day", Transform: iceberg.DayTransform{}})
		opts = append(opts, catalog.WithPartitionSpec(&spec))
	}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		if exists, cerr := cat.CheckNamespaceExists(ctx, ns); cerr != nil || !exists {
			return nil, fmt.Errorf("create namespace %s: %w", strings.Join(ns, "."), err)
		}
	}
	tbl, err = cat.CreateTable(ctx, ident, sc, opts...)
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return cat.LoadTable(ctx, ident) // another process made it meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("create (format version %d): %w", s.cfg.FormatVersion, err)
	}
	s.log.Info("iceberg sink: created target table", "target", name, "format_version", s.cfg.FormatVersion, "partition", s.cfg.Partition)
	return tbl, nil
}

// checkMeta refuses a target without the columns the sink adds, or with
// other types.
func checkMeta(sc *iceberg.Schema) error {
	for _, m := range metaFields {
		f, ok := sc.FindFieldByName(m.Name)
		if !ok {
			return fmt.Errorf("column %s: missing: the table was not made by the iceberg sink", m.Name)
		}
		if !f.Type.Equals(m.Type) {
			return fmt.Errorf("column %s is %s, want %s", m.Name, f.Type, m.Type)
		}
	}
	return nil
}

// evolution returns whether the target must change to take rows of source
// schema src (a column added, a type widened), or an error naming the
// column the target cannot follow.
func evolution(tgt, src *iceberg.Schema) (bool, error) {
	change := false
	for _, f := range src.Fields() {
		t, ok := tgt.FindFieldByName(f.Name)
		if !ok {
			change = true
			continue
		}
		if t.Type.Equals(f.Type) {
			continue
		}
		if widens(t.Type, f.Type) {
			change = true
			continue
		}
		_, tn := t.Type.(iceberg.NestedType)
		_, sn := f.Type.(iceberg.NestedType)
		if tn && sn {
			change = true // a nested column's fields: union by name decides
			continue
		}
		return false, fmt.Errorf("column %s is %s in the target and %s in the source: the target cannot follow", f.Name, t.Type, f.Type)
	}
	return change, nil
}

// widens reports whether Iceberg's type promotion takes from to to.
func widens(from, to iceberg.Type) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		return to.Equals(iceberg.PrimitiveTypes.Int64)
	case iceberg.Float32Type:
		return to.Equals(iceberg.PrimitiveTypes.Float64)
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() > f.Precision()
	}
	return false
}

// layout is how a source schema's rows land in the target's columns.
type layout struct {
	src   *iceberg.Schema
	as    *arrow.Schema
	from  []int // from[j]: the source field of target column j, -1: none
	meta  [7]int
	rb    *array.RecordBuilder
	nMeta int
}

func newLayout(tgt, src *iceberg.Schema) (*layout, error) {
	as, err := table.SchemaToArrowSchema(tgt, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	l := &layout{src: src, as: as, from: make([]int, as.NumFields())}
	pos := map[string]int{}
	for k, f := range src.Fields() {
		pos[f.Name] = k
	}
	for j, f := range as.Fields() {
		l.from[j] = -1
		if k, ok := pos[f.Name]; ok {
			l.from[j] = k
		}
	}
	for i, m := range metaFields {
		idx := as.FieldIndices(m.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("column %s: missing", m.Name)
		}
		l.meta[i] = idx[0]
		l.from[idx[0]] = -2
	}
	l.rb = array.NewRecordBuilder(memory.DefaultAllocator, as)
	return l, nil
}

// rowMeta is the added columns' values of one row.
type rowMeta struct {
	changeType string
	seq        int64
	snapshot   int64
	rowID      int64
	eventID    string
	tsMicros   int64
}

// add appends one row: image's values and m.
func (l *layout) add(image values.Row, m *rowMeta) error {
	for j, k := range l.from {
		if k < 0 {
			if k == -1 {
				l.rb.Field(j).AppendNull()
			}
			continue
		}
		var v any
		if k < len(image) {
			v = image[k]
		}
		if err := appendArrow(l.rb.Field(j), v); err != nil {
			return fmt.Errorf("column %s: %w", l.as.Field(j).Name, err)
		}
	}
	l.rb.Field(l.meta[0]).(*array.StringBuilder).Append(m.changeType)
	l.rb.Field(l.meta[1]).(*array.Int64Builder).Append(m.seq)
	l.rb.Field(l.meta[2]).(*array.Int64Builder).Append(m.snapshot)
	l.rb.Field(l.meta[3]).(*array.Int64Builder).Append(m.seq)
	l.rb.Field(l.meta[4]).(*array.Int64Builder).Append(m.rowID)
	l.rb.Field(l.meta[5]).(*array.StringBuilder).Append(m.eventID)
	l.rb.Field(l.meta[6]).(*array.TimestampBuilder).Append(arrow.Timestamp(m.tsMicros))
	return nil
}

// v3Only returns the first type inside t that only format version 3 has,
// or "".
func v3Only(t iceberg.Type) string {
	switch t := t.(type) {
	case *iceberg.StructType:
		for _, f := range t.FieldList {
			if s := v3Only(f.Type); s != "" {
				return s
			}
		}
		return ""
	case *iceberg.ListType:
		return v3Only(t.Element)
	case *iceberg.MapType:
		if s := v3Only(t.KeyType); s != "" {
			return s
		}
		return v3Only(t.ValueType)
	}
	s := t.String()
	for _, p := range []string{"variant", "timestamp_ns", "timestamptz_ns", "unknown", "geometry", "geography"} {
		if strings.HasPrefix(s, p) {
			return s
		}
	}
	return ""
}
