package nats

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Header names of every event message: those of the Kafka sink, the
// event key, and JetStream's message id.
const (
	HeaderID          = "id"
	HeaderOp          = "op"
	HeaderSequence    = "sequence_number"
	HeaderSnapshot    = "snapshot_id"
	HeaderKey         = "key"
	HeaderKeyEncoding = "key-encoding" // "base64" when the key is not text
	HeaderMsgID       = jetstream.MsgIDHeader
)

// Sink publishes batches to JetStream (see the package doc).
type Sink struct {
	cfg Config

	mu     sync.Mutex
	conn   *natsgo.Conn
	js     jetstream.JetStream
	closed bool

	subjects sync.Map // subject → int64, the stream's max_msg_size (-1: none), once checked
}

var _ cdc.NonRetainingSink = (*Sink)(nil)

// New checks cfg and returns a sink; it connects on the first Write.
func New(cfg Config) (*Sink, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Sink{cfg: cfg}, nil
}

// RetainsNoBatch: Write copies what it publishes before it returns.
func (s *Sink) RetainsNoBatch() {}

// SubjectOf returns the subject of table t.
func (s *Sink) SubjectOf(t *cdc.TableInfo) string {
	return sinkkind.ExpandName(s.cfg.Subject, t, s.cfg.Pipeline)
}

// Close closes the connection; Write has awaited every acknowledgement.
func (s *Sink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	return nil
}

// connect returns the JetStream context, connecting first when needed.
// A refused credential or certificate is permanent; an unreachable
// server is not.
func (s *Sink) connect() (jetstream.JetStream, *natsgo.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errors.New("nats sink: closed")
	}
	if s.conn != nil {
		return s.js, s.conn, nil
	}
	opts, err := s.options()
	if err != nil {
		return nil, nil, cdc.Permanent(err)
	}
	nc, err := natsgo.Connect(joinURLs(s.cfg.URLs), opts...)
	if err != nil {
		failed := fmt.Errorf("nats %s: connect: %s", s.cfg.hosts(), redact.Text(err.Error()))
		if permanentConnect(err) {
			return nil, nil, cdc.Permanent(failed)
		}
		return nil, nil, failed
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(s.cfg.Batch.MaxPending),
		jetstream.WithPublishAsyncTimeout(s.cfg.Timeout))
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("nats %s: %w", s.cfg.hosts(), err)
	}
	s.conn, s.js = nc, js
	return js, nc, nil
}

func joinURLs(urls []string) string {
	out := ""
	for i, u := range urls {
		if i > 0 {
			out += ","
		}
		out += u
	}
	return out
}

// options are the connection's options from the configuration.
func (s *Sink) options() ([]natsgo.Option, error) {
	c := s.cfg
	name := "icecdc"
	if c.Pipeline != "" {
		name += " " + c.Pipeline
	}
	opts := []natsgo.Option{natsgo.Name(name), natsgo.MaxReconnects(-1), natsgo.Timeout(defaultConnectionTimeout)}
	switch {
	case c.CredsFile != "":
		opts = append(opts, natsgo.UserCredentials(c.CredsFile))
	case c.NKeyFile != "":
		o, err := natsgo.NkeyOptionFromSeed(c.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("nats sink config: nkey_file %s: %w", c.NKeyFile, err)
		}
		opts = append(opts, o)
	case c.Username != "":
		opts = append(opts, natsgo.UserInfo(c.Username, c.Password))
	case c.Token != "":
		opts = append(opts, natsgo.Token(c.Token))
	}
	if c.TLS.CAFile != "" {
		opts = append(opts, natsgo.RootCAs(c.TLS.CAFile))
	}
	if c.TLS.CertFile != "" {
		opts = append(opts, natsgo.ClientCert(c.TLS.CertFile, c.TLS.KeyFile))
	}
	if c.TLS.InsecureSkipVerify {
		opts = append(opts, natsgo.Secure(&tls.Config{InsecureSkipVerify: true})) //nolint:gosec // the configuration asks for it
	}
	return opts, nil
}

// permanentConnect tells a refusal no retry changes: credentials, a
// certificate the CAs do not sign.
func permanentConnect(err error) bool {
	var cert *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	return errors.Is(err, natsgo.ErrAuthorization) || errors.Is(err, natsgo.ErrAuthExpired) ||
		errors.Is(err, natsgo.ErrAuthRevoked) || errors.Is(err, natsgo.ErrAccountAuthExpired) ||
		errors.As(err, &cert) || errors.As(err, &unknown)
}

