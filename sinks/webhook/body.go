package webhook

import (
	"encoding/json"
	"net/url"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

// Content types of the two body forms.
const (
	contentTypeJSON        = "application/json"
	contentTypeCloudEvents = "application/cloudevents-batch+json"
)

// request is one POST: a run of a batch's messages and its encoded body.
type request struct {
	id   string // webhook-id
	body []byte
	n    int // events in body
}

// encoder cuts a batch into requests.
type encoder struct {
	maxEvents, maxBytes int
	// ceSource is the quoted CloudEvents source, the same for every event
	// of a batch; nil for plain JSON arrays.
	ceSource []byte
	ceTime   []byte // the quoted commit time of the batch's snapshot
}

func newEncoder(cfg Config, b *cdc.Batch) *encoder {
	e := &encoder{maxEvents: cfg.Batch.MaxEvents, maxBytes: cfg.Batch.MaxBytes}
	if cfg.CloudEvents {
		// Path-escaped so that the source stays a valid URI-reference
		// whatever the names hold; ordinary names are unchanged.
		e.ceSource = appendJSONString(nil, "icecdc/"+url.PathEscape(cfg.Pipeline)+"/"+
			url.PathEscape(b.Table.Namespace)+"."+url.PathEscape(b.Table.Name))
		e.ceTime = appendJSONString(nil, time.UnixMilli(b.Snapshot.TimestampMs).UTC().Format(time.RFC3339Nano))
	}
	return e
}

// next encodes the request that starts at msgs[0]: as many messages as fit
// the limits, and always at least one.
func (e *encoder) next(msgs []cdc.Message) request {
	// A fresh buffer per request: the HTTP transport may still be reading
	// a previous body after the response came back.
	body := make([]byte, 0, min(e.maxBytes, 64<<10))
	body = append(body, '[')
	var elem []byte
	n := 0
	for n < len(msgs) && n < e.maxEvents {
		elem = e.appendElement(elem[:0], &msgs[n])
		// +1 for the separator or the closing bracket.
		if n > 0 && len(body)+1+len(elem)+1 > e.maxBytes {
			break
		}
		if n > 0 {
			body = append(body, ',')
		}
		body = append(body, elem...)
		n++
	}
	body = append(body, ']')
	id := msgs[0].ID
	if n > 1 {
		id += ".." + msgs[n-1].ID
	}
	return request{id: id, body: body, n: n}
}

func (e *encoder) appendElement(dst []byte, m *cdc.Message) []byte {
	if e.ceSource == nil {
		return appendValue(dst, m.Value)
	}
	dst = append(dst, `{"specversion":"1.0","id":`...)
	dst = appendJSONString(dst, m.ID)
	dst = append(dst, `,"source":`...)
	dst = append(dst, e.ceSource...)
	dst = append(dst, `,"type":`...)
	dst = appendJSONString(dst, "io.icecdc.change."+m.Op.String())
	dst = append(dst, `,"time":`...)
	dst = append(dst, e.ceTime...)
	dst = append(dst, `,"subject":`...)
	dst = appendJSONString(dst, string(cdc.KeyPayload(m.Key)))
	dst = append(dst, `,"datacontenttype":"application/json","data":`...)
	dst = appendValue(dst, m.Value)
	return append(dst, '}')
}

// appendValue appends an encoded event; a nil value (a Kafka-style
// tombstone) becomes null so that the body stays valid JSON.
func appendValue(dst, v []byte) []byte {
	if v == nil {
		return append(dst, "null"...)
	}
	return append(dst, v...)
}

func appendJSONString(dst []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(dst, q...)
}
