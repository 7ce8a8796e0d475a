package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestContract runs the sink contract suite with a receiver that stores
// what it accepts, in both body forms, with limits that make the suite's
// batches span several requests.
func TestContract(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cloudEvents bool
		batch       BatchConfig
	}{
		{"JSON/SplitByCountAndBytes", false, BatchConfig{MaxEvents: 64, MaxBytes: 16 << 10}},
		{"CloudEvents/Defaults", true, BatchConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
				rc := &contractReceiver{}
				srv := httptest.NewServer(rc)
				t.Cleanup(srv.Close)
				s, err := New(Config{
					URL: srv.URL, Secret: testSecret, Pipeline: "sinktest",
					CloudEvents: tc.cloudEvents, Batch: tc.batch,
					Retry: RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond},
				})
				if err != nil {
					t.Fatal(err)
				}
				return s, rc
			})
		})
	}
}

// contractReceiver is a webhook endpoint for the suite: it verifies and
// stores each accepted request's events, and fails on demand.
type contractReceiver struct {
	mu        sync.Mutex
	got       []sinktest.Received
	problems  []error
	permanent bool
	transient int
	lost      bool // the next transient failure stores the body first
}

func (rc *contractReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	store, status := true, http.StatusOK
	switch {
	case rc.permanent:
		store, status = false, http.StatusBadRequest
	case rc.transient > 0:
		rc.transient--
		// The first failure loses the answer after storing, as a
		// receiver that timed out after committing would: the resend
		// must then only repeat, never reorder.
		store, status = rc.lost, http.StatusServiceUnavailable
		rc.lost = false
	}
	if store {
		if err := rc.store(r.Header, body); err != nil {
			rc.problems = append(rc.problems, err)
		}
	}
	w.WriteHeader(status)
}

func (rc *contractReceiver) store(h http.Header, body []byte) error {
	if err := Verify(testSecret, h, body); err != nil {
		return err
	}
	var recv []sinktest.Received
	switch ct := h.Get("Content-Type"); ct {
	case contentTypeCloudEvents:
		var ces []struct {
			ID   string          `json:"id"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(body, &ces); err != nil {
			return err
		}
		for _, ce := range ces {
			op, ok := strings.CutPrefix(ce.Type, "io.icecdc.change.")
			if !ok || len(op) != 1 {
				return fmt.Errorf("cloudevent %s: type %q", ce.ID, ce.Type)
			}
			recv = append(recv, sinktest.Received{ID: ce.ID, Op: cdc.Op(op[0]), Value: ce.Data})
		}
	case contentTypeJSON:
		var values []json.RawMessage
		if err := json.Unmarshal(body, &values); err != nil {
			return err
		}
		for _, v := range values {
			// Each element carries its event id, the id of the event
			// its envelope describes.
			r, err := sinktest.ReadEnvelopeLine(v)
			if err != nil {
				return err
			}
			recv = append(recv, r)
		}
	default:
		return fmt.Errorf("content type %q", ct)
	}
	if len(recv) == 0 {
		return errors.New("a request without events")
	}
	want := recv[0].ID
	if len(recv) > 1 {
		want += ".." + recv[len(recv)-1].ID
	}
	if got := h.Get(HeaderID); got != want {
		return fmt.Errorf("webhook-id %q, want %q", got, want)
	}
	rc.got = append(rc.got, recv...)
	return nil
}

func (rc *contractReceiver) ReadAll(context.Context) ([]sinktest.Received, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := errors.Join(rc.problems...); err != nil {
		return nil, err
	}
	return append([]sinktest.Received(nil), rc.got...), nil
}

// TotalOrder is true: one receiver sees every request in sending order.
func (rc *contractReceiver) TotalOrder() bool { return true }

func (rc *contractReceiver) FailPermanently() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.permanent = true
}

func (rc *contractReceiver) FailTransiently(n int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.transient, rc.lost = n, n > 0
}
