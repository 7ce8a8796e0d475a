package kafka

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

var (
	_ cdc.Sink           = (*Sink)(nil)
	_ cdc.CheckpointSink = (*ExactlyOnceSink)(nil)
)

// errClosed is returned by Write after Close.
var errClosed = errors.New("kafka sink is closed")

// New returns the sink cfg asks for: a *Sink for at-least-once delivery,
// or an *ExactlyOnceSink, which also implements cdc.CheckpointSink. It
// does not contact the brokers; the first Write or Restore does.
func New(cfg Config) (cdc.Sink, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Delivery == ExactlyOnce {
		p, err := newProducer(cfg, kgo.TransactionalID(cfg.TransactionalID))
		if err != nil {
			return nil, err
		}
		return &ExactlyOnceSink{p: p, sem: make(chan struct{}, 1)}, nil
	}
	p, err := newProducer(cfg)
	if err != nil {
		return nil, err
	}
	return &Sink{p: p}, nil
}

// Sink delivers batches at least once. Writes for different tables may
// run concurrently; each waits only for its own records.
type Sink struct {
	p *producer
}

// Write produces every message of b and returns once the brokers acked
// all of them with acks=all, or with the first error. Records of one
// key go to one partition, and the idempotent producer keeps their order
// through its own retries, so a batch that Write confirms is in the topic
// in batch order per key; the next batch is produced only after that.
//
// On error some records of b may be in the topic: the pipeline replays
// from its checkpoint, and consumers drop the repeats by event id. An
// error wrapping cdc.ErrPermanent is one no retry can fix (a record over
// the broker's size limit, a refused ACL or credential).
//
// Write blocks while the cluster is unreachable: cancelling ctx fails the
// records not yet sent, and records already sent are waited for, because
// the idempotent producer cannot know whether the broker wrote them.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if s.p.closed.Load() {
		return errClosed
	}
	if len(b.Messages) == 0 && b.SchemaChange == nil {
		return nil
	}
	defer s.p.watch(ctx)()
	topic, err := s.p.ensureTopics(ctx, b)
	if err != nil {
		return err
	}
	return s.p.produceBatch(ctx, topic, b, nil)
}

// Close flushes what is buffered, waiting at most until ctx is done, and
// closes the client; records still unsent then fail their Write.
func (s *Sink) Close(ctx context.Context) error { return s.p.close(ctx) }

// producer is what both delivery modes share: the client, the topic
// template and the shape of records.
type producer struct {
	cfg  Config
	base []kgo.Opt // options for the clients Restore makes
	opts []kgo.Opt // options of the producing client
	// cl is swapped only by ExactlyOnceSink.renew, which runs with
	// every other user of the client excluded.
	cl atomic.Pointer[kgo.Client]

	closed atomic.Bool

	mu     sync.Mutex
	topics map[string]bool // topics that exist or whose creation was tried

	watchMu   sync.Mutex
	nextWatch int
	watchers  map[int]func(error) // retry reports of the Writes in progress; see watch
}

