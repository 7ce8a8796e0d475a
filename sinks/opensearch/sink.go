package opensearch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	opensearchgo "github.com/opensearch-project/opensearch-go/v4"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// maxAnswerBytes bounds a _bulk answer read (about 200 bytes an item).
const maxAnswerBytes = 64 << 20

// Sink writes batches to OpenSearch indexes (see the package doc).
type Sink struct {
	cfg    Config
	client *opensearchgo.Client
	dead   *deadLetters // nil without Config.DeadLetter.File
	ready  sync.Map     // index name → true once created or found (see prepare)
}

var _ cdc.NonRetainingSink = (*Sink)(nil)

// New checks cfg and returns a sink; it does not contact the nodes.
func New(cfg Config) (*Sink, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	oc := opensearchgo.Config{
		Addresses:          cfg.URLs,
		Username:           cfg.Username,
		Password:           cfg.Password,
		Header:             http.Header{},
		InsecureSkipVerify: cfg.TLS.InsecureSkipVerify,
		RequestTimeout:     cfg.Timeout,
		Transport:          cfg.Transport,
		// The transport tries the next node on a network error and on
		// 502/503/504; retries of refused items are Write's.
		MaxRetries: max(len(cfg.URLs)-1, 1),
	}
	switch {
	case cfg.APIKey != "":
		oc.Header.Set("Authorization", "ApiKey "+cfg.APIKey)
	case cfg.BearerToken != "":
		oc.Header.Set("Authorization", "Bearer "+cfg.BearerToken)
	}
	if cfg.TLS.CAFile != "" {
		pem, err := os.ReadFile(cfg.TLS.CAFile)
		if err != nil {
			return nil, fmt.Errorf("opensearch sink config: tls.ca_file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("opensearch sink config: tls.ca_file %s: no PEM certificate in it", cfg.TLS.CAFile)
		}
		oc.CACert = pem
	}
	client, err := opensearchgo.NewClient(oc)
	if err != nil {
		return nil, fmt.Errorf("opensearch sink %s: %w", cfg.hosts(), err)
	}
	s := &Sink{cfg: cfg, client: client}
	if cfg.DeadLetter.File != "" {
		if s.dead, err = openDeadLetters(cfg.DeadLetter.File); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// RetainsNoBatch: Write copies what it sends.
func (s *Sink) RetainsNoBatch() {}

// Close releases the dead-letter file.
func (s *Sink) Close(context.Context) error {
	if s.dead != nil {
		return s.dead.close()
	}
	return nil
}

// IndexOf returns the index of table t.
func (s *Sink) IndexOf(t *cdc.TableInfo) string {
	return sinkkind.ExpandName(s.cfg.Index, t, s.cfg.Pipeline)
}

// Write sends b's events as bulk items and returns once every one is
// accounted for (the package doc says how).
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if len(b.Messages) == 0 {
		return nil
	}
	index := s.IndexOf(&b.Table)
	if err := s.prepare(ctx, index); err != nil {
		return err
	}
	pending := make([]item, 0, len(b.Messages))
	for i := range b.Messages {
		it, err := newItem(i, &b.Messages[i], index, b.Snapshot.SequenceNumber)
		if err != nil {
			return cdc.Permanent(fmt.Errorf("index %s: event %s: %w", index, b.Messages[i].ID, err))
		}
		pending = append(pending, it)
	}
	w := &writer{s: s, index: index}
	var last string
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == s.cfg.Retry.Attempts {
			return fmt.Errorf("index %s: %d of %d items not written after %d attempts, last: %s", index, len(pending), len(b.Messages), attempt, last)
		}
		if attempt > 0 {
			if err := sleep(ctx, backoff(s.cfg.Retry, attempt)); err != nil {
				return err
			}
		}
		var retry []item
		for len(pending) > 0 {
			n := s.cut(pending)
			r, why, err := w.send(ctx, pending[:n])
			if err != nil {
				return err
			}
			if len(r) > 0 {
				last = why
			}
			retry = append(retry, r...)
			pending = pending[n:]
		}
		pending = retry
	}
	if w.deadLettered && s.dead != nil {
		return s.dead.sync()
	}
	return nil
}

// indexMapping is the body that creates an index (see
// Config.CreateIndex).
const indexMapping = `{"mappings":{"dynamic_templates":[{"icecdc_doubles":{"match_mapping_type":"double","mapping":{"type":"double"}}}]}}`

// prepare creates index, once per sink, when Config.CreateIndex says
// so: an index that exists already is left as it is. A refusal no retry
// can change (an invalid index name, a wrong password) stops the table
// naming the index; 403 (a user who may write but not create indexes)
// is logged once and the writes go on.
func (s *Sink) prepare(ctx context.Context, index string) error {
	if !*s.cfg.CreateIndex {
		return nil
	}
	if _, ok := s.ready.Load(index); ok {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "/"+url.PathEscape(index), strings.NewReader(indexMapping))
	if err != nil {
		return cdc.Permanent(fmt.Errorf("index %s: %w", index, err))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Perform(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		failed := fmt.Errorf("index %s: create it: opensearch %s: %s", index, s.cfg.hosts(), redact.Text(err.Error()))
		if errors.As(err, new(*tls.CertificateVerificationError)) {
			return cdc.Permanent(failed)
		}
		return failed
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch st := resp.StatusCode; {
	case st < 300:
		s.cfg.Logger.Info("opensearch: index created", "index", index)
	case st == http.StatusBadRequest && bytes.Contains(answer, []byte("resource_already_exists_exception")):
	case st == http.StatusForbidden:
		s.cfg.Logger.Warn("opensearch: may not create the index; writing to it as it is", "index", index,
			"answer", redact.Credentials(requestError(st, answer)))
	case st == http.StatusTooManyRequests || st >= 500:
		return fmt.Errorf("index %s: create it: opensearch %s: %s", index, s.cfg.hosts(), redact.Credentials(requestError(st, answer)))
	default:
		return cdc.Permanent(fmt.Errorf("index %s: create it: opensearch %s: %s", index, s.cfg.hosts(), redact.Credentials(requestError(st, answer))))
	}
	s.ready.Store(index, true)
	return nil
}

// cut returns how many of items the next request takes: at most
// MaxDocs, and while the body stays within MaxBytes (at least one).
func (s *Sink) cut(items []item) int {
	size := 0
	for i, it := range items {
		if i == s.cfg.Batch.MaxDocs || i > 0 && size+len(it.body) > s.cfg.Batch.MaxBytes {
			return i
		}
		size += len(it.body)
	}
	return len(items)
}

// writer sends one batch's requests.
type writer struct {
	s            *Sink
	index        string
	deadLettered bool
}

// send sends items as one _bulk request and returns those to send again
// (with the last reason), or an error that ends the Write.
func (w *writer) send(ctx context.Context, items []item) (retry []item, why string, err error) {
	var body bytes.Buffer
	for _, it := range items {
		body.Write(it.body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/_bulk", &body)
	if err != nil {
		return nil, "", cdc.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	if r := w.s.cfg.Refresh; r != RefreshFalse {
		req.URL.RawQuery = "refresh=" + r
	}
	resp, err := w.s.client.Perform(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		msg := redact.Text(err.Error())
		var cert *tls.CertificateVerificationError
		if errors.As(err, &cert) {
			return nil, "", cdc.Permanent(fmt.Errorf("index %s: opensearch %s: %s", w.index, w.s.cfg.hosts(), msg))
		}
		w.s.retried(0)
		return items, "opensearch " + w.s.cfg.hosts() + ": " + msg, nil
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		w.s.retried(0)
		return items, "read _bulk answer: " + err.Error(), nil
	}
	switch st := resp.StatusCode; {
	case st == http.StatusRequestEntityTooLarge:
		if len(items) == 1 {
			return nil, "", w.refuse(items[0], "413 request too large for the node (http.max_content_length)")
		}
		half := len(items) / 2
		r1, why1, err := w.send(ctx, items[:half])
		if err != nil {
			return nil, "", err
		}
		r2, why2, err := w.send(ctx, items[half:])
		if err != nil {
			return nil, "", err
		}
		if why2 == "" {
			why2 = why1
		}
		return append(r1, r2...), why2, nil
	case st == http.StatusTooManyRequests || st >= 500:
		w.s.retried(st)
		return items, redact.Credentials(requestError(st, answer)), nil
	case st < 200 || st >= 300:
		// 401, 403 (a wrong password, missing privileges), 400 (a body
		// the node cannot read), 404 (a proxy path): no retry helps.
		return nil, "", cdc.Permanent(fmt.Errorf("index %s: opensearch %s: _bulk: %s", w.index, w.s.cfg.hosts(), redact.Credentials(requestError(st, answer))))
	}
	a, err := decodeAnswer(answer)
	if err != nil {
		w.s.retried(resp.StatusCode)
		return items, err.Error(), nil
	}
	if len(a.Items) != len(items) {
		w.s.retried(resp.StatusCode)
		return items, fmt.Sprintf("_bulk answered %d items for %d", len(a.Items), len(items)), nil
	}
	for i, r := range a.Items {
		switch classify(r, items[i].delete) {
		case written:
		case again:
			w.s.retried(r.Status)
			retry = append(retry, items[i])
			why = fmt.Sprintf("document %s: %d %s", items[i].id, r.Status, reason(r))
		case refused:
			if err := w.refuse(items[i], strconv.Itoa(r.Status)+" "+reason(r)); err != nil {
				return nil, "", err
			}
		}
	}
	return retry, why, nil
}

// refuse hands an item the node will never take to the dead-letter file,
// or returns the error that stops the table.
func (w *writer) refuse(it item, why string) error {
	if w.s.dead == nil {
		return cdc.Permanent(fmt.Errorf("index %s: document %s: %s", it.index, it.id, why))
	}
	if err := w.s.dead.add(it, why); err != nil {
		return err
	}
	w.deadLettered = true
	w.s.cfg.Logger.Warn("opensearch: document refused, written to the dead-letter file", "index", it.index, "id", it.id, "reason", why, "file", w.s.cfg.DeadLetter.File)
	return nil
}

func (s *Sink) retried(status int) {
	if s.cfg.Retried != nil {
		s.cfg.Retried(status)
	}
}

// backoff is the wait before attempt (from 1): full jitter under an
// exponential ceiling.
func backoff(r RetryConfig, attempt int) time.Duration {
	ceil := r.Initial << min(attempt-1, 20)
	if ceil <= 0 || ceil > r.Max {
		ceil = r.Max
	}
	return time.Duration(rand.Int64N(int64(ceil)) + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// deadLetters is the dead-letter file: one JSON line per refused item.
type deadLetters struct {
	mu sync.Mutex
	f  *os.File
}

func openDeadLetters(path string) (*deadLetters, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opensearch sink: dead_letter.file: %w", err)
	}
	return &deadLetters{f: f}, nil
}

// add appends it: {"index","id","action","reason","item"} where item is
// the bulk item's lines as they were sent.
func (d *deadLetters) add(it item, why string) error {
	action := "index"
	if it.delete {
		action = "delete"
	}
	line := []byte(`{"index":`)
	line = appendJSONString(line, it.index)
	line = append(line, `,"id":`...)
	line = appendJSONString(line, it.id)
	line = append(line, `,"action":"`+action+`","reason":`...)
	line = appendJSONString(line, why)
	line = append(line, `,"item":`...)
	line = appendJSONString(line, string(it.body))
	line = append(line, "}\n"...)
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.f.Write(line); err != nil {
		return fmt.Errorf("opensearch sink: dead_letter.file: %w", err)
	}
	return nil
}

func (d *deadLetters) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("opensearch sink: dead_letter.file: %w", err)
	}
	return nil
}

func (d *deadLetters) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.f.Close()
}
