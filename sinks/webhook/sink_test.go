package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

func TestSignedRequestsVerify(t *testing.T) {
	rc := newReceiver(t, nil)
	s := rc.sink(t, nil)
	b := testBatch(0, 3, nil)
	if err := s.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	_, acc := rc.snapshot()
	if len(acc) != 1 {
		t.Fatalf("%d requests, want 1", len(acc))
	}
	a := acc[0]
	if a.verifyErr != nil {
		t.Fatalf("verify: %v", a.verifyErr)
	}
	if got, want := a.header.Get(HeaderID), b.Messages[0].ID+".."+b.Messages[2].ID; got != want {
		t.Errorf("webhook-id = %q, want %q", got, want)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	// The body is the JSON array of the values, each with its event id
	// as its last member.
	var elems []json.RawMessage
	if err := json.Unmarshal(a.body, &elems); err != nil || len(elems) != 3 {
		t.Fatalf("body %s: %d elements, %v", a.body, len(elems), err)
	}
	for i, e := range elems {
		id, v, err := sinktest.SplitEventID(e)
		if err != nil || id != cdc.EventID("t-uuid", 7, int64(i), cdc.OpCreate) || string(v) != string(b.Messages[i].Value) {
			t.Errorf("element %d: %s, want %s with __event_id %s (%v)", i, e, b.Messages[i].Value, b.Messages[i].ID, err)
		}
	}
	tampered := bytes.Replace(a.body, []byte(`"n":1`), []byte(`"n":9`), 1)
	if err := Verify(testSecret, a.header, tampered); !errors.Is(err, ErrVerification) {
		t.Errorf("tampered body: Verify = %v, want ErrVerification", err)
	}
	if err := Verify("whsec_b3RoZXIga2V5", a.header, a.body); !errors.Is(err, ErrVerification) {
		t.Errorf("other secret: Verify = %v, want ErrVerification", err)
	}

	// A single event's webhook-id is its event id.
	if err := s.Write(t.Context(), testBatch(3, 1, nil)); err != nil {
		t.Fatal(err)
	}
	_, acc = rc.snapshot()
	if got, want := acc[1].header.Get(HeaderID), testBatch(3, 1, nil).Messages[0].ID; got != want {
		t.Errorf("single webhook-id = %q, want %q", got, want)
	}
}

func TestBatchSplitByCount(t *testing.T) {
	rc := newReceiver(t, nil)
	s := rc.sink(t, func(c *Config) { c.Batch.MaxEvents = 3 })
	b := testBatch(0, 10, nil)
	if err := s.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	_, acc := rc.snapshot()
	var sizes []int
	for i, a := range acc {
		sizes = append(sizes, len(a.events))
		first, last := a.events[0].ID, a.events[len(a.events)-1].ID
		want := first
		if first != last {
			want += ".." + last
		}
		if got := a.header.Get(HeaderID); got != want {
			t.Errorf("request %d: webhook-id %q, want %q", i, got, want)
		}
	}
	if !slices.Equal(sizes, []int{3, 3, 3, 1}) {
		t.Errorf("request sizes %v, want [3 3 3 1]", sizes)
	}
	if got := rc.events(); !slices.Equal(got, batchIDs(b)) {
		t.Errorf("order: got %v\nwant %v", got, batchIDs(b))
	}
}

func TestBatchSplitByBytes(t *testing.T) {
	rc := newReceiver(t, nil)
	const maxBytes = 600
	s := rc.sink(t, func(c *Config) { c.Batch.MaxBytes = maxBytes })
	// Sizes vary so that the cut points depend on bytes, not on a count;
	// event 7 alone is larger than the limit and must go alone.
	pad := func(i int) int {
		if i == 7 {
			return 900
		}
		return 50 + 40*(i%4)
	}
	b := testBatch(0, 20, pad)
	if err := s.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	_, acc := rc.snapshot()
	if len(acc) < 4 {
		t.Fatalf("%d requests, want several", len(acc))
	}
	for i, a := range acc {
		if len(a.body) > maxBytes && len(a.events) != 1 {
			t.Errorf("request %d: %d bytes with %d events", i, len(a.body), len(a.events))
		}
		if len(a.events) == 1 && a.events[0].N == 7 {
			continue
		}
		// Each cut is tight: the next event would not have fitted.
		if i+1 < len(acc) {
			next, _ := json.Marshal(acc[i+1].events[0])
			if len(a.body)+1+len(next) <= maxBytes {
				t.Errorf("request %d (%d bytes) could have taken the next event (%d bytes)", i, len(a.body), len(next))
			}
		}
	}
	if got := rc.events(); !slices.Equal(got, batchIDs(b)) {
		t.Errorf("order: got %v\nwant %v", got, batchIDs(b))
	}
}

// TestCloudEventsBinary: in binary content mode every event is one request
// whose body is the event and whose attributes are ce-* headers, percent-
// encoded where the CloudEvents HTTP binding requires it; the request is
// signed like any other.
func TestCloudEventsBinary(t *testing.T) {
	rc := newReceiver(t, nil)
	s := rc.sink(t, func(c *Config) { c.CloudEvents, c.CloudEventsMode = true, CloudEventsBinary })
	b := testBatch(0, 3, nil)
	b.Messages[1].Op = cdc.OpDelete
	b.Messages[2].Key = []byte(`{"name":"a b\"é%"}`)
	if err := s.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	_, acc := rc.snapshot()
	if len(acc) != len(b.Messages) {
		t.Fatalf("%d requests for %d events, want one each", len(acc), len(b.Messages))
	}
	for i, a := range acc {
		m := b.Messages[i]
		if a.verifyErr != nil {
			t.Errorf("request %d: %v", i, a.verifyErr)
		}
		if string(a.body) != string(m.Value) {
			t.Errorf("request %d body %s, want the event %s", i, a.body, m.Value)
		}
		subject, err := url.PathUnescape(a.header.Get("ce-subject"))
		if err != nil {
			t.Errorf("request %d ce-subject %q: %v", i, a.header.Get("ce-subject"), err)
		}
		want := map[string]string{
			"Content-Type":   "application/json",
			"ce-specversion": "1.0",
			"ce-id":          m.ID,
			"ce-source":      "icecdc/shop-cdc/shop.orders",
			"ce-type":        "io.icecdc.change." + m.Op.String(),
			"ce-time":        time.UnixMilli(b.Snapshot.TimestampMs).UTC().Format(time.RFC3339Nano),
		}
		for k, v := range want {
			if got := a.header.Get(k); got != v {
				t.Errorf("request %d %s = %q, want %q", i, k, got, v)
			}
		}
		if subject != string(m.Key) {
			t.Errorf("request %d subject %q, want the key %q", i, subject, m.Key)
		}
		for _, c := range a.header.Get("ce-subject") {
			if c <= ' ' || c >= 0x7f || c == '"' {
				t.Errorf("request %d ce-subject %q holds %q unencoded", i, a.header.Get("ce-subject"), c)
			}
		}
	}
	for mode, want := range map[string]string{"binary": "needs cloudevents: true", "xml": `cloudevents_mode "xml"`} {
		_, err := New(Config{URL: "http://127.0.0.1/", Secret: testSecret, Pipeline: "p", CloudEventsMode: mode})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cloudevents_mode %s without cloudevents: %v, want an error saying %q", mode, err, want)
		}
	}
}