func newProducer(cfg Config, extra ...kgo.Opt) (*producer, error) {
	base, err := cfg.commonOpts()
	if err != nil {
		return nil, fmt.Errorf("kafka sink config: %w", err)
	}
	opts := append([]kgo.Opt{
		// The default already, restated because the delivery guarantee
		// rests on it: an ack means every in-sync replica has the record.
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}, append(cfg.producerOpts(), base...)...)
	p := &producer{cfg: cfg, base: base, topics: map[string]bool{}, watchers: map[int]func(error){}}
	p.opts = append(append(opts, extra...), kgo.WithHooks(brokerHooks{p}))
	cl, err := kgo.NewClient(p.opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	p.cl.Store(cl)
	return p, nil
}

func (p *producer) client() *kgo.Client { return p.cl.Load() }

// topic expands the topic template for a table and routes it.
func (p *producer) topic(t cdc.TableInfo) (string, error) { return TopicName(p.cfg, t) }

// TopicName returns the topic of a table's events under cfg's template
// (the default one when it is empty), routed by cfg.Route, as the sink
// writes them; formats that name things after the topic (schema registry
// subjects) use it.
func TopicName(cfg Config, t cdc.TableInfo) (string, error) {
	name := cfg.TopicOf(&t)
	if cfg.Route != nil {
		name = cfg.Route(name)
	}
	if err := validTopicName(name); err != nil {
		return "", cdc.Permanent(fmt.Errorf("topic of table %s.%s from template %q: %w", t.Namespace, t.Name, cfg.WithDefaults().Topic, err))
	}
	return name, nil
}

// TopicOf expands the topic template of c for a table, before Route.
func (c Config) TopicOf(t *cdc.TableInfo) string {
	return sinkkind.ExpandName(c.WithDefaults().Topic, t, c.Pipeline)
}

// ensureTopic creates topic on its first use. Creating it ourselves rather
// than relying on the broker's auto.create.topics.enable gives it the
// configured partitions and, for checkpoints, cleanup.policy=compact. A
// refusal (no CREATE permission, a creation policy) is logged and not
// returned: operators may have created the topic themselves, and if not,
// producing to it fails with an error of its own.
func (p *producer) ensureTopic(ctx context.Context, topic string, partitions int32, configs map[string]*string) error {
	p.mu.Lock()
	known := p.topics[topic]
	p.mu.Unlock()
	if known {
		return nil
	}
	resp, err := kadm.NewClient(p.client()).CreateTopic(ctx, partitions, p.cfg.TopicReplicationFactor, configs, topic)
	switch {
	case err == nil:
		attrs := []any{"topic", topic, "partitions", resp.NumPartitions}
		if len(configs) > 0 { // the broker's defaults otherwise
			attrs = append(attrs, "configs", configs)
		}
		p.cfg.Logger.Info("created kafka topic", attrs...)
	case errors.Is(err, kerr.TopicAlreadyExists):
	case resp.Topic == "":
		// The request itself failed: we know nothing about the topic.
		return classify(fmt.Errorf("create topic %s: %w", topic, err))
	default:
		p.cfg.Logger.Warn("cannot create kafka topic; producing to it anyway", "topic", topic, "err", err)
	}
	p.mu.Lock()
	p.topics[topic] = true
	p.mu.Unlock()
	return nil
}

// Header names of every event record.
const (
	headerID       = cdc.EventIDHeader
	headerOp       = "op"
	headerSequence = "sequence_number"
	headerSnapshot = "snapshot_id"
)

// ensureTransactionTopic creates the transaction topic, with one
// partition so that its records keep their order, when it is written.
func (p *producer) ensureTransactionTopic(ctx context.Context) error {
	if p.cfg.Transactions == nil {
		return nil
	}
	return p.ensureTopic(ctx, p.cfg.TransactionTopic, 1, nil)
}

// ensureTopics creates the topics b is written to, and returns the topic
// of its events ("" for a batch without any).
func (p *producer) ensureTopics(ctx context.Context, b *cdc.Batch) (string, error) {
	if b.SchemaChange != nil {
		if err := p.ensureTopic(ctx, p.schemaChangeTopic(), 1, nil); err != nil {
			return "", err
		}
	}
	if len(b.Messages) == 0 {
		return "", nil
	}
	topic, err := p.topic(b.Table)
	if err != nil {
		return "", err
	}
	if err := p.ensureTopic(ctx, topic, p.cfg.TopicPartitions, nil); err != nil {
		return "", err
	}
	return topic, p.ensureTransactionTopic(ctx)
}

// schemaChangeTopic returns the topic of schema-change records.
func (p *producer) schemaChangeTopic() string {
	if p.cfg.SchemaChangeTopic != "" {
		return p.cfg.SchemaChangeTopic
	}
	return DefaultSchemaChangeTopic
}

// transactionRecord encodes a transaction marker as a record of the
// transaction topic; nil for no marker.
func (p *producer) transactionRecord(m *cdc.TransactionMarker) *kgo.Record {
	if m == nil || p.cfg.Transactions == nil {
		return nil
	}
	return &kgo.Record{Topic: p.cfg.TransactionTopic,
		Key:   p.cfg.Transactions.AppendTransactionKey(nil, m),
		Value: p.cfg.Transactions.AppendTransactionValue(nil, m)}
}

// CloudEvents binary-mode headers (the Kafka protocol binding).
var (
	ceHeaders     = []string{"ce_specversion", "ce_id", "ce_source", "ce_type", "ce_time", "ce_subject", "content-type"}
	ceSpecVersion = []byte("1.0")
)

const ceTypePrefix = "io.icecdc.change."

// opValues holds every byte at its own index: an op header's value is a
// slice of it, where a one-byte array of its own cost an allocation per
// event (franz-go only reads header values).
var opValues = func() (a [256]byte) {
	for i := range a {
		a[i] = byte(i)
	}
	return a
}()

// records turns b's messages into records for topic, each delete followed
// by its tombstone when configured, between the batch's transaction
// markers when configured, and appends extra.
func (p *producer) records(topic string, b *cdc.Batch, extra *kgo.Record, rb *recordBufs) []*kgo.Record {
	begin, end := cdc.TransactionMarkers(b)
	n := len(b.Messages)
	tombstones := *p.cfg.Tombstones
	if tombstones {
		for i := range b.Messages {
			if b.Messages[i].Op == cdc.OpDelete {
				n++
			}
		}
	}
	// One backing array for records and one for headers: a batch is
	// produced and waited for as a unit, so they live and die together.
	recs := grow(rb.recs, n+4)
	if sc := b.SchemaChange; sc != nil {
		// Before the events it describes, as Debezium writes a DDL's
		// record before the changes that follow it.
		recs = append(recs, &kgo.Record{Topic: p.schemaChangeTopic(), Key: sc.Key, Value: sc.Value,
			Headers: []kgo.RecordHeader{{Key: headerID, Value: []byte(sc.ID)},
				{Key: headerSequence, Value: []byte(strconv.FormatInt(b.Snapshot.SequenceNumber, 10))},
				{Key: headerSnapshot, Value: []byte(strconv.FormatInt(b.Snapshot.ID, 10))}}})
	}
	if r := p.transactionRecord(begin); r != nil {
		recs = append(recs, r)
	}
	backing := grow(rb.backing, n)[:n]
	perEvent := 4
	var ceSource, ceTime, ceContentType []byte
	if p.cfg.CloudEvents {
		perEvent += len(ceHeaders)
		ceSource = []byte("icecdc/" + url.PathEscape(p.cfg.Pipeline) + "/" + url.PathEscape(b.Table.Namespace) + "." + url.PathEscape(b.Table.Name))
		ceTime = []byte(time.UnixMilli(b.Snapshot.TimestampMs).UTC().Format(time.RFC3339Nano))
		ceContentType = []byte(p.cfg.Encoding.Type())
	}
	idLen, extraHeaders := 0, 0
	for i := range b.Messages {
		idLen += len(b.Messages[i].ID)
		extraHeaders += len(b.Messages[i].Headers)
	}
	headers := grow(rb.headers, perEvent*len(b.Messages)+extraHeaders)
	ids := grow(rb.ids, idLen) // every id header of the batch, in one array
	seq := []byte(strconv.FormatInt(b.Snapshot.SequenceNumber, 10))
	snap := []byte(strconv.FormatInt(b.Snapshot.ID, 10))
	// One create time for the batch's records, the time it is handed to
	// the client: franz-go reads the clock for every record without one
	// (two a delete, with its tombstone), 2% of a Kafka run's CPU.
	now := time.Now()
	next := 0
	for i := range b.Messages {
		m := &b.Messages[i]
		h, id := len(headers), len(ids)
		ids = append(ids, m.ID...)
		headers = append(headers,
			kgo.RecordHeader{Key: headerID, Value: ids[id:len(ids):len(ids)]},
			kgo.RecordHeader{Key: headerOp, Value: opValues[m.Op : m.Op+1 : m.Op+1]},
			kgo.RecordHeader{Key: headerSequence, Value: seq},
			kgo.RecordHeader{Key: headerSnapshot, Value: snap},
		)
		if p.cfg.CloudEvents {
			headers = append(headers,
				kgo.RecordHeader{Key: "ce_specversion", Value: ceSpecVersion},
				kgo.RecordHeader{Key: "ce_id", Value: ids[id:len(ids):len(ids)]},
				kgo.RecordHeader{Key: "ce_source", Value: ceSource},
				kgo.RecordHeader{Key: "ce_type", Value: []byte(ceTypePrefix + m.Op.String())},
				kgo.RecordHeader{Key: "ce_time", Value: ceTime},
				kgo.RecordHeader{Key: "ce_subject", Value: p.cfg.Encoding.RowKey(m.Key)},
				kgo.RecordHeader{Key: "content-type", Value: ceContentType},
			)
		}
		for _, x := range m.Headers {
			headers = append(headers, kgo.RecordHeader{Key: x.Key, Value: x.Value})
		}
		r := &backing[next]
		next++
		r.Topic, r.Key, r.Value, r.Headers, r.Timestamp = topic, m.Key, m.Value, headers[h:len(headers):len(headers)], now
		recs = append(recs, r)
		if tombstones && m.Op == cdc.OpDelete {
			// No headers: a tombstone is not an event, and an id
			// header would make consumers that drop repeated ids drop
			// it as a copy of the delete.
			recs = append(recs, p.tombstone(&backing[next], topic, m.Key, now))
			next++
		}
	}
	if r := p.transactionRecord(end); r != nil {
		recs = append(recs, r)
	}
	if extra != nil {
		recs = append(recs, extra)
	}
	rb.recs, rb.backing, rb.headers, rb.ids = recs, backing, headers, ids
	return recs
}

// tombstone fills t as the tombstone of a delete of key.
func (p *producer) tombstone(t *kgo.Record, topic string, key []byte, now time.Time) *kgo.Record {
	t.Topic, t.Key, t.Timestamp = topic, key, now
	if len(p.cfg.TombstoneHeaders) > 0 {
		t.Headers = make([]kgo.RecordHeader, len(p.cfg.TombstoneHeaders))
		for i, x := range p.cfg.TombstoneHeaders {
			t.Headers[i] = kgo.RecordHeader{Key: x.Key, Value: x.Value}
		}
	}
	return t
}

// recordBufs are the arrays a batch's records are built in (records),
// kept for a later batch once produce returned: ProduceSync returns only
// once every record's promise ran, and franz-go reads a record no more
// after that. A Write allocated about 500 bytes per event in them, and
// the collector's work to take them back cost more than building them.
type recordBufs struct {
	recs    []*kgo.Record
	backing []kgo.Record
	headers []kgo.RecordHeader
	ids     []byte
}

var recordPool = sync.Pool{New: func() any { return new(recordBufs) }}

// grow returns s emptied with room for n elements, its own array when
// that is large enough: the arrays are filled without growing again, as
// records' headers are slices of one array.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s[:0]
}

