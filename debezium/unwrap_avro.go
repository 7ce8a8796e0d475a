package debezium

import (
	"bytes"
	"fmt"

	"github.com/icecdc/icecdc/cdc"
)

// debezium-avro's flattened form is what AvroConverter writes of the
// record ExtractNewRecordState leaves: the Connect format's flattened
// record (unwrap_connect.go) transcoded, its value schema (the table's
// <prefix>.<namespace>.<table>.Value, with __deleted and the added
// fields) derived from the Connect one and registered under the topic's
// value subject. Only the flattened, routed and heartbeat records go
// through the transcoder; the envelope keeps its direct writer
// (avro_encode.go), which the event path's speed needs.

func (f *Avro) envelope() *Envelope { return f.conn.envelope() }
func (f *Avro) connect() bool       { return true }

func (f *Avro) appendFlat(dst []byte, c *cdc.Commit, e *cdc.Event, fl *flatRecord) ([]byte, error) {
	if err := f.transactionSchemas(); err != nil {
		return dst, fmt.Errorf("encode event %s: %w", eventID(c, e), err)
	}
	return f.appendConnect(dst, c, 'v', func(dst []byte) ([]byte, error) { return f.conn.appendFlat(dst, c, e, fl) },
		func() string { return "encode event " + eventID(c, e) })
}

// appendFlatNull appends nothing: AvroConverter writes a null value as a
// null record, a tombstone, whatever its schema.
func (f *Avro) appendFlatNull(dst []byte, _ *cdc.Commit, _ *cdc.Event) ([]byte, error) {
	return dst, nil
}

// appendConnect appends the wire form of the Connect record of c's table
// that connect appends; role is 'k' or 'v'. A null value (none, or a
// null payload) is a null record, as AvroConverter writes it.
func (f *Avro) appendConnect(dst []byte, c *cdc.Commit, role byte, connect func([]byte) ([]byte, error), what func() string) ([]byte, error) {
	bp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(bp)
	msg, err := connect((*bp)[:0])
	*bp = msg[:0]
	if err != nil {
		return dst, err
	}
	if role == 'v' {
		if _, payload, ok := splitConnect(msg); len(msg) == 0 || ok && bytes.Equal(payload, []byte("null")) {
			return dst, nil
		}
	}
	name := tableWhat(&c.Table)
	if role == 'k' {
		name = "key of " + name
	}
	out, err := f.transcode(dst, msg, role, role == 'k', f.tableTopic(&c.Table), name)
	if err != nil {
		return dst, fmt.Errorf("%s: %w", what(), err)
	}
	return out, nil
}

// avroBeneath returns the debezium-avro format enc writes with (enc
// itself, or the one an Unwrap flattens) and the encoder of the same
// records in Connect JSON, which a router edits before they are
// transcoded.
func avroBeneath(enc cdc.Encoder) (*Avro, cdc.Encoder, bool) {
	switch x := enc.(type) {
	case *Avro:
		return x, x.conn, true
	case *Unwrap:
		if a, ok := x.inner.(*Avro); ok {
			return a, x.connectTwin(a), true
		}
	}
	return nil, nil, false
}

// connectTwin returns u over a's Connect format: the same options and
// layout (the flattened schemas the Connect format caches are u's), made
// once.
func (u *Unwrap) connectTwin(a *Avro) *Unwrap {
	u.twinOnce.Do(func() {
		u.twin = &Unwrap{inner: a.conn, opts: u.opts, fields: u.fields, headers: u.headers, layout: u}
	})
	return u.twin
}
