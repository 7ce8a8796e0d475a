package debezium

import (
	"fmt"
	"sync"

	"github.com/icecdc/icecdc/cdc"
)

// Unwrap writes a format's events flattened, as Debezium's
// ExtractNewRecordState SMT turns the envelope into the row's new state:
// the value is the after image (the before image of a rewritten delete),
// with __deleted in the rewrite modes and the add.fields after it; what a
// delete becomes follows UnwrapOptions.DeleteHandling. Keys are the
// format's own. Schema-change and transaction records pass through as
// the SMT passes records that are not envelopes.
//
// Unwrap decides which record an event becomes; the format writes it
// (flatFormat), so that every format with a flattened form shares the
// rules.
type Unwrap struct {
	inner   flatFormat
	opts    UnwrapOptions
	fields  []envRef
	headers []envRef
	// layout is the Unwrap whose flattened schemas the records share:
	// nil for u itself (a Connect twin of debezium-avro's has its
	// format's).
	layout *Unwrap

	twinOnce sync.Once
	twin     *Unwrap
}

var (
	_ cdc.Encoder             = (*Unwrap)(nil)
	_ cdc.RecordShaper        = (*Unwrap)(nil)
	_ cdc.SchemaChangeEncoder = (*Unwrap)(nil)
	_ cdc.TransactionEncoder  = (*Unwrap)(nil)
)

// flatFormat is a format that can write a flattened value.
type flatFormat interface {
	cdc.Encoder
	cdc.SchemaChangeEncoder
	cdc.TransactionEncoder
	HeartbeatEncoder
	envelope() *Envelope
	connect() bool
	// appendFlat appends the value of fl's record of e.
	appendFlat(dst []byte, c *cdc.Commit, e *cdc.Event, fl *flatRecord) ([]byte, error)
	// appendFlatNull appends the value of a delete in tombstone mode: a
	// null with the row's schema.
	appendFlatNull(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error)
}

// flatRecord is what a flattened value holds besides the row image.
type flatRecord struct {
	before  bool   // the before image (a rewritten delete), else the after image
	deleted string // "", "true" or "false"
	fields  []envRef
	values  []envValue // of fields
	// layout tells flattened schemas apart (Connect caches them): the
	// same for every record of one Unwrap.
	layout *Unwrap
}

// NewUnwrap returns enc's events flattened per opts, or an error naming
// the option that does not fit the format.
func NewUnwrap(enc cdc.Encoder, opts UnwrapOptions) (*Unwrap, error) {
	inner, ok := enc.(flatFormat)
	if !ok {
		return nil, fmt.Errorf("format %T has no flattened form", enc)
	}
	if opts.DeleteHandling == "" {
		opts.DeleteHandling = DeleteTombstone
	}
	u := &Unwrap{inner: inner, opts: opts}
	var err error
	if u.fields, err = resolveRefs(opts.AddFieldsPrefix, opts.AddFields, inner.connect()); err != nil {
		return nil, fmt.Errorf("%s: %w", optAddFields, err)
	}
	if u.headers, err = resolveRefs(opts.AddHeadersPrefix, opts.AddHeaders, inner.connect()); err != nil {
		return nil, fmt.Errorf("%s: %w", optAddHeaders, err)
	}
	seen := map[string]bool{}
	for _, f := range u.fields {
		if seen[f.out] {
			return nil, fmt.Errorf("%s: field %q is added twice", optAddFields, f.out)
		}
		seen[f.out] = true
	}
	if opts.DeleteHandling.rewrite() && seen[deletedField] {
		return nil, fmt.Errorf("%s: field %q is the rewrite modes' own", optAddFields, deletedField)
	}
	return u, nil
}

// deletedField is the field the rewrite modes add.
const deletedField = "__deleted"

// Options returns the options u was made with.
func (u *Unwrap) Options() UnwrapOptions { return u.opts }

// AppendKey appends the format's key: the SMT leaves keys alone.
func (u *Unwrap) AppendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	return u.inner.AppendKey(dst, c, e)
}

// Keep reports whether e has a record: in drop mode a delete has none.
func (u *Unwrap) Keep(_ *cdc.Commit, e *cdc.Event) bool {
	return e.Op != cdc.OpDelete || u.opts.DeleteHandling != DeleteDrop
}

// AppendValue appends e's flattened value; nothing (a tombstone) for a
// delete in delete-to-tombstone mode. It must not be called for an event
// Keep leaves out.
func (u *Unwrap) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	if e.Op == cdc.OpDelete {
		switch u.opts.DeleteHandling {
		case DeleteToTombstone:
			return dst, nil
		case DeleteTombstone:
			return u.inner.appendFlatNull(dst, c, e)
		case DeleteDrop:
			return dst, fmt.Errorf("encode event %s: a dropped delete has no value", eventID(c, e))
		}
	}
	fl := flatRecord{before: e.Op == cdc.OpDelete, fields: u.fields, layout: u}
	if u.layout != nil {
		fl.layout = u.layout
	}
	if u.opts.DeleteHandling.rewrite() {
		fl.deleted = "false"
		if e.Op == cdc.OpDelete {
			fl.deleted = "true"
		}
	}
	if len(u.fields) > 0 {
		fl.values = make([]envValue, len(u.fields))
		env := u.inner.envelope()
		for i, f := range u.fields {
			fl.values[i] = f.f.value(env, c, e, tsMs)
		}
	}
	return u.inner.appendFlat(dst, c, e, &fl)
}