// produceBatch produces b's records (with extra, when not nil) and waits
// for every one of them.
func (p *producer) produceBatch(ctx context.Context, topic string, b *cdc.Batch, extra *kgo.Record) error {
	rb := recordPool.Get().(*recordBufs)
	err := p.produce(ctx, p.records(topic, b, extra, rb))
	// Nothing of the batch is kept past its Write: not its bytes (the
	// pipeline reuses them) nor the records.
	clear(rb.recs)
	clear(rb.backing)
	clear(rb.headers)
	recordPool.Put(rb)
	return err
}

// produce produces recs and waits for every one of them. ProduceSync is
// Produce with a promise per record plus a wait for all promises, and it
// stops the linger of just the partitions it used, so a Write does not
// wait for other tables' records as a Flush would.
func (p *producer) produce(ctx context.Context, recs []*kgo.Record) error {
	results := p.client().ProduceSync(ctx, recs...)
	var first, permanent *kgo.ProduceResult
	failed := 0
	for i := range results {
		r := &results[i]
		if r.Err == nil {
			continue
		}
		failed++
		if first == nil {
			first = r
		}
		if permanent == nil && isPermanent(r.Err) {
			permanent = r
		}
	}
	if first == nil {
		return nil
	}
	if permanent != nil {
		first = permanent
	}
	return classify(fmt.Errorf("produce %s to %s[%d] (%d of %d records failed): %w",
		describe(first.Record), first.Record.Topic, first.Record.Partition, failed, len(recs), first.Err))
}

// describe names a record in an error by its event id.
func describe(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == headerID {
			return "event " + string(h.Value)
		}
	}
	if r.Value == nil {
		return "tombstone"
	}
	return "record"
}

// close flushes, then closes the client whatever the flush returned.
func (p *producer) close(ctx context.Context) error {
	if !p.closed.CompareAndSwap(false, true) {
		return nil
	}
	cl := p.client()
	err := cl.Flush(ctx)
	cl.Close()
	if err != nil {
		return fmt.Errorf("close kafka sink: flush: %w", err)
	}
	return nil
}

// RetainsNoBatch says that Write keeps nothing of a batch once it
// returned: ProduceSync returns only once every record's promise ran, and
// franz-go reads a record's bytes no more after that.
func (s *Sink) RetainsNoBatch() {}