func TestCloudEvents(t *testing.T) {
	rc := newReceiver(t, nil)
	s := rc.sink(t, func(c *Config) { c.CloudEvents = true })
	b := testBatch(0, 2, nil)
	b.Messages[1].Op = cdc.OpDelete
	if err := s.Write(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	_, acc := rc.snapshot()
	if len(acc) != 1 || acc[0].verifyErr != nil {
		t.Fatalf("requests %d, verify %v", len(acc), acc[0].verifyErr)
	}
	if ct := acc[0].header.Get("Content-Type"); ct != "application/cloudevents-batch+json" {
		t.Errorf("content type %q", ct)
	}
	var got []map[string]json.RawMessage
	if err := json.Unmarshal(acc[0].body, &got); err != nil {
		t.Fatal(err)
	}
	for i, ce := range got {
		m := b.Messages[i]
		want := map[string]string{
			"specversion":     `"1.0"`,
			"id":              `"` + m.ID + `"`,
			"source":          `"icecdc/shop-cdc/shop.orders"`,
			"type":            `"io.icecdc.change.` + m.Op.String() + `"`,
			"datacontenttype": `"application/json"`,
			"data":            string(m.Value),
			"time":            `"` + time.UnixMilli(b.Snapshot.TimestampMs).UTC().Format(time.RFC3339Nano) + `"`,
			"subject":         string(must(json.Marshal(string(m.Key)))),
		}
		if len(ce) != len(want) {
			t.Errorf("event %d has %d attributes, want %d", i, len(ce), len(want))
		}
		for k, v := range want {
			if string(ce[k]) != v {
				t.Errorf("event %d %s = %s, want %s", i, k, ce[k], v)
			}
		}
	}
	if _, err := New(Config{URL: "http://127.0.0.1/", Secret: testSecret, CloudEvents: true}); err == nil {
		t.Error("cloudevents without a pipeline name: no error")
	}
}

func TestPermanentStatuses(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 413, 422, 301, 302, 307} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var redirected atomic.Bool
			rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
				if r.URL.Path == "/moved" {
					redirected.Store(true)
					w.WriteHeader(http.StatusNoContent)
					return true
				}
				w.Header().Set("Location", "/moved")
				w.WriteHeader(status)
				w.Write([]byte(strings.Repeat("no. ", 1000)))
				return false
			})
			obs := &countingObserver{}
			s := rc.sink(t, func(c *Config) { c.Observer = obs })
			err := s.Write(t.Context(), testBatch(0, 2, nil))
			if !errors.Is(err, cdc.ErrPermanent) || errors.Is(err, cdc.ErrDisabled) {
				t.Fatalf("Write = %v, want ErrPermanent only", err)
			}
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != status {
				t.Fatalf("Write = %v, want a StatusError %d", err, status)
			}
			if len(se.Body) > maxErrorBody+len("…") || !strings.HasPrefix(se.Body, "no. no.") {
				t.Errorf("error body %d bytes: %.40q", len(se.Body), se.Body)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error shows the URL's query: %v", err)
			}
			if attempts, _ := rc.snapshot(); attempts != 1 || redirected.Load() || len(obs.retries) != 0 {
				t.Errorf("%d attempts, redirect followed %v, %d retries: want one attempt", attempts, redirected.Load(), len(obs.retries))
			}
		})
	}
}