// Write publishes b's events and returns once JetStream acknowledged
// every one.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if len(b.Messages) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	subject := s.SubjectOf(&b.Table)
	if err := checkSubject(subject, false); err != nil {
		return cdc.Permanent(fmt.Errorf("nats subject %q of table %s.%s: %v", subject, b.Table.Namespace, b.Table.Name, err))
	}
	js, nc, err := s.connect()
	if err != nil {
		return err
	}
	maxMsgSize, err := s.prepare(ctx, js, subject)
	if err != nil {
		return err
	}
	limit, what := nc.MaxPayload(), "the server's max_payload"
	if maxMsgSize >= 0 && maxMsgSize < limit {
		limit, what = maxMsgSize, "stream "+s.cfg.Stream.Name+"'s max_msg_size"
	}
	msgs := make([]*natsgo.Msg, len(b.Messages))
	seq := strconv.FormatInt(b.Snapshot.SequenceNumber, 10)
	snap := strconv.FormatInt(b.Snapshot.ID, 10)
	for i := range b.Messages {
		m := &b.Messages[i]
		msg := message(subject, m, seq, snap)
		if n := size(msg); int64(n) > limit {
			return cdc.Permanent(fmt.Errorf("nats subject %s: %s: %d bytes with its headers, more than %s of %d: not sent",
				subject, sinkkind.DescribeEvent(&b.Table, b.Snapshot.SequenceNumber, m), n, what, limit))
		}
		msgs[i] = msg
	}
	return s.publish(ctx, js, subject, b, msgs)
}

// message builds the message of m (its bytes copied).
func message(subject string, m *cdc.Message, seq, snap string) *natsgo.Msg {
	h := natsgo.Header{
		HeaderMsgID:    {m.ID},
		HeaderID:       {m.ID},
		HeaderOp:       {string(m.Op)},
		HeaderSequence: {seq},
		HeaderSnapshot: {snap},
	}
	if m.Key != nil {
		if isText(m.Key) {
			h[HeaderKey] = []string{string(m.Key)}
		} else {
			h[HeaderKey] = []string{base64.StdEncoding.EncodeToString(m.Key)}
			h[HeaderKeyEncoding] = []string{"base64"}
		}
	}
	for _, x := range m.Headers {
		h[x.Key] = append(h[x.Key], string(x.Value))
	}
	return &natsgo.Msg{Subject: subject, Header: h, Data: append([]byte(nil), m.Value...)}
}

// isText reports whether b can be a header value as it is: UTF-8
// without control characters.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// size is the message's size as the server measures it: the header
// block ("NATS/1.0\r\n", a line per value, a blank line) and the body.
func size(m *natsgo.Msg) int {
	n := len("NATS/1.0\r\n") + 2
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + len(m.Data)
}

// publish publishes msgs asynchronously and waits for every
// acknowledgement.
func (s *Sink) publish(ctx context.Context, js jetstream.JetStream, subject string, b *cdc.Batch, msgs []*natsgo.Msg) error {
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	var sendErr error
	for _, msg := range msgs {
		f, err := js.PublishMsgAsync(msg, jetstream.WithStallWait(s.cfg.Timeout))
		if err != nil {
			sendErr = err
			break
		}
		futures = append(futures, f)
	}
	var first error
	for i, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if first == nil {
				first = s.ackError(subject, b, i, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if first != nil {
		return first
	}
	if sendErr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("nats subject %s: publish: %s", subject, redact.Text(sendErr.Error()))
	}
	return nil
}

// ackError is the error of message i's refused or missing
// acknowledgement: permanent for a refusal no retry changes.
func (s *Sink) ackError(subject string, b *cdc.Batch, i int, err error) error {
	e := fmt.Errorf("nats subject %s: stream %s: %s: %s", subject, s.cfg.Stream.Name,
		sinkkind.DescribeEvent(&b.Table, b.Snapshot.SequenceNumber, &b.Messages[i]), redact.Text(err.Error()))
	var je jetstream.JetStreamError
	if errors.As(err, &je) && je.APIError() != nil {
		switch je.APIError().ErrorCode {
		case jetstream.JSErrCodeStreamMessageExceedsMaximum,
			jetstream.JSErrCodeJetStreamNotEnabled, jetstream.JSErrCodeJetStreamNotEnabledForAccount:
			return cdc.Permanent(e)
		}
	}
	if errors.Is(err, natsgo.ErrMaxPayload) || errors.Is(err, natsgo.ErrAuthorization) {
		return cdc.Permanent(e)
	}
	return e
}
