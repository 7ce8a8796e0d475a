package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/icecdc/icecdc/cdc"
	userinfo "github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/retryreport"
)

// deliver sends r until the receiver accepts it, the failure is permanent,
// ctx ends or Retry.MaxElapsed runs out.
func (s *Sink) deliver(ctx context.Context, r request) error {
	start := s.now()
	for attempt := 1; ; attempt++ {
		err := s.post(ctx, r)
		if err == nil {
			s.obs.Delivered(r.n)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if cdc.IsPermanent(err) {
			return err
		}
		status, wait := 0, s.backoff(attempt)
		var se *StatusError
		if errors.As(err, &se) {
			status = se.StatusCode
			if se.retryAfter >= 0 {
				wait = min(se.retryAfter, s.cfg.Retry.Max)
			}
		}
		if limit := s.cfg.Retry.MaxElapsed; limit > 0 && s.now().Add(wait).Sub(start) > limit {
			// err already names the endpoint and the request.
			return fmt.Errorf("%w (gave up after %d attempts in %s)",
				err, attempt, s.now().Sub(start).Round(time.Millisecond))
		}
		s.obs.Retry(status, err)
		retryreport.ReportRetry(ctx, err) // the pipeline logs an ongoing failure
		if err := s.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// countedBody is a reader of a request's body that the HTTP transport
// closes when it is done with it (it does, whatever happened, though
// perhaps after the response came back).
type countedBody struct {
	*bytes.Reader
	open   *atomic.Int32
	closed atomic.Bool
}

// openBody returns a new reader of r's body, counted in r.open.
func openBody(r request) *countedBody {
	r.open.Add(1)
	return &countedBody{Reader: bytes.NewReader(r.body), open: r.open}
}

func (b *countedBody) Close() error {
	if b.closed.CompareAndSwap(false, true) {
		b.open.Add(-1)
	}
	return nil
}

// backoff is the wait before attempt+1: full jitter under an exponentially
// growing ceiling.
func (s *Sink) backoff(attempt int) time.Duration {
	ceiling := s.cfg.Retry.Initial
	for i := 1; i < attempt && ceiling < s.cfg.Retry.Max; i++ {
		ceiling *= 2
	}
	return s.jitter(min(ceiling, s.cfg.Retry.Max))
}

// post makes one attempt. It returns nil on 2xx, a *StatusError for any
// other answer, or a network error.
func (s *Sink) post(ctx context.Context, r request) error {
	actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, s.url, bytes.NewReader(r.body))
	if err != nil {
		return fmt.Errorf("webhook post %s: %w", s.endpoint, err)
	}
	if r.open != nil && len(r.body) > 0 {
		// Counted readers, so that the sink reuses the buffer only once
		// the transport closed every one (an empty body is NoBody, and
		// stays so: the request is then sent without a body).
		req.Body = openBody(r)
		req.GetBody = func() (io.ReadCloser, error) { return openBody(r), nil }
	}
	ct := contentTypeJSON // a JSON array of the events
	switch {
	case r.ce != nil:
		ct = s.cfg.Encoding.Type() // binary mode: the body is the event
	case s.cfg.CloudEvents:
		ct = contentTypeCloudEvents
	}
	// A fresh timestamp and signature on every attempt: a receiver
	// rejects timestamps outside its tolerance, and retries can outlast it.
	ts := s.now().Unix()
	req.Header.Set("Content-Type", ct)
	req.Header.Set("User-Agent", "icecdc")
	req.Header.Set(HeaderID, r.id)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, signature(s.key, r.id, ts, r.body))
	for _, h := range r.ce {
		req.Header.Set(h[0], h[1])
	}

	resp, err := s.client.Do(req)
	if err != nil {
		// url.Error repeats the full URL, which may hold a token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		if ctx.Err() == nil && actx.Err() != nil {
			// Not wrapped: callers test errors.Is(err,
			// context.DeadlineExceeded) for their own context.
			return fmt.Errorf("webhook post %s %s: no response within %s", s.endpoint, r.id, s.cfg.Timeout)
		}
		return fmt.Errorf("webhook post %s %s: %w", s.endpoint, r.id, err)
	}
	defer resp.Body.Close()
	// Read through a limit: a misbehaving receiver must not make us buffer
	// an unbounded body. What is past the limit is dropped with the
	// connection.
	data, _ := io.ReadAll(io.LimitReader(resp.Body, s.cfg.MaxResponseBody))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	return (&StatusError{
		Endpoint:   s.endpoint,
		ID:         r.id,
		StatusCode: resp.StatusCode,
		Body:       errorBody(data),
		Location:   resp.Header.Get("Location"),
		retryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), s.now()),
	}).marked()
}

// maxErrorBody is how much of a response body an error quotes.
const maxErrorBody = 512

// errorBody is the start of an error answer as a StatusError quotes it,
// with what reads as a credential hidden: a receiver that echoes the
// request (the Authorization the URL's userinfo sends, a token in the
// query) would otherwise put it in the log, /readyz and /status. It is
// hidden before the cut, so that a secret is not half-shown at it; the
// window a few times the quote keeps the patterns' work small.
func errorBody(b []byte) string {
	s := userinfo.Credentials(string(b[:min(len(b), 4*maxErrorBody)]))
	if len(s) <= maxErrorBody {
		return s
	}
	return s[:maxErrorBody] + "…"
}

// parseRetryAfter reads delay-seconds or an HTTP date; -1 when absent or
// unreadable, so that the backoff applies.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return -1
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return -1
		}
		// Saturate rather than overflow; Retry.Max caps it anyway.
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return -1
}