func TestGoneDisables(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
		w.WriteHeader(http.StatusGone)
		return false
	})
	err := rc.sink(t, nil).Write(t.Context(), testBatch(0, 1, nil))
	if !errors.Is(err, cdc.ErrDisabled) || !errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write = %v, want ErrDisabled (and ErrPermanent)", err)
	}
}

// fakeTime replaces the sink's clock and sleep: sleeping advances the clock
// at once and is recorded.
type fakeTime struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func installFakeTime(s *Sink) *fakeTime {
	// Whole seconds, so that an HTTP date computed from it is exact.
	ft := &fakeTime{now: time.Now().Truncate(time.Second)}
	s.now = func() time.Time { ft.mu.Lock(); defer ft.mu.Unlock(); return ft.now }
	s.sleep = func(ctx context.Context, d time.Duration) error {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		ft.sleeps = append(ft.sleeps, d)
		ft.now = ft.now.Add(d)
		return ctx.Err()
	}
	return ft
}

func (ft *fakeTime) time() time.Time {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.now
}

func TestRetryAfterHonoured(t *testing.T) {
	var fake *fakeTime
	answers := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) { w.Header().Set("Retry-After", "1"); w.WriteHeader(429) },
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", fake.time().Add(7*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(503)
		},
		func(w http.ResponseWriter) { w.Header().Set("Retry-After", "3600"); w.WriteHeader(503) }, // capped at Retry.Max
		func(w http.ResponseWriter) { w.Header().Set("Retry-After", "0"); w.WriteHeader(429) },
		func(w http.ResponseWriter) { w.Header().Set("Retry-After", "soon"); w.WriteHeader(408) }, // unreadable: backoff
		func(w http.ResponseWriter) { w.WriteHeader(200) },
	}
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
		answers[n](w)
		return n == len(answers)-1
	})
	obs := &countingObserver{}
	s := rc.sink(t, func(c *Config) {
		c.Retry = RetryConfig{Initial: 100 * time.Millisecond, Max: 20 * time.Second}
		c.Observer = obs
	})
	fake = installFakeTime(s)
	s.jitter = func(c time.Duration) time.Duration { return c } // the ceiling, to see it
	if err := s.Write(t.Context(), testBatch(0, 1, nil)); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Second, 7 * time.Second, 20 * time.Second, 0, 1600 * time.Millisecond}
	if !slices.Equal(fake.sleeps, want) {
		t.Errorf("waits %v, want %v", fake.sleeps, want)
	}
	if !slices.Equal(obs.retries, []int{429, 503, 503, 429, 408}) || obs.delivered != 1 {
		t.Errorf("observer: retries %v delivered %d", obs.retries, obs.delivered)
	}
}

