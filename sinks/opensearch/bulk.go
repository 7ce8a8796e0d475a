package opensearch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/icecdc/icecdc/cdc"
)

// Version bounds. A version is seq<<IndexBits | min(index, MaxIndex): it
// grows with the snapshot's sequence number and, inside a snapshot, with
// the event's index, and stays below 2^63 for sequence numbers up to
// MaxSeq. Events of one snapshot past MaxIndex share its version; since
// external_gte accepts an equal version, the later of them still wins
// when written in order, and only a replay of such an event after a
// newer one of the same key and snapshot could overwrite it.
const (
	IndexBits = 20
	MaxIndex  = 1<<IndexBits - 1
	MaxSeq    = 1<<(63-IndexBits) - 1
)

// Version returns the external version of the event at index of the
// snapshot with sequence number seq.
func Version(seq int64, index int) (int64, error) {
	if seq < 0 || seq > MaxSeq {
		return 0, fmt.Errorf("sequence number %d is past the versions' bound %d", seq, int64(MaxSeq))
	}
	return seq<<IndexBits | int64(min(max(index, 0), MaxIndex)), nil
}

// maxIDBytes is OpenSearch's (and Elasticsearch's) limit on a document
// id's UTF-8 bytes.
const maxIDBytes = 512

// DocID returns the document id of an event key: the key as the
// debezium-json format writes it, a JSON object of the key columns in key
// order ({"_row_id": n} for a table without a key). One column: its
// value as text (a string unquoted, a number or boolean as written, an
// object or list as compact JSON); several: the JSON array of the
// values, compact, in key order.
func DocID(key []byte) (string, error) {
	if id, ok := simpleDocID(key); ok {
		return id, nil
	}
	d := json.NewDecoder(bytes.NewReader(key))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return "", fmt.Errorf("key %.80q is not a JSON object", key)
	}
	var vals []json.RawMessage
	for d.More() {
		if _, err := d.Token(); err != nil { // the column name
			return "", fmt.Errorf("key %.80q: %w", key, err)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return "", fmt.Errorf("key %.80q: %w", key, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, v); err != nil {
			return "", fmt.Errorf("key %.80q: %w", key, err)
		}
		vals = append(vals, c.Bytes())
	}
	var id string
	switch len(vals) {
	case 0:
		return "", errors.New("key has no column")
	case 1:
		v := vals[0]
		if string(v) == "null" {
			return "", fmt.Errorf("key %.80q is null", key)
		}
		if v[0] == '"' {
			if err := json.Unmarshal(v, &id); err != nil {
				return "", fmt.Errorf("key %.80q: %w", key, err)
			}
		} else {
			id = string(v)
		}
	default:
		b, _ := json.Marshal(vals) // RawMessages already valid
		id = string(b)
	}
	if id == "" {
		return "", errors.New("key is empty: OpenSearch has no empty document id")
	}
	if len(id) > maxIDBytes {
		return "", fmt.Errorf("document id of %d bytes is longer than OpenSearch's %d", len(id), maxIDBytes)
	}
	return id, nil
}

// item is one bulk item of a batch: its action line and, for an index
// item, its document line, both newline-terminated.
type item struct {
	msg    int // the message's position in the batch
	index  string
	id     string
	delete bool
	body   []byte
}

// newItem builds the bulk item of m.
func newItem(pos int, m *cdc.Message, index string, seq int64) (item, error) {
	id, err := DocID(m.Key)
	if err != nil {
		return item{}, err
	}
	v, err := Version(seq, m.Index)
	if err != nil {
		return item{}, err
	}
	it := item{msg: pos, index: index, id: id, delete: m.Op == cdc.OpDelete}
	action := "index"
	if it.delete {
		action = "delete"
	} else if len(m.Value) == 0 || m.Value[0] != '{' {
		return item{}, fmt.Errorf("document %s: the value is not a JSON object (%s has the flattened row as its document)", id, "sink opensearch")
	}
	b := make([]byte, 0, 96+len(id)+len(index)+len(m.Value))
	b = append(b, `{"`...)
	b = append(b, action...)
	b = append(b, `":{"_index":`...)
	b = appendJSONString(b, index)
	b = append(b, `,"_id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"version":`...)
	b = strconv.AppendInt(b, v, 10)
	b = append(b, `,"version_type":"external_gte"}}`+"\n"...)
	if !it.delete {
		if bytes.ContainsAny(m.Value, "\r\n") {
			var c bytes.Buffer
			if err := json.Compact(&c, m.Value); err != nil {
				return item{}, fmt.Errorf("document %s: %w", id, err)
			}
			start := len(b)
			b = cdc.Encoding{}.AddEventID(append(b, c.Bytes()...), start, m.ID)
		} else {
			// The document names the event that wrote it last.
			b = cdc.Encoding{}.AppendValueWithID(b, m)
		}
		b = append(b, '\n')
	}
	it.body = b
	return it, nil
}

// simpleDocID is DocID for the common key, one column holding a number
// or a string without escapes: {"id":42}, {"sku":"A-1"}.
func simpleDocID(key []byte) (string, bool) {
	if len(key) < 6 || key[0] != '{' || key[1] != '"' || key[len(key)-1] != '}' {
		return "", false
	}
	i := bytes.Index(key[2:], []byte(`":`))
	if i < 0 || bytes.ContainsAny(key[2:2+i], `"\`) {
		return "", false
	}
	v := key[2+i+2 : len(key)-1]
	switch {
	case len(v) == 0 || len(v) > maxIDBytes:
		return "", false
	case v[0] == '"':
		if len(v) < 3 || v[len(v)-1] != '"' || bytes.ContainsAny(v[1:len(v)-1], `"\`) {
			return "", false
		}
		return string(v[1 : len(v)-1]), true
	}
	for _, c := range v {
		if (c < '0' || c > '9') && c != '-' {
			return "", false
		}
	}
	return string(v), true
}

// appendJSONString appends s quoted as a JSON string.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, _ := json.Marshal(s) // a string always marshals
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
