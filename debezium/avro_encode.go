package debezium

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// This file writes an event's key and envelope as Avro binary straight
// from its rows, by the same value rules as encode_connect_value.go (the
// Connect form that the Avro schema is derived from), instead of writing
// the Connect JSON and reading it back (avro_binary.go), which cost four
// times the JSON itself. twmb/avro encodes Go values, which would need a
// map or struct per event; this walks the compiled Iceberg type and the
// Avro converter side by side. Values without a direct path here (maps,
// variants, geometry, uuids, ISO-string times, the double decimal mode,
// wide decimals and nested values of Arrow columns) are written as their
// Connect JSON into a scratch buffer and converted by the transcoder, so
// that both paths agree by construction; the tests compare the two byte
// for byte. Schema-change and transaction records, one per commit at
// most, stay on the transcoder.

// avroEnc carries one encoding's options and scratch buffer. The buffer
// is taken from scratchPool when a value needs it (take) and given back
// by release: the direct writer needs none, and a pool's Get and Put for
// every key and value cost more than a small key's encoding.
type avroEnc struct {
	o       *ConnectOptions
	scratch []byte
	bp      *[]byte // scratch's pool entry, nil before take
}

// take returns the scratch buffer, empty.
func (w *avroEnc) take() []byte {
	if w.bp == nil {
		w.bp = scratchPool.Get().(*[]byte)
		w.scratch = *w.bp
	}
	return w.scratch[:0]
}

// release gives the scratch buffer back to the pool, if taken.
func (w *avroEnc) release() {
	if w.bp != nil {
		*w.bp = w.scratch[:0]
		scratchPool.Put(w.bp)
		w.bp, w.scratch = nil, nil
	}
}

// avroNullError is a null where the Avro schema has no null branch.
func avroNullError() error { return fmt.Errorf("%w: null where the schema wants a value", errAvroJSON) }

// tag appends the union branch of a present value of an optional v.
func (v *avroValue) tag(dst []byte) []byte {
	switch {
	case !v.optional:
		return dst
	case v.nullSecond:
		return append(dst, 0)
	}
	return append(dst, 2)
}

// null appends the null branch of v.
func (v *avroValue) null(dst []byte) ([]byte, error) {
	switch {
	case !v.optional:
		return dst, avroNullError()
	case v.nullSecond:
		return append(dst, 2), nil
	}
	return append(dst, 0), nil
}

// appendAvroString appends s as an Avro string, with each byte that is
// not UTF-8 replaced by U+FFFD, as the JSON form writes it.
func appendAvroString(dst []byte, s string) []byte {
	if utf8.ValidString(s) {
		dst = appendVarint(dst, int64(len(s)))
		return append(dst, s...)
	}
	// Rare: the JSON form's string, read back, is the text with the
	// replacements.
	sc := jsonScan{b: appendJSONString(nil, s)}
	valid, _ := sc.str()
	dst = appendVarint(dst, int64(len(valid)))
	return append(dst, valid...)
}

// long appends n as v's int or long; ok is false for another Avro type
// or an int out of range, which the caller leaves to the transcoder.
func (v *avroValue) long(dst []byte, n int64) (_ []byte, ok bool) {
	switch v.kind {
	case 'l':
	case 'i':
		if n < math.MinInt32 || n > math.MaxInt32 {
			return dst, false
		}
	default:
		return dst, false
	}
	return appendVarint(v.tag(dst), n), true
}

