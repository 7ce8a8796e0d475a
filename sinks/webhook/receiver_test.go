package webhook

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// testValue is the encoded event the tests send: it carries its event id so
// that a receiver can dedupe by event, as a Debezium consumer would by
// source position.
type testValue struct {
	ID  string `json:"id"`
	N   int    `json:"n"`
	Pad string `json:"pad,omitempty"`
}

// testBatch returns n messages numbered from first, each padded by pad(i)
// bytes.
func testBatch(first, n int, pad func(i int) int) *cdc.Batch {
	b := &cdc.Batch{Table: cdc.TableInfo{Namespace: "shop", Name: "orders", UUID: "t-uuid"}}
	for i := first; i < first+n; i++ {
		id := cdc.EventID("t-uuid", 7, int64(i), cdc.OpCreate)
		v := testValue{ID: id, N: i}
		if pad != nil {
			v.Pad = strings.Repeat("x", pad(i))
		}
		raw, _ := json.Marshal(v)
		b.Messages = append(b.Messages, cdc.Message{ID: id, Op: cdc.OpCreate, Key: []byte(fmt.Sprintf(`{"_row_id":%d}`, i)), Value: raw})
	}
	return b
}

// accepted is one request the receiver stored.
type accepted struct {
	header http.Header
	body   []byte
	events []testValue
	// verifyErr is Verify's verdict, taken on arrival while the
	// timestamp is fresh.
	verifyErr error
}

// receiver is a webhook endpoint on loopback that stores what it accepts.
// respond, when set, answers instead of the default 204; it gets the
// request number from 0 and the body, and returns whether the request
// counts as accepted (stored), which may be true even for an answer the
// client never sees.
type receiver struct {
	srv     *httptest.Server
	secret  string
	respond func(n int, w http.ResponseWriter, r *http.Request, body []byte) (store bool)

	mu       sync.Mutex
	attempts int
	accepted []accepted
}

func newReceiver(t testing.TB, respond func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool) *receiver {
	rc := &receiver{secret: testSecret, respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away mid-body
	}
	rc.mu.Lock()
	n := rc.attempts
	rc.attempts++
	rc.mu.Unlock()
	store := true
	if rc.respond != nil {
		store = rc.respond(n, w, r, body)
	} else {
		w.WriteHeader(http.StatusNoContent)
	}
	if !store {
		return
	}
	a := accepted{header: r.Header.Clone(), body: body, verifyErr: Verify(rc.secret, r.Header, body)}
	if r.Header.Get("Content-Type") == contentTypeCloudEvents {
		var ces []struct {
			Data testValue `json:"data"`
		}
		if err := json.Unmarshal(body, &ces); err != nil {
			a.verifyErr = fmt.Errorf("decode cloudevents body: %w", err)
		}
		for _, ce := range ces {
			a.events = append(a.events, ce.Data)
		}
	} else if r.Header.Get("ce-specversion") != "" {
		// A binary-mode CloudEvent: the body is the one event.
		var v testValue
		if err := json.Unmarshal(body, &v); err != nil {
			a.verifyErr = fmt.Errorf("decode binary cloudevent body: %w", err)
		}
		a.events = append(a.events, v)
	} else if err := json.Unmarshal(body, &a.events); err != nil {
		a.verifyErr = fmt.Errorf("decode body: %w", err)
	}
	rc.mu.Lock()
	rc.accepted = append(rc.accepted, a)
	rc.mu.Unlock()
}

func (rc *receiver) snapshot() (attempts int, acc []accepted) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.attempts, append([]accepted(nil), rc.accepted...)
}

// events returns the ids of every accepted event, in arrival order, with
// duplicates.
func (rc *receiver) events() []string {
	_, acc := rc.snapshot()
	var ids []string
	for _, a := range acc {
		for _, e := range a.events {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

func (rc *receiver) sink(t testing.TB, mod func(*Config)) *Sink {
	t.Helper()
	cfg := Config{URL: rc.srv.URL + "/hook?token=s3cret", Secret: rc.secret, Pipeline: "shop-cdc"}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(t.Context()) })
	return s
}

// dedupe keeps the first occurrence of each id.
func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	var out []string
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func batchIDs(bs ...*cdc.Batch) []string {
	var ids []string
	for _, b := range bs {
		for _, m := range b.Messages {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// countingObserver records what the sink reports.
type countingObserver struct {
	mu        sync.Mutex
	retries   []int // statuses
	delivered int
}

func (o *countingObserver) Retry(status int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retries = append(o.retries, status)
}

func (o *countingObserver) Delivered(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.delivered += n
}
