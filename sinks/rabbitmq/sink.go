package rabbitmq

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Header names of every event message.
const (
	HeaderID       = "id"
	HeaderOp       = "op"
	HeaderSequence = "sequence_number"
	HeaderSnapshot = "snapshot_id"
	HeaderKey      = "key"
)

// Sink publishes batches to RabbitMQ (see the package doc).
type Sink struct {
	cfg  Config
	host string
	tls  *tls.Config

	// mu serializes Writes: one confirm-mode channel, whose confirms
	// and returns belong to the batch being written.
	mu        sync.Mutex
	conn      *amqp.Connection
	ch        *amqp.Channel
	returns   chan amqp.Return
	closes    chan *amqp.Error
	exchanges map[string]bool
	closed    bool
}

var _ cdc.NonRetainingSink = (*Sink)(nil)

// New checks cfg and returns a sink; it connects on the first Write.
func New(cfg Config) (*Sink, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sink{cfg: cfg, host: redact.URL(cfg.URL), exchanges: map[string]bool{}}
	if cfg.TLS.CAFile != "" || cfg.TLS.CertFile != "" || cfg.TLS.InsecureSkipVerify {
		s.tls = &tls.Config{InsecureSkipVerify: cfg.TLS.InsecureSkipVerify} //nolint:gosec // the configuration asks for it
		if cfg.TLS.CAFile != "" {
			pem, err := os.ReadFile(cfg.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("rabbitmq sink config: tls.ca_file: %w", err)
			}
			s.tls.RootCAs = x509.NewCertPool()
			if !s.tls.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("rabbitmq sink config: tls.ca_file %s: no PEM certificate in it", cfg.TLS.CAFile)
			}
		}
		if cfg.TLS.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("rabbitmq sink config: tls.cert_file: %w", err)
			}
			s.tls.Certificates = []tls.Certificate{cert}
		}
	}
	return s, nil
}

// RetainsNoBatch: Write has published every message before it returns.
func (s *Sink) RetainsNoBatch() {}

// ExchangeOf and RoutingKeyOf return where table t's events go.
func (s *Sink) ExchangeOf(t *cdc.TableInfo) string {
	return sinkkind.ExpandName(s.cfg.Exchange, t, s.cfg.Pipeline)
}

// RoutingKeyOf returns the routing key of table t's events.
func (s *Sink) RoutingKeyOf(t *cdc.TableInfo) string {
	return sinkkind.ExpandName(s.cfg.RoutingKey, t, s.cfg.Pipeline)
}

// Close closes the connection.
func (s *Sink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.drop()
	return nil
}

// drop closes the connection, so that the next Write opens a new one
// (after a channel error, which closes the channel).
func (s *Sink) drop() {
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.conn, s.ch = nil, nil
	clear(s.exchanges)
}

// connect opens the connection and a confirm-mode channel when there is
// none. A refused login or certificate is permanent.
func (s *Sink) connect() error {
	if s.ch != nil && !s.ch.IsClosed() {
		return nil
	}
	s.drop()
	props := amqp.NewConnectionProperties()
	name := "icecdc"
	if s.cfg.Pipeline != "" {
		name += " " + s.cfg.Pipeline
	}
	props.SetClientConnectionName(name)
	cfg := amqp.Config{TLSClientConfig: s.tls, Properties: props, Heartbeat: 10 * time.Second,
		Dial: amqp.DefaultDial(s.cfg.Timeout)}
	if s.tls != nil && len(s.tls.Certificates) > 0 {
		cfg.SASL = []amqp.Authentication{&amqp.ExternalAuth{}}
		if u, err := amqp.ParseURI(s.cfg.URL); err == nil && u.Password != "" {
			cfg.SASL = nil // the URL's PLAIN login
		}
	}
	conn, err := amqp.DialConfig(s.cfg.URL, cfg)
	if err != nil {
		e := fmt.Errorf("rabbitmq %s: connect: %s", s.host, redact.Text(err.Error()))
		var cert *tls.CertificateVerificationError
		if errors.Is(err, amqp.ErrCredentials) || errors.Is(err, amqp.ErrVhost) || errors.As(err, &cert) {
			return cdc.Permanent(e)
		}
		return e
	}
	ch, err := conn.Channel()
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("rabbitmq %s: open a confirm channel: %w", s.host, err)
	}
	s.conn, s.ch = conn, ch
	s.returns = ch.NotifyReturn(make(chan amqp.Return, 1))
	s.closes = ch.NotifyClose(make(chan *amqp.Error, 1))
	return nil
}

// Write publishes b's events and returns once the broker confirmed
// every one.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if len(b.Messages) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("rabbitmq sink: closed")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.connect(); err != nil {
		return err
	}
	exchange, key := s.ExchangeOf(&b.Table), s.RoutingKeyOf(&b.Table)
	if err := s.prepare(exchange); err != nil {
		return err
	}
	err := s.publish(ctx, exchange, key, b)
	if err != nil && s.ch != nil && s.ch.IsClosed() {
		s.drop()
	}
	return err
}