// transcoded appends the value whose Connect JSON is js per v.
func (v *avroValue) transcoded(dst, js []byte) ([]byte, error) {
	sc := jsonScan{b: js}
	n := len(dst)
	out, err := v.appendAvro(dst, &sc)
	if err == nil && sc.i != len(js) {
		err = sc.fail("text after the value")
	}
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

// value appends the non-null val per t and v, as appendConnectValue
// writes it in JSON.
func (w *avroEnc) value(dst []byte, t *jsonType, v *avroValue, val any) ([]byte, error) {
	if out, ok, err := w.direct(dst, t, v, val); ok || err != nil {
		return out, err
	}
	var err error
	if w.scratch, err = appendConnectValue(w.take(), t, val, w.o); err != nil {
		return dst, err
	}
	return v.transcoded(dst, w.scratch)
}

// direct appends the values with a path of their own; ok is false for
// the others.
func (w *avroEnc) direct(dst []byte, t *jsonType, v *avroValue, val any) (_ []byte, ok bool, err error) {
	o := w.o
	switch t.kind {
	case kindBool:
		if b, isBool := val.(bool); isBool && v.kind == 'b' {
			var x byte
			if b {
				x = 1
			}
			return append(v.tag(dst), x), true, nil
		}
	case kindInt:
		if n, isInt := val.(int32); isInt {
			dst, ok = v.long(dst, int64(n))
			return dst, ok, nil
		}
	case kindLong:
		if n, isLong := val.(int64); isLong {
			dst, ok = v.long(dst, n)
			return dst, ok, nil
		}
	case kindFloat:
		if f, isFloat := val.(float32); isFloat && v.kind == 'f' {
			if f != f { // the JSON form's "NaN" reads back as this one
				f = float32(math.NaN())
			}
			return binary.LittleEndian.AppendUint32(v.tag(dst), math.Float32bits(f)), true, nil
		}
	case kindDouble:
		if f, isDouble := val.(float64); isDouble && v.kind == 'd' {
			if f != f {
				f = math.NaN()
			}
			return binary.LittleEndian.AppendUint64(v.tag(dst), math.Float64bits(f)), true, nil
		}
	case kindString:
		if s, isString := val.(string); isString && v.kind == 's' {
			return appendAvroString(v.tag(dst), s), true, nil
		}
	case kindBinary:
		if b, isBytes := val.([]byte); isBytes && v.kind == 'y' {
			dst = appendVarint(v.tag(dst), int64(len(b)))
			return append(dst, b...), true, nil
		}
	case kindDecimal:
		if d, isDecimal := val.(values.Decimal); isDecimal && o.DecimalHandling != DecimalDouble {
			return w.decimal(dst, t, v, d)
		}
	case kindDate:
		if d, isDate := val.(values.Date); isDate && o.TimePrecision != TimeISOString {
			dst, ok = v.long(dst, int64(d))
			return dst, ok, nil
		}
	case kindTime:
		tm, isTime := val.(values.Time)
		if !isTime || tm < 0 || tm >= microsPerDay || o.TimePrecision == TimeISOString {
			break // the JSON form names a bad time
		}
		n := int64(tm)
		if o.TimePrecision == TimeConnect {
			n /= 1000
		}
		dst, ok = v.long(dst, n)
		return dst, ok, nil
	case kindTimestamp, kindTimestampNs:
		if o.TimePrecision != TimeISOString {
			return w.timestamp(dst, t, v, val)
		}
	case kindStruct:
		if r, isRow := val.(values.Row); isRow && v.kind == 'r' {
			dst, err = w.structRow(v.tag(dst), t, v, r)
			return dst, true, err
		}
	case kindList:
		if l, isList := val.([]any); isList && v.kind == 'a' {
			dst, err = w.list(v.tag(dst), t, v, l)
			return dst, true, err
		}
	}
	return dst, false, nil
}

// decimal appends a decimal as its string or its unscaled bytes; ok is
// false when v wants another form.
func (w *avroEnc) decimal(dst []byte, t *jsonType, v *avroValue, d values.Decimal) (_ []byte, ok bool, err error) {
	var scratch [48]byte
	plain, err := t.appendDecimal(scratch[:0], d) // its checks, and the string mode's text
	if err != nil {
		return dst, false, err
	}
	switch {
	case w.o.DecimalHandling == DecimalString && v.kind == 's':
		plain = plain[1 : len(plain)-1]
	case w.o.DecimalHandling != DecimalString && v.kind == 'y':
		plain = unscaledBytes(d.Unscaled)
	default:
		return dst, false, nil
	}
	dst = appendVarint(v.tag(dst), int64(len(plain)))
	return append(dst, plain...), true, nil
}

// timestamp appends a timestamp without zone as a long in the unit of
// time.precision.mode; ok is false for a value of the other precision.
func (w *avroEnc) timestamp(dst []byte, t *jsonType, v *avroValue, val any) (_ []byte, ok bool, err error) {
	var n, per int64
	switch ts := val.(type) {
	case values.Timestamp:
		n, per = int64(ts), 1000
	case values.TimestampNano:
		n, per = int64(ts), 1_000_000
	default:
		return dst, false, nil
	}
	if (t.kind == kindTimestamp) != (per == 1000) {
		return dst, false, nil
	}
	if w.o.TimePrecision == TimeConnect {
		n = floorDiv(n, per)
	}
	dst, ok = v.long(dst, n)
	return dst, ok, nil
}

// within names the step an error of a value happened in, as the JSON
// form's errors do; a transcoder error has no path to add to.
func within(err error, step string) error {
	if ve, ok := err.(*ValueError); ok {
		return ve.within(step)
	}
	return err
}

// field appends a struct field's or list element's val, nil or not.
func (w *avroEnc) field(dst []byte, t *jsonType, v *avroValue, val any) ([]byte, error) {
	if val == nil {
		return v.null(dst)
	}
	return w.value(dst, t, v, val)
}

// structRow appends r as a record, as appendConnectStruct writes it.
func (w *avroEnc) structRow(dst []byte, t *jsonType, v *avroValue, r values.Row) ([]byte, error) {
	if len(r) != len(t.fields) {
		return dst, &ValueError{Type: t.name, Want: strconv.Itoa(len(t.fields)) + " values", Got: strconv.Itoa(len(r))}
	}
	if len(v.fields) != len(t.fields) {
		return dst, fmt.Errorf("%w: %d fields in the Avro record, %d in the row", errAvroJSON, len(v.fields), len(t.fields))
	}
	for i := range t.fields {
		f := &t.fields[i]
		if r[i] == nil && f.required {
			return dst, (&ValueError{Type: f.typ.name, Want: "a value (the field is required)", Got: "null"}).within(f.name)
		}
		var err error
		if dst, err = w.field(dst, f.typ, v.fields[i].v, r[i]); err != nil {
			return dst, within(err, f.name)
		}
	}
	return dst, nil
}

// list appends l as an array, as appendConnectList writes it.
func (w *avroEnc) list(dst []byte, t *jsonType, v *avroValue, l []any) ([]byte, error) {
	start := len(dst)
	for i, x := range l {
		if x == nil && t.elemRequired {
			return dst, (&ValueError{Type: t.elem.name, Want: "a value (elements are required)", Got: "null"}).within("[" + strconv.Itoa(i) + "]")
		}
		var err error
		if dst, err = w.field(dst, t.elem, v.elem, x); err != nil {
			return dst, within(err, "["+strconv.Itoa(i)+"]")
		}
	}
	return prependCount(dst, start, int64(len(l))), nil
}

// arrowField appends the value at row i of col per t and v, as
// appendConnectArrowStruct writes a field: the Connect JSON of the Arrow
// value, transcoded, or the Row value when that gives up.
func (w *avroEnc) arrowField(dst []byte, f *jsonField, v *avroValue, col arrow.Array, typ iceberg.Type, i int) ([]byte, error) {
	if col != nil {
		if out, ok := w.arrowDirect(dst, f, v, col, i); ok {
			return out, nil
		}
		var ok bool
		if w.scratch, ok = appendConnectArrow(w.take(), f.typ, col, i, w.o, f.required); ok {
			return v.transcoded(dst, w.scratch)
		}
	}
	var x any
	if col != nil {
		var err error
		if x, err = values.ArrowValue(col, i, typ); err != nil {
			return dst, fmt.Errorf("column %s: %w", f.name, err)
		}
	}
	if x == nil && f.required {
		return dst, (&ValueError{Type: f.typ.name, Want: "a value (the field is required)", Got: "null"}).within(f.name)
	}
	out, err := w.field(dst, f.typ, v, x)
	return out, within(err, f.name)
}

// directOnly is direct without the transcoder's fallback; ok is false
// where direct gives up or fails (the caller's path then decides).
func (w *avroEnc) directOnly(dst []byte, t *jsonType, v *avroValue, val any) ([]byte, bool) {
	out, ok, err := w.direct(dst, t, v, val)
	if !ok || err != nil {
		return dst, false
	}
	return out, true
}

// arrowDirect appends the common column values as arrowField would, from
// the arrays appendArrowValue reads them from; ok is false for the
// others.
func (w *avroEnc) arrowDirect(dst []byte, f *jsonField, v *avroValue, col arrow.Array, i int) (_ []byte, ok bool) {
	if col.IsNull(i) {
		if f.required {
			return dst, false // the Row path's error
		}
		out, err := v.null(dst)
		return out, err == nil
	}
	o := w.o
	switch t := f.typ; t.kind {
	case kindBool:
		if a, isBool := col.(*array.Boolean); isBool {
			return w.directOnly(dst, t, v, a.Value(i))
		}
	case kindInt, kindLong:
		var n int64
		switch a := col.(type) {
		case *array.Int32:
			n = int64(a.Value(i))
		case *array.Int64:
			n = a.Value(i)
			if t.kind == kindInt {
				n = int64(int32(n))
			}
		default:
			return dst, false
		}
		return v.long(dst, n)
	case kindDouble:
		switch a := col.(type) {
		case *array.Float64:
			return w.directOnly(dst, t, v, a.Value(i))
		case *array.Float32:
			return w.directOnly(dst, t, v, float64(a.Value(i)))
		}
	case kindFloat:
		if a, isFloat := col.(*array.Float32); isFloat {
			return w.directOnly(dst, t, v, a.Value(i))
		}
	case kindString:
		if s, isString := arrowString(col, i); isString && v.kind == 's' {
			return appendAvroString(v.tag(dst), s), true
		}
	case kindBinary:
		if b, isBytes := arrowBytes(col, i); isBytes && v.kind == 'y' {
			dst = appendVarint(v.tag(dst), int64(len(b)))
			return append(dst, b...), true
		}
	case kindDate:
		if o.TimePrecision == TimeISOString {
			break
		}
		switch a := col.(type) {
		case *array.Date32:
			return v.long(dst, int64(a.Value(i)))
		case *array.Int32:
			return v.long(dst, int64(a.Value(i)))
		}
	case kindTimestamp:
		if a, isTS := col.(*array.Timestamp); isTS {
			return w.directOnly(dst, t, v, values.Timestamp(values.ToMicros(int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit)))
		}
	case kindTimestampNs:
		if a, isTS := col.(*array.Timestamp); isTS {
			return w.directOnly(dst, t, v, values.TimestampNano(values.ToNanos(int64(a.Value(i)), a.DataType().(*arrow.TimestampType).Unit)))
		}
	case kindDecimal:
		var scratch [24]byte
		digits, x, isDecimal := t.arrowDecimal(scratch[:0], col, i)
		switch {
		case !isDecimal:
		case o.DecimalHandling == DecimalString && v.kind == 's':
			var text [48]byte
			plain, fits := appendDecimal(text[:0], values.Decimal{Unscaled: string(digits), Scale: t.scale})
			if fits {
				dst = appendVarint(v.tag(dst), int64(len(plain)-2))
				return append(dst, plain[1:len(plain)-1]...), true
			}
		case o.DecimalHandling != DecimalString && o.DecimalHandling != DecimalDouble && v.kind == 'y':
			b := int64Bytes(scratch[:0], x)
			dst = appendVarint(v.tag(dst), int64(len(b)))
			return append(dst, b...), true
		}
	}
	return dst, false
}

// image appends a before or after image as v's optional record.
func (w *avroEnc) image(dst []byte, t *jsonType, v *avroValue, im image) ([]byte, error) {
	switch {
	case im.arrow != nil:
		img, i := im.arrow, im.pos
		if len(img.Cols) != len(t.fields) || len(img.Fields()) != len(t.fields) || len(v.fields) != len(t.fields) {
			r, err := img.Row(i)
			if err != nil {
				return dst, err
			}
			return w.structRow(v.tag(dst), t, v, r)
		}
		dst = v.tag(dst)
		for k := range t.fields {
			var err error
			if dst, err = w.arrowField(dst, &t.fields[k], v.fields[k].v, img.Cols[k], img.Fields()[k].Type, i); err != nil {
				return dst, err
			}
		}
		return dst, nil
	case im.row != nil:
		return w.structRow(v.tag(dst), t, v, im.row)
	}
	return v.null(dst)
}

// avroEnvelopeFields and avroSourceFields are the layout the direct
// writer follows; a schema of another layout is transcoded instead.
var (
	avroEnvelopeFields = []string{"before", "after", "source", "op", "ts_ms", "ts_us", "ts_ns", "transaction"}
	avroSourceFields   = []string{"version", "connector", "name", "ts_ms", "snapshot", "resync", "db", "sequence",
		"ts_us", "ts_ns", "schema", "table", "table_uuid", "snapshot_id", "sequence_number", "operation",
		"row_id", "last_updated_sequence_number", "event_index", "paired", "paired_row_id"}
	avroTransactionFields = []string{"id", "total_order", "data_collection_order"}
)

func avroFieldNames(v *avroValue) []string {
	if v == nil || v.kind != 'r' {
		return nil
	}
	names := make([]string, len(v.fields))
	for i, f := range v.fields {
		names[i] = f.connect
	}
	return names
}

// directEnvelope reports whether the envelope converter v has the layout
// appendEnvelope writes.
func directEnvelope(v *avroValue) bool {
	if !slices.Equal(avroFieldNames(v), avroEnvelopeFields) {
		return false
	}
	src, tx := v.fields[2].v, v.fields[7].v
	return slices.Equal(avroFieldNames(src), avroSourceFields) && slices.Equal(avroFieldNames(tx), avroTransactionFields)
}

// appendEnvelope appends the event's envelope per v (directEnvelope), as
// ConnectJSON.appendValue writes its payload.
func (f *Avro) appendEnvelope(dst []byte, v *avroValue, ct *connectTable, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	if err := validEvent(e); err != nil {
		return dst, err
	}
	before, after, err := images(e, c.Table.Schema, false)
	if err != nil {
		return dst, err
	}
	w := avroEnc{o: &f.conn.opts}
	defer w.release()
	row := &ct.row.row
	if dst, err = w.image(dst, row, v.fields[0].v, before); err != nil {
		return dst, fmt.Errorf("before: %w", err)
	}
	if dst, err = w.image(dst, row, v.fields[1].v, after); err != nil {
		return dst, fmt.Errorf("after: %w", err)
	}
	src := v.fields[2].v
	cb := f.commits.get(c, src, &f.conn.Envelope)
	s := src.fields
	// The fields in avroSourceFields' order; the optional ones carry a
	// union branch.
	dst = append(src.tag(dst), cb.head...) // version … ts_ms
	marker := snapshotMarkers[e.Snapshot]
	dst = appendAvroString(s[4].v.tag(dst), marker[1:len(marker)-1])
	if e.Resync {
		dst = append(s[5].v.tag(dst), 1)
	} else if dst, err = s[5].v.null(dst); err != nil {
		return dst, err
	}
	dst = append(dst, cb.db...)
	var seq [24]byte
	q := strconv.AppendInt(seq[:0], int64(e.Index), 10)
	dst = appendVarint(s[7].v.tag(dst), int64(len(cb.sequence)+len(q)+2))
	dst = append(dst, cb.sequence...) // ["<sequence_number>","
	dst = append(dst, q...)
	dst = append(dst, `"]`...)
	dst = append(dst, cb.table...) // ts_us … operation
	dst = appendVarint(s[16].v.tag(dst), e.RowID)
	dst = appendVarint(s[17].v.tag(dst), e.LUSN)
	dst = appendVarint(s[18].v.tag(dst), int64(e.Index))
	if e.Source != "" {
		dst = appendAvroString(s[19].v.tag(dst), e.Source)
		dst = appendVarint(s[20].v.tag(dst), e.PairedRowID)
	} else {
		if dst, err = s[19].v.null(dst); err == nil {
			dst, err = s[20].v.null(dst)
		}
		if err != nil {
			return dst, err
		}
	}
	dst = append(v.fields[3].v.tag(dst), 2, byte(e.Op)) // a one-byte string
	dst = appendVarint(v.fields[4].v.tag(dst), tsMs)
	dst = appendVarint(v.fields[5].v.tag(dst), tsMs*1000)
	dst = appendVarint(v.fields[6].v.tag(dst), tsMs*1_000_000)
	tx := v.fields[7].v
	order := int64(e.Index) + 1
	dst = append(tx.fields[0].v.tag(tx.tag(dst)), cb.transaction...)
	dst = appendVarint(tx.fields[1].v.tag(dst), order)
	return appendVarint(tx.fields[2].v.tag(dst), order), nil
}

// avroCommit holds the Avro of the envelope parts that depend on the
// commit only, as commitBytes does for the JSON forms.
type avroCommit struct {
	key avroCommitKey
	// head is source's version, connector, name and ts_ms; db its db;
	// sequence the start of source.sequence's text; table source's
	// ts_us to operation; transaction the transaction block's id.
	head, db, sequence, table, transaction []byte
}

type avroCommitKey struct {
	commitKey
	catalog string
	tsMs    int64
	src     *avroValue // the source record's converter, whose unions these follow
}

// avroCommits is commitCache for avroCommit.
type avroCommits struct {
	slots [16]atomic.Pointer[avroCommit]
}

func (cc *avroCommits) get(c *cdc.Commit, src *avroValue, env *Envelope) *avroCommit {
	slot := &cc.slots[uint64(c.Snapshot.ID^c.Snapshot.SequenceNumber)%uint64(len(cc.slots))]
	k := avroCommitKey{keyOf(c), c.Table.Catalog, c.Snapshot.TimestampMs, src}
	if cb := slot.Load(); cb != nil && cb.key == k {
		return cb
	}
	s := src.fields
	ms := c.Snapshot.TimestampMs
	cb := &avroCommit{key: k}
	cb.head = appendAvroString(s[0].v.tag(nil), env.Version)
	cb.head = appendAvroString(s[1].v.tag(cb.head), "icecdc")
	cb.head = appendAvroString(s[2].v.tag(cb.head), env.Pipeline)
	cb.head = appendVarint(s[3].v.tag(cb.head), ms)
	cb.db = appendAvroString(s[6].v.tag(nil), c.Table.Catalog)
	cb.sequence = append(strconv.AppendInt([]byte(`["`), c.Snapshot.SequenceNumber, 10), `","`...)
	t := appendVarint(s[8].v.tag(nil), ms*1000)
	t = appendVarint(s[9].v.tag(t), ms*1_000_000)
	t = appendAvroString(s[10].v.tag(t), c.Table.Namespace)
	t = appendAvroString(s[11].v.tag(t), c.Table.Name)
	t = appendAvroString(s[12].v.tag(t), c.Table.UUID)
	t = appendVarint(s[13].v.tag(t), c.Snapshot.ID)
	t = appendVarint(s[14].v.tag(t), c.Snapshot.SequenceNumber)
	cb.table = appendAvroString(s[15].v.tag(t), c.Snapshot.Operation)
	// The id <table_uuid>:<sequence_number>.
	cb.transaction = appendAvroString(nil, c.Table.UUID+":"+strconv.FormatInt(c.Snapshot.SequenceNumber, 10))
	slot.Store(cb)
	return cb
}

// appendKeyBody appends the event's key per v, as ConnectJSON.appendKey
// writes its payload.
func (f *Avro) appendKeyBody(dst []byte, v *avroValue, ct *connectTable, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	if ct.key == nil {
		if v.kind != 'r' || len(v.fields) != 1 {
			return dst, fmt.Errorf("%w: the key record is not _row_id's", errAvroJSON)
		}
		return appendVarint(v.fields[0].v.tag(v.tag(dst)), e.RowID), nil
	}
	if v.kind != 'r' || len(v.fields) != len(ct.key.parts) {
		return dst, fmt.Errorf("%w: %d fields in the Avro key, %d key fields", errAvroJSON, len(v.fields), len(ct.key.parts))
	}
	im, err := keyImage(e, c.Table.Schema)
	if err != nil {
		return dst, err
	}
	w := avroEnc{o: &f.conn.opts}
	defer w.release()
	start := len(dst)
	dst = v.tag(dst)
	if im.arrow != nil {
		if out, ok := w.arrowKey(dst, v, ct, im); ok {
			return out, nil
		}
		dst = v.tag(dst[:start])
		if im, err = im.materialized(); err != nil {
			return dst[:start], err
		}
	}
	for i := range ct.key.parts {
		p := &ct.key.parts[i]
		x, err := p.lookup(im.row)
		if err != nil {
			return dst, err
		}
		if x == nil {
			// A key field is required in the key schema: a null there
			// (under a null struct) would make Connect refuse the record.
			return dst, &ValueError{Field: p.name, Type: p.typ.name, Want: "a value (key fields are required)", Got: "null"}
		}
		if dst, err = w.value(dst, p.typ, v.fields[i].v, x); err != nil {
			return dst, within(err, p.name)
		}
	}
	return dst, nil
}

// arrowKey appends the key fields of an Arrow image as
// jsonKey.appendConnectArrow writes them, or gives up (ok false) for the
// Row path to decide.
func (w *avroEnc) arrowKey(dst []byte, v *avroValue, ct *connectTable, im image) (_ []byte, ok bool) {
	for i := range ct.key.parts {
		p := &ct.key.parts[i]
		arr, null, found := p.arrowLookup(&ct.row.row, im.arrow, im.pos)
		if !found || null {
			return dst, false
		}
		// The value path's direct writer first: a key field is a
		// required field of the key record.
		f := jsonField{name: p.name, typ: p.typ, required: true}
		if out, direct := w.arrowDirect(dst, &f, v.fields[i].v, arr, im.pos); direct {
			dst = out
			continue
		}
		if w.scratch, ok = appendConnectArrow(w.take(), p.typ, arr, im.pos, w.o, true); !ok {
			return dst, false
		}
		var err error
		if dst, err = v.fields[i].v.transcoded(dst, w.scratch); err != nil {
			return dst, false
		}
	}
	return dst, true
}
