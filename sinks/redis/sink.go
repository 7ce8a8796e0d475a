package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Field names of every entry.
const (
	FieldID           = "id"
	FieldOp           = "op"
	FieldSequence     = "sequence_number"
	FieldSnapshot     = "snapshot_id"
	FieldKey          = "key"
	FieldValue        = "value"
	FieldHeaderPrefix = "header:"
)

// Sink adds batches to Redis streams (see the package doc).
type Sink struct {
	cfg    Config
	client *goredis.Client
	host   string // the server, for errors

	mu     sync.Mutex
	closed bool
}

var _ cdc.NonRetainingSink = (*Sink)(nil)

// New checks cfg and returns a sink; the client connects on first use.
func New(cfg Config) (*Sink, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts, err := goredis.ParseURL(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("redis sink config: url %s: %s", redact.URL(cfg.URL), redact.Text(err.Error()))
	}
	if cfg.Username != "" {
		opts.Username = cfg.Username
	}
	if cfg.Password != "" {
		opts.Password = cfg.Password
	}
	if cfg.TLS.CAFile != "" || cfg.TLS.InsecureSkipVerify {
		if opts.TLSConfig == nil {
			return nil, fmt.Errorf("redis sink config: tls: set for %s, which is not a rediss:// URL", redact.URL(cfg.URL))
		}
		opts.TLSConfig.InsecureSkipVerify = cfg.TLS.InsecureSkipVerify //nolint:gosec // the configuration asks for it
		if cfg.TLS.CAFile != "" {
			pem, err := os.ReadFile(cfg.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("redis sink config: tls.ca_file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("redis sink config: tls.ca_file %s: no PEM certificate in it", cfg.TLS.CAFile)
			}
			opts.TLSConfig.RootCAs = pool
		}
	}
	opts.ClientName = "icecdc"
	if cfg.Pipeline != "" {
		opts.ClientName += "-" + cfg.Pipeline
	}
	// Write's retries are the pipeline's, from the checkpoint: a pipeline
	// retried inside the client could add entries twice for no reason.
	opts.MaxRetries = -1
	opts.ReadTimeout, opts.WriteTimeout = cfg.Timeout, cfg.Timeout
	return &Sink{cfg: cfg, client: goredis.NewClient(opts), host: redact.URL(cfg.URL)}, nil
}

// RetainsNoBatch: the pipeline's commands are written out before Write
// returns.
func (s *Sink) RetainsNoBatch() {}

// StreamOf returns the stream key of table t.
func (s *Sink) StreamOf(t *cdc.TableInfo) string {
	return sinkkind.ExpandName(s.cfg.Stream, t, s.cfg.Pipeline)
}

// Close closes the client.
func (s *Sink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.client.Close()
}

// Write adds b's events to the table's stream, a pipeline of XADDs per
// Batch.MaxEntries, and returns once every reply confirmed its entry.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if len(b.Messages) == 0 {
		return nil
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errors.New("redis sink: closed")
	}
	stream := s.StreamOf(&b.Table)
	seq := strconv.FormatInt(b.Snapshot.SequenceNumber, 10)
	snap := strconv.FormatInt(b.Snapshot.ID, 10)
	for start := 0; start < len(b.Messages); start += s.cfg.Batch.MaxEntries {
		end := min(start+s.cfg.Batch.MaxEntries, len(b.Messages))
		if err := s.send(ctx, batchSlice{stream: stream, b: b, start: start, end: end, seq: seq, snap: snap}); err != nil {
			return err
		}
	}
	return nil
}

// batchSlice is messages [start, end) of b bound for one stream, with the
// snapshot's sequence number and id already formatted once per batch.
type batchSlice struct {
	stream     string
	b          *cdc.Batch
	start, end int
	seq, snap  string
}

// send sends messages [start, end) of b as one pipeline.
func (s *Sink) send(ctx context.Context, sl batchSlice) error {
	stream, b, start, end, seq, snap := sl.stream, sl.b, sl.start, sl.end, sl.seq, sl.snap
	pipe := s.client.Pipeline()
	for i := start; i < end; i++ {
		m := &b.Messages[i]
		values := make([]any, 0, 12+2*len(m.Headers))
		values = append(values, FieldID, m.ID, FieldOp, string(m.Op), FieldSequence, seq, FieldSnapshot, snap,
			FieldKey, m.Key, FieldValue, m.Value)
		for _, h := range m.Headers {
			values = append(values, FieldHeaderPrefix+h.Key, h.Value)
		}
		pipe.XAdd(ctx, &goredis.XAddArgs{Stream: stream, MaxLen: s.cfg.MaxLen, Approx: s.cfg.MaxLen > 0, ID: "*", Values: values})
	}
	cmds, err := pipe.Exec(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for j, c := range cmds {
		if e := c.Err(); e != nil {
			return s.failed(stream, b, start+j, e)
		}
	}
	if err != nil {
		return s.failed(stream, b, start, err)
	}
	return nil
}

// failed is the error of message i's XADD: permanent for a refusal no
// retry changes (a key of another type, a wrong password, a missing
// permission, a certificate the CAs do not sign).
func (s *Sink) failed(stream string, b *cdc.Batch, i int, err error) error {
	e := fmt.Errorf("redis %s: stream %s: %s: %s", s.host, stream,
		sinkkind.DescribeEvent(&b.Table, b.Snapshot.SequenceNumber, &b.Messages[i]), redact.Text(err.Error()))
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		for _, p := range []string{"WRONGTYPE", "NOAUTH", "WRONGPASS", "NOPERM", "ERR unknown command", "ERR AUTH"} {
			if strings.HasPrefix(rerr.Error(), p) {
				return cdc.Permanent(e)
			}
		}
	}
	var cert *tls.CertificateVerificationError
	if errors.As(err, &cert) {
		return cdc.Permanent(e)
	}
	return e
}
