package webhook

import (
	"fmt"
	"net/http"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

// StatusError is a non-2xx answer of the receiver. It wraps
// cdc.ErrPermanent unless the status is retryable (408, 429, 5xx), and
// cdc.ErrDisabled as well for 410 Gone: a disabled destination also stops
// the table for a pipeline that only knows ErrPermanent.
type StatusError struct {
	Endpoint   string // the URL without user info, query or fragment
	ID         string // the request's webhook-id
	StatusCode int
	Body       string // the start of the response body
	Location   string // for a 3xx, where the receiver redirected to

	retryAfter time.Duration // from Retry-After; -1 when absent
}

// Error describes the answer, quoting the start of the body.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("webhook post %s %s: status %d %s", e.Endpoint, e.ID, e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode >= 300 && e.StatusCode < 400 {
		msg += fmt.Sprintf(" (redirects are not followed; configure the final URL %q)", e.Location)
	}
	if e.Body != "" {
		msg += fmt.Sprintf(": %q", e.Body)
	}
	return msg
}

// Unwrap returns the sentinels that tell the pipeline what to do.
func (e *StatusError) Unwrap() []error {
	switch {
	case e.Retryable():
		return nil
	case e.StatusCode == http.StatusGone:
		return []error{cdc.ErrDisabled, cdc.ErrPermanent}
	default:
		return []error{cdc.ErrPermanent}
	}
}

// Retryable reports whether sending the same request again may succeed.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == http.StatusRequestTimeout ||
		e.StatusCode == http.StatusTooManyRequests ||
		(e.StatusCode >= 500 && e.StatusCode < 600)
}
