package webhook

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

var _ cdc.NonRetainingSink = (*Sink)(nil)

var errClosed = errors.New("webhook sink is closed")

// Sink delivers batches to one webhook endpoint. It is safe for concurrent
// use; concurrent Writes are delivered one after the other, never
// interleaved, so the receiver sees each batch's requests contiguously.
type Sink struct {
	cfg       Config
	key       []byte
	url       string // the configured URL, secrets included: for requests only
	endpoint  string // redacted URL: for errors
	client    *http.Client
	ownClient bool
	obs       Observer

	// turn is held by the Write in progress and by Close: a one-slot
	// channel rather than a mutex so that waiting for it honours the
	// context.
	turn    chan struct{}
	closed  bool      // guarded by turn
	largest int       // the largest request body so far; guarded by turn
	spare   spareBody // the previous request's body; guarded by turn

	// Seams for tests, so that backoff is checked without real waiting.
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(ceiling time.Duration) time.Duration
}

// New returns a Sink for cfg, or an error naming the invalid field.
func New(cfg Config) (*Sink, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	key, err := secretKey(cfg.Secret)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL) // validated by withDefaults
	s := &Sink{
		cfg:      cfg,
		key:      key,
		url:      cfg.URL,
		endpoint: redact(u),
		obs:      cfg.Observer,
		turn:     make(chan struct{}, 1),
		now:      time.Now,
		sleep:    sleepContext,
		jitter:   fullJitter,
	}
	if s.obs == nil {
		s.obs = nopObserver{}
	}
	if cfg.Client != nil {
		c := *cfg.Client
		s.client = &c
	} else {
		s.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
		s.ownClient = true
	}
	s.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return s, nil
}

// Write POSTs every message of b, in order, one request at a time, and
// returns once the receiver accepted all of them. A failed request is
// retried as configured; Write returns ctx.Err() when ctx ends first, an
// error wrapping cdc.ErrPermanent (and cdc.ErrDisabled for 410) when the
// receiver refused, or a retryable error when Retry.MaxElapsed ran out.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.turn }()
	if s.closed {
		return errClosed
	}
	if b == nil || len(b.Messages) == 0 {
		return nil
	}
	enc := newEncoder(s.cfg, b, &s.largest, &s.spare)
	for msgs := b.Messages; len(msgs) > 0; {
		r := enc.next(msgs)
		err := s.deliver(ctx, r)
		if r.open != nil {
			s.spare = spareBody{buf: r.body, open: r.open}
		}
		if err != nil {
			return err
		}
		msgs = msgs[r.n:]
	}
	return nil
}

// Close waits for a Write in progress (or for ctx) and releases the sink's
// idle connections. Writes after Close fail.
func (s *Sink) Close(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.turn }()
	if !s.closed && s.ownClient {
		s.client.CloseIdleConnections()
	}
	s.closed = true
	return nil
}

type nopObserver struct{}

func (nopObserver) Retry(int, error) {}
func (nopObserver) Delivered(int)    {}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func fullJitter(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

// RetainsNoBatch says that Write keeps nothing of a batch once it
// returned: a request's body is a copy of its events, and its id a
// string, so the pipeline may encode its next batch into the same
// buffers.
func (*Sink) RetainsNoBatch() {}
