package webhook

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/icecdc/icecdc/cdc"
	userinfo "github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Section is the webhook sink's section of icecdc.yaml, sink.webhook.
type Section struct {
	URL         string        `yaml:"url"`
	Secret      string        `yaml:"secret"`
	Timeout     time.Duration `yaml:"timeout"`
	CloudEvents bool          `yaml:"cloudevents"`
	// CloudEventsMode: structured (default, a CloudEvents JSON batch per
	// request) or binary (one event per request, attributes in ce-*
	// headers).
	CloudEventsMode string `yaml:"cloudevents_mode"`
	Batch           struct {
		MaxEvents int `yaml:"max_events"`
		MaxBytes  int `yaml:"max_bytes"`
	} `yaml:"batch"`
}

// Kind declares the webhook sink: it POSTs events and pings heartbeats.
func (w *Section) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name:        "webhook",
		Caps:        sinkkind.Caps{Heartbeats: true, PerKeyOrder: true},
		Check:       w.check,
		Fingerprint: func() []string { return []string{w.URL, fmt.Sprint(w.CloudEvents)} },
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			return New(Config{
				URL: w.URL, Secret: w.Secret, Pipeline: env.Pipeline, Timeout: w.Timeout, CloudEvents: w.CloudEvents,
				CloudEventsMode: w.CloudEventsMode,
				Batch:           BatchConfig{MaxEvents: w.Batch.MaxEvents, MaxBytes: w.Batch.MaxBytes},
				Observer:        retries(env.Retried),
				Encoding:        env.Encoding,
			})
		},
	}
}

func (w *Section) check() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	if w.URL == "" {
		bad("url", "required for sink type webhook")
	} else if !strings.HasPrefix(w.URL, "http://") && !strings.HasPrefix(w.URL, "https://") {
		bad("url", "%s: want an http:// or https:// URL", userinfo.URL(w.URL))
	} else if _, err := url.Parse(w.URL); err != nil {
		bad("url", "%s: %s", userinfo.URL(w.URL), userinfo.ParseReason(err))
	}
	if err := CheckSecret(w.Secret); err != nil {
		bad("secret", "%v", err) // the error never quotes the secret
	}
	if w.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	switch m := w.CloudEventsMode; m {
	case "", CloudEventsStructured:
	case CloudEventsBinary:
		if !w.CloudEvents {
			bad("cloudevents_mode", "binary needs sink.webhook.cloudevents: true")
		}
	default:
		bad("cloudevents_mode", "%q: want structured or binary", m)
	}
	return errs
}

// retries is an Observer that counts retries by status.
type retries func(status int)

func (r retries) Retry(status int, _ error) {
	if r != nil {
		r(status)
	}
}

func (retries) Delivered(int) {}