// AppendHeaders appends the add.headers of e's record, after the sink's
// own headers, as the SMT adds them to the record's.
func (u *Unwrap) AppendHeaders(dst []cdc.Header, c *cdc.Commit, e *cdc.Event, tsMs int64) []cdc.Header {
	env := u.inner.envelope()
	for _, h := range u.headers {
		dst = append(dst, cdc.Header{Key: h.out, Value: h.f.value(env, c, e, tsMs).text()})
	}
	return dst
}

// TombstoneHeaders returns the headers of the tombstone that follows a
// delete (rewrite-with-tombstone): the SMT gives a tombstone only the op
// header, "d", when add.headers names op.
func (u *Unwrap) TombstoneHeaders() []cdc.Header {
	var out []cdc.Header
	for _, h := range u.headers {
		if h.f.block == "" && h.f.name == "op" {
			out = append(out, cdc.Header{Key: h.out, Value: []byte{byte(cdc.OpDelete)}})
		}
	}
	return out
}

// HasHeaders reports whether records carry add.headers.
func (u *Unwrap) HasHeaders() bool { return len(u.headers) > 0 }

// EncodeSchemaChange passes the format's schema-change record through.
func (u *Unwrap) EncodeSchemaChange(c *cdc.Commit, s *cdc.SchemaChange, tsMs int64) (key, value []byte, err error) {
	return u.inner.EncodeSchemaChange(c, s, tsMs)
}

// AppendTransactionKey passes the format's transaction key through.
func (u *Unwrap) AppendTransactionKey(dst []byte, m *cdc.TransactionMarker) []byte {
	return u.inner.AppendTransactionKey(dst, m)
}

// AppendTransactionValue passes the format's transaction value through.
func (u *Unwrap) AppendTransactionValue(dst []byte, m *cdc.TransactionMarker) []byte {
	return u.inner.AppendTransactionValue(dst, m)
}

// flatImage returns the image fl's record holds.
func flatImage(c *cdc.Commit, e *cdc.Event, fl *flatRecord) (image, error) {
	im := afterImage(e)
	if fl.before {
		im = beforeImage(e)
	}
	if im.null() {
		return im, fmt.Errorf("no row image for op %s", e.Op)
	}
	return im.forSchema(c.Table.Schema)
}

// appendFlatTail replaces the closing brace of the object that ends dst
// (at least start) with __deleted and the added fields, in JSON.
func appendFlatTail(dst []byte, start int, fl *flatRecord) []byte {
	dst = dst[:len(dst)-1]
	sep := func() {
		if len(dst) > start+1 {
			dst = append(dst, ',')
		}
	}
	if fl.deleted != "" {
		sep()
		dst = append(dst, `"`+deletedField+`":"`...)
		dst = append(dst, fl.deleted...)
		dst = append(dst, '"')
	}
	for i, f := range fl.fields {
		sep()
		dst = appendJSONString(dst, f.out)
		dst = append(dst, ':')
		dst = fl.values[i].appendJSON(dst)
	}
	return append(dst, '}')
}

// JSON's flattened form.

func (f *JSON) envelope() *Envelope { return &f.Envelope }
func (f *JSON) connect() bool       { return false }

func (f *JSON) appendFlat(dst []byte, c *cdc.Commit, e *cdc.Event, fl *flatRecord) ([]byte, error) {
	out, err := f.appendFlatValue(dst, c, e, fl)
	if err != nil {
		return dst, fmt.Errorf("encode event %s: %w", eventID(c, e), err)
	}
	return out, nil
}

func (f *JSON) appendFlatValue(dst []byte, c *cdc.Commit, e *cdc.Event, fl *flatRecord) ([]byte, error) {
	if err := validEvent(e); err != nil {
		return dst, err
	}
	if c.Table.Schema == nil {
		return dst, errNoSchema
	}
	im, err := flatImage(c, e, fl)
	if err != nil {
		return dst, err
	}
	row := &f.schemas.getFor(c.Table.Schema, f.inlineVariants()).row
	start := len(dst)
	if dst, err = row.appendImage(dst, im); err != nil {
		return dst[:start], err
	}
	return appendFlatTail(dst, start, fl), nil
}

func (f *JSON) appendFlatNull(dst []byte, _ *cdc.Commit, _ *cdc.Event) ([]byte, error) {
	return append(dst, "null"...), nil
}
