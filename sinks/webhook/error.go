package webhook

import (
	"fmt"
	"net/http"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

// StatusError is a non-2xx answer of the receiver. The sink returns it
// marked cdc.Permanent unless the status is retryable (408, 429, 5xx),
// and cdc.Disabled for 410 Gone: a disabled destination also stops the
// table for a pipeline that only knows ErrPermanent.
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

// marked returns e with the kind that tells the pipeline what to do.
func (e *StatusError) marked() error {
	switch {
	case e.Retryable():
		return e
	case e.StatusCode == http.StatusGone:
		return cdc.Disabled(e)
	default:
		return cdc.Permanent(e)
	}
}

// Retryable reports whether sending the same request again may succeed.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == http.StatusRequestTimeout ||
		e.StatusCode == http.StatusTooManyRequests ||
		(e.StatusCode >= 500 && e.StatusCode < 600)
}
