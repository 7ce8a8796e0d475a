// Package unwraptest is the tests' oracle for flattened records: it
// applies the rules of Debezium's ExtractNewRecordState to envelope
// records as a generic JSON transformation, independent of how the
// debezium package builds its flattened values, so that the two can be
// compared record by record. The interop stage checks both against
// Debezium's own SMT.
package unwraptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Header is one record header; a nil Value is null.
type Header struct {
	Key   string
	Value []byte
}

// Record is a Kafka record: a nil Value is a tombstone.
type Record struct {
	Key, Value []byte
	Headers    []Header
}

// Options are the SMT's options the oracle follows.
type Options struct {
	Mode                        string // delete.tombstone.handling.mode; "" is tombstone
	AddFields, AddHeaders       []string
	FieldsPrefix, HeadersPrefix string // "" is "__"
	Connect                     bool   // values are {"schema","payload"} (schemas.enable=true)
}

func (o Options) prefixes() (string, string) {
	f, h := o.FieldsPrefix, o.HeadersPrefix
	if f == "" {
		f = "__"
	}
	if h == "" {
		h = "__"
	}
	return f, h
}

// Apply returns what the SMT makes of one envelope record: nothing, or
// one record (its headers are the record's plus the added ones).
func Apply(o Options, r Record) ([]Record, error) {
	fp, hp := o.prefixes()
	if r.Value == nil {
		if o.Mode != "rewrite-with-tombstone" {
			return nil, nil
		}
		out := Record{Key: r.Key, Headers: append([]Header(nil), r.Headers...)}
		for _, ref := range o.AddHeaders {
			f := parseRef(hp, ref)
			if f.block == "" && f.field == "op" {
				out.Headers = append(out.Headers, Header{f.out, []byte("d")})
			}
		}
		return []Record{out}, nil
	}
	schema, payload, err := split(o.Connect, r.Value)
	if err != nil {
		return nil, err
	}
	out := Record{Key: r.Key, Headers: append([]Header(nil), r.Headers...)}
	for _, ref := range o.AddHeaders {
		f := parseRef(hp, ref)
		v, _, ok := f.lookup(payload, schema)
		if !ok {
			return nil, fmt.Errorf("add.headers %s: not in the envelope", ref)
		}
		out.Headers = append(out.Headers, Header{f.out, headerText(v)})
	}
	op, _ := payload["op"].(string)
	rewrite := o.Mode == "rewrite" || o.Mode == "rewrite-with-tombstone"
	image := "after"
	deleted := "false"
	if op == "d" {
		switch o.Mode {
		case "drop":
			return nil, nil
		case "delete-to-tombstone":
			out.Value = nil
			return []Record{out}, nil
		case "", "tombstone":
			if o.Connect {
				after := copyMap(fieldSchema(schema, "after"))
				delete(after, "field")
				b, err := json.Marshal(map[string]any{"schema": after, "payload": nil})
				out.Value = b
				return []Record{out}, err
			}
			out.Value = []byte("null")
			return []Record{out}, nil
		}
		image, deleted = "before", "true"
	}
	row, _ := payload[image].(map[string]any)
	flat := map[string]any{}
	for k, v := range row {
		flat[k] = v
	}
	var flatSchema map[string]any
	var fields []any
	if o.Connect {
		flatSchema = copyMap(fieldSchema(schema, image))
		delete(flatSchema, "field")
		fields = append(fields, flatSchema["fields"].([]any)...)
	}
	if rewrite {
		flat["__deleted"] = deleted
		fields = append(fields, map[string]any{"type": "string", "optional": true, "field": "__deleted"})
	}
	for _, ref := range o.AddFields {
		f := parseRef(fp, ref)
		v, fs, ok := f.lookup(payload, schema)
		if !ok {
			return nil, fmt.Errorf("add.fields %s: not in the envelope", ref)
		}
		flat[f.out] = v
		if o.Connect {
			s := copyMap(fs)
			delete(s, "default")
			s["optional"] = true
			s["field"] = f.out
			fields = append(fields, s)
		}
	}
	var v any = flat
	if o.Connect {
		if rewrite || len(o.AddFields) > 0 {
			flatSchema["optional"] = false
		}
		flatSchema["fields"] = fields
		v = map[string]any{"schema": flatSchema, "payload": flat}
	}
	b, err := json.Marshal(v)
	out.Value = b
	return []Record{out}, err
}