// prepare declares the exchange, or checks it exists, once per name.
func (s *Sink) prepare(exchange string) error {
	if s.exchanges[exchange] || exchange == "" {
		return nil
	}
	declare := s.ch.ExchangeDeclare
	if !*s.cfg.Declare {
		declare = s.ch.ExchangeDeclarePassive
	}
	if err := declare(exchange, s.cfg.ExchangeType, true, false, false, false, nil); err != nil {
		s.drop() // a refused declaration closes the channel
		e := fmt.Errorf("rabbitmq %s: exchange %s: %s", s.host, exchange, redact.Text(err.Error()))
		if permanent(err) {
			return cdc.Permanent(e)
		}
		return e
	}
	s.exchanges[exchange] = true
	return nil
}

// permanent tells a broker refusal no retry changes.
func permanent(err error) bool {
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.Code {
	case amqp.FrameError:
		// amqp091 reports a connection it lost (a read or write that
		// failed or timed out: a broker that stopped answering) as a 501
		// of its own; only the broker's 501 is a frame it could not take.
		return ae.Server
	case amqp.AccessRefused, amqp.NotFound, amqp.PreconditionFailed, amqp.NotAllowed, amqp.SyntaxError, amqp.CommandInvalid:
		return true
	}
	return false
}

// publish publishes every message of b, then waits for the confirms,
// taking returned messages as they come.
func (s *Sink) publish(ctx context.Context, exchange, key string, b *cdc.Batch) error {
	seq := strconv.FormatInt(b.Snapshot.SequenceNumber, 10)
	snap := strconv.FormatInt(b.Snapshot.ID, 10)
	now := time.Now()
	confirms := make([]*amqp.DeferredConfirmation, 0, len(b.Messages))
	var returned []amqp.Return
	for i := range b.Messages {
		m := &b.Messages[i]
		h := amqp.Table{HeaderID: m.ID, HeaderOp: string(m.Op), HeaderSequence: seq, HeaderSnapshot: snap}
		if m.Key != nil {
			if utf8.Valid(m.Key) {
				h[HeaderKey] = string(m.Key)
			} else {
				h[HeaderKey] = m.Key
			}
		}
		for _, x := range m.Headers {
			h[x.Key] = string(x.Value)
		}
		dc, err := s.ch.PublishWithDeferredConfirmWithContext(ctx, exchange, key, *s.cfg.Mandatory, false, amqp.Publishing{
			Headers: h, ContentType: s.cfg.ContentType, DeliveryMode: amqp.Persistent, MessageId: m.ID,
			Timestamp: now, AppId: "icecdc", Body: m.Value,
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return s.failed(exchange, key, b, i, err)
		}
		confirms = append(confirms, dc)
	}
	timeout := time.NewTimer(s.cfg.Timeout)
	defer timeout.Stop()
	for i, dc := range confirms {
	wait:
		for {
			select {
			case <-dc.Done():
				break wait
			case r := <-s.returns:
				returned = append(returned, r)
			case e := <-s.closes:
				if e == nil {
					e = amqp.ErrClosed
				}
				return s.failed(exchange, key, b, i, e)
			case <-ctx.Done():
				return ctx.Err()
			case <-timeout.C:
				return fmt.Errorf("rabbitmq %s: exchange %s: %d of %d messages not confirmed within %s", s.host, exchange, len(confirms)-i, len(confirms), s.cfg.Timeout)
			}
		}
		if !dc.Acked() {
			if s.ch.IsClosed() {
				return s.failed(exchange, key, b, i, amqp.ErrClosed)
			}
			return fmt.Errorf("rabbitmq %s: exchange %s: %s: the broker refused the message (nack)", s.host, exchange,
				sinkkind.DescribeEvent(&b.Table, b.Snapshot.SequenceNumber, &b.Messages[i]))
		}
	}
	for {
		select {
		case r := <-s.returns:
			returned = append(returned, r)
			continue
		default:
		}
		break
	}
	if len(returned) > 0 {
		r := returned[0]
		for i := range b.Messages {
			if b.Messages[i].ID == r.MessageId {
				return cdc.Permanent(fmt.Errorf("rabbitmq %s: exchange %s, routing key %s: %s: returned %d %s: no queue takes it (bind one, or set mandatory: false)",
					s.host, exchange, key, sinkkind.DescribeEvent(&b.Table, b.Snapshot.SequenceNumber, &b.Messages[i]), r.ReplyCode, r.ReplyText))
			}
		}
	}
	return nil
}

// failed is the error of message i's publish or confirm.
func (s *Sink) failed(exchange, key string, b *cdc.Batch, i int, err error) error {
	// A publish on a channel the broker has just closed fails with 504
	// (channel not open) before the close's reason reaches NotifyClose
	// (amqp091 marks the channel closed first): that reason (404 for a
	// deleted exchange, say), not the 504, says whether a retry helps.
	var ae *amqp.Error
	if errors.As(err, &ae) && ae.Code == amqp.ChannelError && s.ch != nil && s.ch.IsClosed() {
		select {
		case reason, ok := <-s.closes:
			if ok && reason != nil {
				err = reason
			}
		case <-time.After(time.Second):
		}
	}
	e := fmt.Errorf("rabbitmq %s: exchange %s, routing key %s: %s: %s", s.host, exchange, key,
		sinkkind.DescribeEvent(&b.Table, b.Snapshot.SequenceNumber, &b.Messages[i]), redact.Text(err.Error()))
	if permanent(err) {
		return cdc.Permanent(e)
	}
	return e
}
