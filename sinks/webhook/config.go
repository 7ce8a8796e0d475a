package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/icecdc/icecdc/cdc"
	userinfo "github.com/icecdc/icecdc/internal/redact"
)

// Defaults applied by New to zero fields of Config.
const (
	DefaultTimeout         = 15 * time.Second
	DefaultMaxEvents       = 500
	DefaultMaxBytes        = 1 << 20
	DefaultRetryInitial    = 500 * time.Millisecond
	DefaultRetryMax        = 30 * time.Second
	DefaultMaxResponseBody = 64 << 10
)

// Config configures a Sink. Zero fields take the defaults above.
type Config struct {
	// URL receives the POSTs (http or https). Only its scheme, host and
	// path appear in errors, since query strings often carry tokens.
	URL string
	// Secret signs every request. Either a Standard Webhooks secret,
	// "whsec_" followed by the base64 of the key bytes, or any other
	// string, whose bytes are the key as they are; either way the key
	// has at least MinKeyBytes (24) bytes. Note that
	// the standard-webhooks libraries' NewWebhook base64-decodes a secret
	// even without the prefix: a receiver given a raw secret must use
	// their raw-key constructor (NewWebhookRaw in Go). Required.
	Secret string
	// Pipeline is the pipeline name, used in the CloudEvents source
	// "icecdc/<pipeline>/<namespace>.<table>". Required with CloudEvents.
	Pipeline string
	// Timeout bounds each request, from sending to reading the response
	// (default 15s). A request that runs out of time is retried.
	Timeout time.Duration
	// Batch bounds each request's body; a larger cdc.Batch becomes
	// several requests.
	Batch BatchConfig
	// Retry paces the re-sending of failed requests.
	Retry RetryConfig
	// CloudEvents sends CloudEvents instead of a plain JSON array of the
	// encoded events: in structured mode (the default) a CloudEvents JSON
	// batch per request; with CloudEventsMode "binary", one event per
	// request, its attributes in ce-* headers and the event as the body
	// (the CloudEvents HTTP binding's binary content mode).
	CloudEvents     bool
	CloudEventsMode string
	// MaxResponseBody is how much of a response body is read (default
	// 64 KiB); the rest is dropped with the connection. The body is only
	// quoted, truncated, in errors.
	MaxResponseBody int64
	// Client sends the requests (default: a client of its own on a clone
	// of http.DefaultTransport). Its Timeout should be zero or larger
	// than Timeout; its redirect policy is replaced, see the package doc.
	Client *http.Client
	// Observer, when set, is told about retries and deliveries.
	Observer Observer
	// Encoding says what the events are: the CloudEvents subject is its
	// row key, datacontenttype (and a binary-mode body's content type)
	// its media type (zero: JSON values, keys as they are).
	Encoding cdc.Encoding
}

// The CloudEvents HTTP content modes (Config.CloudEventsMode).
const (
	CloudEventsStructured = "structured"
	CloudEventsBinary     = "binary"
)

// BatchConfig bounds one request. A single event larger than MaxBytes is
// still sent, alone: splitting cannot make it smaller, and whether it is
// too large is for the receiver to say (413 is a permanent error).
type BatchConfig struct {
	// MaxEvents is the most events per request (default 500).
	MaxEvents int
	// MaxBytes is the most body bytes per request (default 1 MiB).
	MaxBytes int
}

// RetryConfig is the backoff between attempts of one request: attempt n
// waits a random duration in [0, min(Max, Initial·2^(n-1))] ("full
// jitter", so that many senders do not retry in step), or what the
// response's Retry-After asks, capped at Max.
type RetryConfig struct {
	// Initial is the first backoff ceiling (default 500ms).
	Initial time.Duration
	// Max caps the backoff and Retry-After (default 30s).
	Max time.Duration
	// MaxElapsed gives up on a request after this long, returning a
	// retryable error to the pipeline (which restarts from the
	// checkpoint). Zero retries until the context is done.
	MaxElapsed time.Duration
}

// Observer receives delivery counts, so that the daemon can export them
// as metrics without this package importing a metrics library. Methods are
// called from the goroutine running Write and must not block.
type Observer interface {
	// Retry reports a failed attempt that will be retried: the HTTP
	// status, or 0 for a network error or timeout, and the error.
	Retry(status int, err error)
	// Delivered reports n events accepted by the receiver in one request.
	Delivered(n int)
}

// withDefaults returns c with zero fields set to their defaults, or an error
// naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.URL == "" {
		return c, errors.New("webhook url: required")
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		// Not url.Parse's error: it quotes the URL whole.
		shown, _, _ := strings.Cut(c.URL, "?")
		shown, _, _ = strings.Cut(shown, "#")
		return c, fmt.Errorf("webhook url %s: %s", userinfo.URL(shown), userinfo.ParseReason(err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("webhook url %s: want an http or https URL with a host", redact(u))
	}
	if c.Secret == "" {
		return c, errors.New("webhook secret: required")
	}
	if c.CloudEvents && c.Pipeline == "" {
		return c, errors.New("webhook pipeline: required for cloudevents (it names the event source)")
	}
	switch c.CloudEventsMode {
	case "", CloudEventsStructured:
	case CloudEventsBinary:
		if !c.CloudEvents {
			return c, errors.New("webhook cloudevents_mode: binary needs cloudevents: true")
		}
	default:
		return c, fmt.Errorf("webhook cloudevents_mode %q: want structured or binary", c.CloudEventsMode)
	}
	setDefault(&c.Timeout, DefaultTimeout)
	setDefault(&c.Batch.MaxEvents, DefaultMaxEvents)
	setDefault(&c.Batch.MaxBytes, DefaultMaxBytes)
	setDefault(&c.Retry.Initial, DefaultRetryInitial)
	setDefault(&c.Retry.Max, DefaultRetryMax)
	setDefault(&c.MaxResponseBody, DefaultMaxResponseBody)
	switch {
	case c.Timeout < 0:
		return c, errors.New("webhook timeout: must not be negative")
	case c.Batch.MaxEvents < 0:
		return c, errors.New("webhook batch.max_events: must not be negative")
	case c.Batch.MaxBytes < 0:
		return c, errors.New("webhook batch.max_bytes: must not be negative")
	case c.Retry.Initial < 0:
		return c, errors.New("webhook retry.initial: must not be negative")
	case c.Retry.Max < c.Retry.Initial:
		return c, errors.New("webhook retry.max: must not be below retry.initial")
	case c.Retry.MaxElapsed < 0:
		return c, errors.New("webhook retry.max_elapsed: must not be negative")
	case c.MaxResponseBody < 0:
		return c, errors.New("webhook max_response_body: must not be negative")
	}
	return c, nil
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

// redact keeps what identifies an endpoint to a reader of logs and drops
// what may be a credential: user info, query and fragment.
func redact(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}