func TestBackoff(t *testing.T) {
	s, err := New(Config{URL: "http://127.0.0.1/", Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	s.jitter = func(c time.Duration) time.Duration { return c }
	var got []time.Duration
	for a := 1; a <= 9; a++ {
		got = append(got, s.backoff(a))
	}
	ms := time.Millisecond
	want := []time.Duration{500 * ms, 1000 * ms, 2000 * ms, 4000 * ms, 8000 * ms, 16000 * ms, 30000 * ms, 30000 * ms, 30000 * ms}
	if !slices.Equal(got, want) {
		t.Errorf("ceilings %v, want %v", got, want)
	}
	if s.backoff(1000) != 30*time.Second {
		t.Errorf("attempt 1000 overflows: %v", s.backoff(1000))
	}
	for range 1000 {
		if d := fullJitter(time.Second); d < 0 || d > time.Second {
			t.Fatalf("jitter %v outside [0, 1s]", d)
		}
	}
}

func TestRetryResendsSameBodyAndID(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
		if n == 0 {
			w.WriteHeader(http.StatusInternalServerError)
		}
		return true // store both attempts, to compare them
	})
	s := rc.sink(t, nil)
	s.sleep = func(ctx context.Context, d time.Duration) error { return nil }
	// Each reading of the clock is 3 s later, so that the retry's
	// timestamp differs from the first attempt's.
	base := time.Now()
	s.now = func() time.Time { base = base.Add(3 * time.Second); return base }
	if err := s.Write(t.Context(), testBatch(0, 3, nil)); err != nil {
		t.Fatal(err)
	}
	_, acc := rc.snapshot()
	if len(acc) != 2 {
		t.Fatalf("%d attempts, want 2", len(acc))
	}
	a, b := acc[0], acc[1]
	if !bytes.Equal(a.body, b.body) || a.header.Get(HeaderID) != b.header.Get(HeaderID) {
		t.Error("the retry changed the body or the webhook-id")
	}
	if a.header.Get(HeaderTimestamp) == b.header.Get(HeaderTimestamp) || a.header.Get(HeaderSignature) == b.header.Get(HeaderSignature) {
		t.Error("the retry kept the timestamp and signature")
	}
	for _, x := range acc {
		if x.verifyErr != nil {
			t.Error(x.verifyErr)
		}
	}
}

func TestMaxElapsedGivesUp(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
		w.WriteHeader(http.StatusBadGateway)
		return false
	})
	s := rc.sink(t, func(c *Config) {
		c.Retry = RetryConfig{Initial: time.Second, Max: 4 * time.Second, MaxElapsed: 20 * time.Second}
	})
	ft := installFakeTime(s)
	s.jitter = func(c time.Duration) time.Duration { return c }
	err := s.Write(t.Context(), testBatch(0, 1, nil))
	var se *StatusError
	if err == nil || errors.Is(err, cdc.ErrPermanent) || !errors.As(err, &se) || se.StatusCode != 502 {
		t.Fatalf("Write = %v, want a retryable error carrying the 502", err)
	}
	// Waits 1+2+4+4+4+4 = 19 s; the next 4 s would pass 20 s.
	if want := []time.Duration{1e9, 2e9, 4e9, 4e9, 4e9, 4e9}; !slices.Equal(ft.sleeps, want) {
		t.Errorf("waits %v, want %v", ft.sleeps, want)
	}
}

func TestTimeoutIsRetried(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
		if n == 0 {
			<-r.Context().Done() // hang until the client gives up
			return false
		}
		return true
	})
	obs := &countingObserver{}
	s := rc.sink(t, func(c *Config) {
		c.Timeout = 100 * time.Millisecond
		c.Retry = RetryConfig{Initial: time.Millisecond, Max: time.Millisecond}
		c.Observer = obs
	})
	if err := s.Write(t.Context(), testBatch(0, 2, nil)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(obs.retries, []int{0}) || obs.delivered != 2 {
		t.Errorf("observer: retries %v delivered %d", obs.retries, obs.delivered)
	}
}