// ref is one add.fields or add.headers entry, resolved as the SMT's
// FieldReference resolves it.
type ref struct{ block, field, out string }

func parseRef(prefix, s string) ref {
	path, rename, renamed := strings.Cut(s, ":")
	block, field, dotted := strings.Cut(path, ".")
	if !dotted {
		block, field = "", path
		switch field {
		case "id", "total_order", "data_collection_order":
			block = "transaction"
		case "op", "ts_ms", "ts_us", "ts_ns":
		default:
			block = "source"
		}
	}
	r := ref{block: block, field: field, out: prefix + field}
	if dotted {
		r.out = prefix + block + "_" + field
	}
	if renamed {
		r.out = prefix + rename
	}
	return r
}

// lookup finds the field in its block, else at the top level; its value
// (nil when absent from a schemaless payload) and, with a schema, its
// schema.
func (r ref) lookup(payload, schema map[string]any) (any, map[string]any, bool) {
	if schema != nil {
		if r.block != "" {
			if bs := fieldSchema(schema, r.block); bs != nil {
				if fs := fieldSchema(bs, r.field); fs != nil {
					blk, _ := payload[r.block].(map[string]any)
					return blk[r.field], fs, true
				}
			}
		}
		if fs := fieldSchema(schema, r.field); fs != nil {
			return payload[r.field], fs, true
		}
		return nil, nil, false
	}
	// Without a schema an absent field is one the envelope leaves out
	// when it is null (source.resync, source.paired).
	if blk, ok := payload[r.block].(map[string]any); ok && r.block != "" {
		if v, ok := blk[r.field]; ok {
			return v, nil, true
		}
	}
	return payload[r.field], nil, true
}

func split(connect bool, value []byte) (schema, payload map[string]any, err error) {
	d := json.NewDecoder(bytes.NewReader(value))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		return nil, nil, fmt.Errorf("envelope: %w", err)
	}
	if !connect {
		return nil, v, nil
	}
	s, _ := v["schema"].(map[string]any)
	p, _ := v["payload"].(map[string]any)
	if s == nil || p == nil {
		return nil, nil, fmt.Errorf("envelope: no schema or payload")
	}
	return s, p, nil
}

func fieldSchema(s map[string]any, name string) map[string]any {
	fs, _ := s["fields"].([]any)
	for _, f := range fs {
		if m, ok := f.(map[string]any); ok && m["field"] == name {
			return m
		}
	}
	return nil
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// headerText is a value as Connect's SimpleHeaderConverter writes it.
func headerText(v any) []byte {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return []byte(x)
	case json.Number:
		return []byte(x.String())
	case bool:
		if x {
			return []byte("true")
		}
		return []byte("false")
	}
	b, _ := json.Marshal(v)
	return b
}

// Diff describes how got differs from want, or returns "" when they are
// equal: keys and values as JSON documents, headers in order.
func Diff(got, want Record) string {
	if !jsonEqual(got.Key, want.Key) {
		return fmt.Sprintf("key %s, want %s", got.Key, want.Key)
	}
	if (got.Value == nil) != (want.Value == nil) || !jsonEqual(got.Value, want.Value) {
		return fmt.Sprintf("value %s, want %s", show(got.Value), show(want.Value))
	}
	if len(got.Headers) != len(want.Headers) {
		return fmt.Sprintf("headers %s, want %s", headers(got.Headers), headers(want.Headers))
	}
	for i := range got.Headers {
		g, w := got.Headers[i], want.Headers[i]
		if g.Key != w.Key || (g.Value == nil) != (w.Value == nil) || !bytes.Equal(g.Value, w.Value) {
			return fmt.Sprintf("headers %s, want %s", headers(got.Headers), headers(want.Headers))
		}
	}
	return ""
}

func show(b []byte) string {
	if b == nil {
		return "<tombstone>"
	}
	return string(b)
}

func headers(hs []Header) string {
	var parts []string
	for _, h := range hs {
		v := "<null>"
		if h.Value != nil {
			v = string(h.Value)
		}
		parts = append(parts, h.Key+"="+v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

func jsonEqual(a, b []byte) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}
