package webhook

import (
	"encoding/json"
	"net/url"
	"sync/atomic"
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
	// open counts the readers of body the HTTP transport has not closed
	// yet (see post); nil for a body of its own (binary mode).
	open *atomic.Int32
	// ce holds the ce-* headers of a binary-mode CloudEvent (nil in
	// every other form), values already percent-encoded.
	ce [][2]string
}

// encoder cuts a batch into requests.
type encoder struct {
	maxEvents, maxBytes int
	// ceSource is the quoted CloudEvents source, the same for every event
	// of a batch; nil for plain JSON arrays.
	ceSource []byte
	ceTime   []byte // the quoted commit time of the batch's snapshot
	// binary: one event per request, attributes in headers; source and
	// time are then the unquoted values.
	binary             bool
	rawSource, rawTime string
	enc                cdc.Encoding
	// largest is the sink's largest body so far, to size the next.
	largest *int
	spare   *spareBody
}

// spareBody is the body of the sink's previous request, for the next
// once the HTTP transport closed every reader of it: the transport may
// still be reading a body after the response came back (a receiver may
// answer before it read all of it), and closes it when it is done.
type spareBody struct {
	buf  []byte
	open *atomic.Int32
}

// take returns the spare buffer emptied when nothing reads it any more and
// it holds n bytes, else a new one of n bytes.
func (sp *spareBody) take(n int) []byte {
	buf, open := sp.buf, sp.open
	*sp = spareBody{}
	if buf != nil && cap(buf) >= n && open != nil && open.Load() == 0 {
		return buf[:0]
	}
	return make([]byte, 0, n)
}

// bodyCap is the capacity a request's body starts with: the largest
// body so far and an eighth more, within maxBytes, 64 KiB at first.
func (e *encoder) bodyCap() int {
	return min(max(*e.largest+*e.largest/8, 64<<10), e.maxBytes)
}

func newEncoder(cfg Config, b *cdc.Batch, largest *int, spare *spareBody) *encoder {
	e := &encoder{maxEvents: cfg.Batch.MaxEvents, maxBytes: cfg.Batch.MaxBytes, enc: cfg.Encoding, largest: largest, spare: spare}
	if cfg.CloudEvents {
		// Path-escaped so that the source stays a valid URI-reference
		// whatever the names hold; ordinary names are unchanged.
		e.ceSource = appendJSONString(nil, "icecdc/"+url.PathEscape(cfg.Pipeline)+"/"+
			url.PathEscape(b.Table.Namespace)+"."+url.PathEscape(b.Table.Name))
		e.ceTime = appendJSONString(nil, time.UnixMilli(b.Snapshot.TimestampMs).UTC().Format(time.RFC3339Nano))
		if cfg.CloudEventsMode == CloudEventsBinary {
			e.binary = true
			e.rawSource = "icecdc/" + url.PathEscape(cfg.Pipeline) + "/" +
				url.PathEscape(b.Table.Namespace) + "." + url.PathEscape(b.Table.Name)
			e.rawTime = time.UnixMilli(b.Snapshot.TimestampMs).UTC().Format(time.RFC3339Nano)
		}
	}
	return e
}

// nextBinary encodes msgs[0] alone as a binary-mode CloudEvent: the
// encoded event is the body, the attributes are ce-* headers.
func (e *encoder) nextBinary(m *cdc.Message) request {
	return request{
		id:   m.ID,
		body: appendValue(nil, m.Value),
		n:    1,
		ce: [][2]string{
			{"ce-specversion", "1.0"},
			{"ce-id", ceHeaderValue(m.ID)},
			{"ce-source", ceHeaderValue(e.rawSource)},
			{"ce-type", "io.icecdc.change." + m.Op.String()},
			{"ce-time", e.rawTime},
			{"ce-subject", ceHeaderValue(string(e.enc.RowKey(m.Key)))},
		},
	}
}

// ceHeaderValue percent-encodes what the CloudEvents HTTP binding says a
// header value must not hold as is: space, '"', '%' and every byte
// outside printable ASCII (UTF-8 bytes one by one). Written here because
// no library in the module encodes this set.
func ceHeaderValue(s string) string {
	const hex = "0123456789ABCDEF"
	var out []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > ' ' && c < 0x7f && c != '"' && c != '%' {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]byte, 0, len(s)+8), s[:i]...)
		}
		out = append(out, '%', hex[c>>4], hex[c&15])
	}
	if out == nil {
		return s
	}
	return string(out)
}

// next encodes the request that starts at msgs[0]: as many messages as fit
// the limits, and always at least one.
func (e *encoder) next(msgs []cdc.Message) request {
	if e.binary {
		return e.nextBinary(&msgs[0])
	}
	// The previous request's buffer when the transport is done with it,
	// else a new one, of the size of the sink's largest body so far: a
	// body is then neither grown (copied) from 64 KiB to its size nor
	// allocated (and zeroed) for every request.
	body := e.spare.take(e.bodyCap())
	body = append(body, '[')
	n := 0
	for n < len(msgs) && n < e.maxEvents {
		// Encoded in place, taken back if over the limit.
		mark := len(body)
		if n > 0 {
			body = append(body, ',')
		}
		body = e.appendElement(body, &msgs[n])
		// +1 for the closing bracket.
		if n > 0 && len(body)+1 > e.maxBytes {
			body = body[:mark]
			break
		}
		n++
	}
	body = append(body, ']')
	*e.largest = max(*e.largest, len(body))
	id := msgs[0].ID
	if n > 1 {
		id += ".." + msgs[n-1].ID
	}
	return request{id: id, body: body, n: n, open: new(atomic.Int32)}
}

func (e *encoder) appendElement(dst []byte, m *cdc.Message) []byte {
	if e.ceSource == nil {
		// A plain array: each event carries its id in itself, as a
		// file's line does (the request's webhook-id names only the run).
		if m.Value == nil {
			return append(dst, "null"...)
		}
		return e.enc.AppendValueWithID(dst, m)
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
	dst = appendJSONString(dst, string(e.enc.RowKey(m.Key)))
	dst = append(dst, `,"datacontenttype":`...)
	dst = appendJSONString(dst, e.enc.Type())
	dst = append(dst, `,"data":`...)
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