func TestContextCancel(t *testing.T) {
	t.Run("while waiting for a response", func(t *testing.T) {
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
			<-r.Context().Done()
			return false
		})
		s := rc.sink(t, nil) // 15 s timeout
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := s.Write(ctx, testBatch(0, 1, nil)); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Write = %v, want ctx.Err()", err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("Write took %v after its context ended", el)
		}
	})
	t.Run("while backing off", func(t *testing.T) {
		rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
			w.WriteHeader(500)
			return false
		})
		s := rc.sink(t, func(c *Config) { c.Retry = RetryConfig{Initial: time.Hour, Max: time.Hour} })
		s.jitter = func(c time.Duration) time.Duration { return c }
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		if err := s.Write(ctx, testBatch(0, 1, nil)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Write = %v, want context.Canceled", err)
		}
	})
}

func TestConcurrentWritesDoNotInterleave(t *testing.T) {
	rc := newReceiver(t, nil)
	s := rc.sink(t, func(c *Config) { c.Batch.MaxEvents = 2 })
	var wg sync.WaitGroup
	var batches []*cdc.Batch
	for g := range 4 {
		b := testBatch(g*100, 9, nil)
		batches = append(batches, b)
		wg.Go(func() {
			if err := s.Write(t.Context(), b); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := rc.events()
	// Each batch's events arrive as one contiguous run.
	for i := 0; i < len(got); i += 9 {
		var run []string
		for _, b := range batches {
			if b.Messages[0].ID == got[i] {
				run = batchIDs(b)
			}
		}
		if !slices.Equal(got[i:i+9], run) {
			t.Fatalf("events %d..%d are not one batch in order: %v", i, i+8, got[i:i+9])
		}
	}
}

func TestCloseAndEmptyBatch(t *testing.T) {
	rc := newReceiver(t, nil)
	s := rc.sink(t, nil)
	if err := s.Write(t.Context(), &cdc.Batch{}); err != nil {
		t.Fatal(err)
	}
	if n, _ := rc.snapshot(); n != 0 {
		t.Errorf("an empty batch made %d requests", n)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Write(t.Context(), testBatch(0, 1, nil)); err == nil {
		t.Fatal("Write after Close: no error")
	}
}

func TestConfigValidation(t *testing.T) {
	for _, c := range []Config{
		{Secret: testSecret},
		{URL: "ftp://host/", Secret: testSecret},
		{URL: "http:///nohost", Secret: testSecret},
		{URL: "http://host/"},
		{URL: "http://host/", Secret: testSecret, Timeout: -1},
		{URL: "http://host/", Secret: testSecret, Retry: RetryConfig{Initial: time.Minute, Max: time.Second}},
		{URL: "http://host/", Secret: testSecret, Batch: BatchConfig{MaxEvents: -1}},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v): no error", c)
		} else if strings.Contains(err.Error(), testSecret[len("whsec_"):]) {
			t.Errorf("error quotes the secret: %v", err)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestErrorBodyHidesEchoedCredentials: a receiver whose error page echoes
// the request — the Basic credentials the URL's userinfo sends, the token
// of its query — shows neither in the sink's error, which the daemon logs
// and serves on /readyz and /status.
func TestErrorBodyHidesEchoedCredentials(t *testing.T) {
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request, body []byte) bool {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "bad request; you sent Authorization: %s to %s", r.Header.Get("Authorization"), r.URL.RequestURI())
		return false
	})
	s := rc.sink(t, func(c *Config) {
		c.URL = strings.Replace(c.URL, "http://", "http://icecdc:pa55word@", 1)
	})
	err := s.Write(t.Context(), testBatch(0, 1, nil))
	var se *StatusError
	if !errors.As(err, &se) || !strings.Contains(se.Body, "you sent Authorization") {
		t.Fatalf("Write = %v, want a StatusError quoting the echo", err)
	}
	basic := base64.StdEncoding.EncodeToString([]byte("icecdc:pa55word"))
	for _, secret := range []string{"pa55word", basic, "s3cret"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows %q: %v", secret, err)
		}
	}
}
