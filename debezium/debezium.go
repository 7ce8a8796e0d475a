package debezium

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// Envelope carries what the envelope needs beyond the event itself.
type Envelope struct {
	Pipeline string // source.name: the pipeline's configured name
	Version  string // source.version: the icecdc version
}

// JSON encodes events as Debezium envelopes (docs/events.md), so that
// existing Debezium consumers read icecdc's events unchanged. It holds no
// per-call state and may be used from several goroutines; it caches what
// it derives from schemas and commits, so it is used by pointer and never
// copied.
type JSON struct {
	Envelope
	// VariantHandling is how variant values are written; the zero value
	// is VariantString.
	VariantHandling VariantHandlingMode
	schemas         schemaCache
	commits         commitCache
}

// AppendValue appends the event's envelope JSON to dst, on one line without
// a trailing newline; tsMs is the processing time. The row images are
// encoded with c.Table.Schema. On error (a *ValueError for a row value that
// does not fit its field) it returns dst unchanged.
func (f *JSON) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	out, err := f.appendValue(dst, c, e, tsMs)
	if err != nil {
		return dst, fmt.Errorf("encode event %s: %w", eventID(c, e), err)
	}
	return out, nil
}

func (f *JSON) appendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	if err := validEvent(e); err != nil {
		return dst, err
	}
	if c.Table.Schema == nil {
		return dst, errNoSchema
	}
	row := &f.schemas.getFor(c.Table.Schema, f.inlineVariants()).row
	before, after, err := images(e, c.Table.Schema, e.Op == cdc.OpUpdate)
	if err != nil {
		return dst, err
	}

	dst = append(dst, `{"before":`...)
	if dst, err = row.appendImage(dst, before); err != nil {
		return dst, fmt.Errorf("before: %w", err)
	}
	dst = append(dst, `,"after":`...)
	if dst, err = row.appendImage(dst, after); err != nil {
		return dst, fmt.Errorf("after: %w", err)
	}
	dst = append(dst, `,"op":"`...)
	dst = append(dst, byte(e.Op), '"')
	if e.Op == cdc.OpUpdate {
		// Which fields the update changed, so that a consumer interested
		// in a few columns need not compare the images itself.
		dst = append(dst, `,"changed_fields":[`...)
		for i, p := range c.Table.ChangedFields(before.row, after.row) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, p)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"ts_ms":`...)
	dst = strconv.AppendInt(dst, tsMs, 10)

	dst = append(dst, `,"source":{"version":`...)
	dst = appendJSONString(dst, f.Version)
	dst = append(dst, `,"connector":"icecdc","name":`...)
	dst = appendJSONString(dst, f.Pipeline)
	dst = append(dst, `,"ts_ms":`...)
	dst = strconv.AppendInt(dst, c.Snapshot.TimestampMs, 10)
	dst = append(dst, `,"snapshot":`...)
	dst = append(dst, snapshotMarkers[e.Snapshot]...)
	if e.Resync {
		dst = append(dst, `,"resync":true`...)
	}
	dst = append(dst, `,"db":`...)
	dst = appendJSONString(dst, c.Table.Catalog)
	cb := f.commits.get(c)
	dst = appendSourceTail(dst, cb, e, false)

	// One Iceberg snapshot is one transaction of one table, so the total
	// order and the per-table order coincide.
	order := int64(e.Index) + 1
	dst = append(dst, '}')
	dst = append(dst, cb.transaction...)
	dst = strconv.AppendInt(dst, order, 10)
	dst = append(dst, `,"data_collection_order":`...)
	dst = strconv.AppendInt(dst, order, 10)
	return append(dst, "}}"...), nil
}

// AppendKey appends the event's key JSON to dst: the values of
// c.Table.KeyFields (names as iceberg-go resolves them, "a.b" for a field
// inside a struct), taken from the row image the event carries (Before for a
// delete, After otherwise), or {"_row_id": N} when the table has no key
// fields. On error it returns dst unchanged.
func (f *JSON) AppendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	out, err := f.appendKey(dst, c, e)
	if err != nil {
		return dst, fmt.Errorf("encode key of event %s: %w", eventID(c, e), err)
	}
	return out, nil
}

func (f *JSON) appendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	if len(c.Table.KeyFields) == 0 {
		dst = append(dst, `{"_row_id":`...)
		dst = strconv.AppendInt(dst, e.RowID, 10)
		return append(dst, '}'), nil
	}
	if c.Table.Schema == nil {
		return dst, errNoSchema
	}
	im, err := keyImage(e, c.Table.Schema)
	if err != nil {
		return dst, err
	}
	s := f.schemas.getFor(c.Table.Schema, f.inlineVariants())
	key, err := s.key(c.Table.Schema, c.Table.KeyFields)
	if err != nil {
		return dst, err
	}
	if im.arrow != nil {
		if out, ok := key.appendArrow(dst, &s.row, im.arrow, im.pos); ok {
			return out, nil
		}
		if im, err = im.materialized(); err != nil {
			return dst, err
		}
	}
	return key.append(dst, im.row)
}

// images returns the event's before and after images ready to encode with
// sc; as Rows when rows is set (changed_fields compares an update's).
func images(e *cdc.Event, sc *iceberg.Schema, rows bool) (before, after image, err error) {
	before, after = beforeImage(e), afterImage(e)
	if before.arrow != nil && (rows || before.arrow.Schema != sc) {
		if before, err = before.materialized(); err != nil {
			return before, after, fmt.Errorf("before: %w", err)
		}
	}
	if after.arrow != nil && (rows || after.arrow.Schema != sc) {
		if after, err = after.materialized(); err != nil {
			return before, after, fmt.Errorf("after: %w", err)
		}
	}
	return before, after, nil
}

var errNoSchema = errors.New("no schema")

func validOp(op cdc.Op) bool {
	return op == cdc.OpCreate || op == cdc.OpUpdate || op == cdc.OpDelete || op == cdc.OpSnapshot
}

// snapshotMarkers spells source.snapshot per marker, as Debezium does.
var snapshotMarkers = [...]string{cdc.SnapshotNone: `"false"`, cdc.SnapshotRead: `"true"`, cdc.SnapshotLast: `"last"`}

func validEvent(e *cdc.Event) error {
	if !validOp(e.Op) {
		return fmt.Errorf("unknown op %q", byte(e.Op))
	}
	if int(e.Snapshot) >= len(snapshotMarkers) {
		return fmt.Errorf("unknown snapshot marker %d", e.Snapshot)
	}
	return nil
}

// eventID names an event in errors; only called on the error path.
func eventID(c *cdc.Commit, e *cdc.Event) string {
	return cdc.EventID(c.Table.UUID, c.Snapshot.SequenceNumber, e.RowID, e.Op)
}

// jsonKey is the compiled layout of a key: where each key field sits in a
// row, and its encoder.
type jsonKey struct {
	names []string // the KeyFields it was built for
	parts []jsonKeyPart
}

type jsonKeyPart struct {
	name   string
	prefix string // `{"name":` for the first part, `,"name":` after
	path   []int  // field indexes from the row down through structs
	typ    *jsonType
}

// key returns the key layout for names, building it on first use. A schema
// is almost always asked for the same key fields, so one cached layout per
// schema suffices; another set of names replaces it.
func (s *jsonSchema) key(sc *iceberg.Schema, names []string) (*jsonKey, error) {
	if k := s.keys.Load(); k != nil && slices.Equal(k.names, names) {
		return k, nil
	}
	k := &jsonKey{names: slices.Clone(names), parts: make([]jsonKeyPart, len(names))}
	for i, name := range names {
		field, ok := sc.FindFieldByName(name)
		if !ok {
			return nil, fmt.Errorf("key field %q: not in the schema", name)
		}
		path, typ := s.row.findStructPath(field.ID)
		if path == nil {
			return nil, fmt.Errorf("key field %q: not a top-level or struct field", name)
		}
		var prefix []byte
		if i == 0 {
			prefix = append(prefix, '{')
		} else {
			prefix = append(prefix, ',')
		}
		prefix = appendJSONString(prefix, name)
		prefix = append(prefix, ':')
		k.parts[i] = jsonKeyPart{name: name, prefix: string(prefix), path: path, typ: typ}
	}
	s.keys.Store(k)
	return k, nil
}

// findStructPath finds the field with id through nested structs only:
// Iceberg identifier fields cannot sit inside a list or a map.
func (t *jsonType) findStructPath(id int) ([]int, *jsonType) {
	for i := range t.fields {
		f := &t.fields[i]
		if f.id == id {
			return []int{i}, f.typ
		}
		if f.typ.kind == kindStruct {
			if sub, typ := f.typ.findStructPath(id); sub != nil {
				return append([]int{i}, sub...), typ
			}
		}
	}
	return nil, nil
}

// append appends the key object of row. A key field under a null struct is
// null.
func (k *jsonKey) append(dst []byte, row values.Row) ([]byte, error) {
	for i := range k.parts {
		p := &k.parts[i]
		dst = append(dst, p.prefix...)
		v, err := p.lookup(row)
		if err != nil {
			return dst, err
		}
		if dst, err = p.typ.appendValue(dst, v); err != nil {
			return dst, err.(*ValueError).within(p.name)
		}
	}
	return append(dst, '}'), nil
}

// lookup follows the part's path into row.
func (p *jsonKeyPart) lookup(row values.Row) (any, error) {
	r := row
	for depth, i := range p.path {
		if i >= len(r) {
			return nil, &ValueError{Field: p.name, Type: "struct", Want: "at least " + strconv.Itoa(i+1) + " values",
				Got: strconv.Itoa(len(r))}
		}
		v := r[i]
		if depth == len(p.path)-1 || v == nil {
			return v, nil
		}
		var ok bool
		if r, ok = v.(values.Row); !ok {
			return nil, &ValueError{Field: p.name, Type: "struct", Want: "values.Row", Got: fmt.Sprintf("%T", v)}
		}
	}
	return nil, nil
}

// appendSourceTail appends the source block's fields from "schema" on,
// shared by both Debezium forms. A paired update replaced a row by value:
// it names the removed row too, or a consumer keyed by _row_id would keep
// it forever. explicitNulls writes the pairing fields as null when there
// is none (the Connect form, whose schema declares them).
func appendSourceTail(dst []byte, cb *commitBytes, e *cdc.Event, explicitNulls bool) []byte {
	dst = append(dst, cb.source...)
	dst = append(dst, `,"row_id":`...)
	dst = strconv.AppendInt(dst, e.RowID, 10)
	dst = append(dst, `,"last_updated_sequence_number":`...)
	dst = strconv.AppendInt(dst, e.LUSN, 10)
	dst = append(dst, `,"event_index":`...)
	dst = strconv.AppendInt(dst, int64(e.Index), 10)
	switch {
	case e.Source != "":
		dst = append(dst, `,"paired":`...)
		dst = appendJSONString(dst, e.Source)
		dst = append(dst, `,"paired_row_id":`...)
		dst = strconv.AppendInt(dst, e.PairedRowID, 10)
	case explicitNulls:
		dst = append(dst, `,"paired":null,"paired_row_id":null`...)
	}
	return dst
}

// commitBytes are the parts of every event's envelope that depend on its
// commit only, encoded once per commit instead of once per event.
type commitBytes struct {
	key commitKey
	// source is the source block's fields from "schema" to "operation".
	source []byte
	// transaction opens the transaction block up to total_order's value:
	// ,"transaction":{"id":"<table_uuid>:<sequence_number>","total_order":
	transaction []byte
}

// commitKey is what commitBytes are built from.
type commitKey struct {
	namespace, name, uuid, operation string
	id, seq                          int64
}

func keyOf(c *cdc.Commit) commitKey {
	return commitKey{c.Table.Namespace, c.Table.Name, c.Table.UUID, c.Snapshot.Operation, c.Snapshot.ID, c.Snapshot.SequenceNumber}
}

// commitCache keeps the commitBytes of the commits an encoder is
// encoding, a few slots chosen by snapshot id and sequence number: the
// tables of a pipeline encode their commits on goroutines of their own at
// the same time, and one slot for all would rebuild the bytes at nearly
// every event. The zero value is empty and ready.
type commitCache struct {
	slots [16]atomic.Pointer[commitBytes]
}

// get returns c's commitBytes, built on first use. A slot's entry is
// compared by value, so a commit encoded again (a retry, a copy of the
// commit) finds its bytes, and another never takes them.
func (cc *commitCache) get(c *cdc.Commit) *commitBytes {
	slot := &cc.slots[uint64(c.Snapshot.ID^c.Snapshot.SequenceNumber)%uint64(len(cc.slots))]
	k := keyOf(c)
	if cb := slot.Load(); cb != nil && cb.key == k {
		return cb
	}
	cb := newCommitBytes(c)
	slot.Store(cb)
	return cb
}

// newCommitBytes builds c's commitBytes.
func newCommitBytes(c *cdc.Commit) *commitBytes {
	var b []byte
	b = append(b, `,"schema":`...)
	b = appendJSONString(b, c.Table.Namespace)
	b = append(b, `,"table":`...)
	b = appendJSONString(b, c.Table.Name)
	b = append(b, `,"table_uuid":`...)
	b = appendJSONString(b, c.Table.UUID)
	b = append(b, `,"snapshot_id":`...)
	b = strconv.AppendInt(b, c.Snapshot.ID, 10)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, c.Snapshot.SequenceNumber, 10)
	b = append(b, `,"operation":`...)
	b = appendJSONString(b, c.Snapshot.Operation)
	t := []byte(`,"transaction":{"id":`)
	t = appendJSONString(t, c.Table.UUID)
	t = t[:len(t)-1] // reopen the string to add :<sequence_number>
	t = append(t, ':')
	t = strconv.AppendInt(t, c.Snapshot.SequenceNumber, 10)
	t = append(t, `","total_order":`...)
	return &commitBytes{key: keyOf(c), source: b, transaction: t}
}

// VariantHandlingMode is the debezium-json format's variant.handling.mode.
type VariantHandlingMode string

const (
	// VariantString (the default) writes a variant as a JSON string
	// holding its JSON text, as Debezium writes io.debezium.data.Json
	// values: the same in both formats.
	VariantString VariantHandlingMode = "string"
	// VariantJSON writes the JSON document itself in the image.
	VariantJSON VariantHandlingMode = "json"
)

// Validate checks the mode; the error names the setting.
func (m VariantHandlingMode) Validate() error {
	switch m {
	case "", VariantString, VariantJSON:
		return nil
	}
	return fmt.Errorf("variant.handling.mode %q: want %s or %s", string(m), VariantString, VariantJSON)
}

func (f *JSON) inlineVariants() bool { return f.VariantHandling == VariantJSON }
