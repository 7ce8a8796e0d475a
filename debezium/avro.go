package debezium

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/avro"

	"github.com/icecdc/icecdc/cdc"
)

// Registry registers an Avro schema under a subject and returns its id,
// 1 to math.MaxInt32 (what the wire format's 4 bytes carry: registry.Client
// refuses any other); registry.Client is one. Its errors are marked
// cdc.Permanent (a refusal) or cdc.Retry (an outage), which the format
// passes on.
type Registry interface {
	Register(ctx context.Context, subject, schema string) (int, error)
	URL() string
}

// AvroOptions are the settings of the debezium-avro format beyond the
// Connect ones.
type AvroOptions struct {
	Registry Registry
	// Subject returns the subject of a record schema: topic is the topic
	// the record goes to, record the schema's full name (per the
	// registry's subject name strategy).
	Subject func(topic, record string, isKey bool) string
	// Topic returns the topic of a table's events.
	Topic func(t *cdc.TableInfo) (string, error)
	// TransactionTopic and SchemaChangeTopic name the topics of those
	// records (their subjects follow from them).
	TransactionTopic, SchemaChangeTopic string
	// HeartbeatTopic is the topic of the heartbeat records; empty: the
	// format writes none.
	HeartbeatTopic string
	// SchemaNames and FieldNames are Debezium's schema.name.adjustment.mode
	// and field.name.adjustment.mode; default none.
	SchemaNames, FieldNames NameAdjustment
}

// Avro encodes events as Kafka Connect's AvroConverter writes Debezium's
// change events: Confluent's wire format (byte 0, the schema id as 4
// bytes big-endian, the Avro binary body) for key and value, with the
// Avro schema AvroConverter derives from the Connect schema the
// debezium-connect-json format writes, registered once per table schema
// and subject. A consumer's AvroConverter reads back the Connect struct
// debezium-connect-json carries. Create it with NewAvro; it may be used
// from several goroutines.
type Avro struct {
	conn *ConnectJSON
	o    AvroOptions

	mu      sync.Mutex
	schemas map[avroCacheKey]*avroSchema

	txMu    sync.Mutex
	txKey   *avroSchema
	txValue *avroSchema

	commits avroCommits
}

// avroCacheKey names a derived schema: the record's role and the Connect
// schema's text, which holds the table's names.
type avroCacheKey struct {
	role   byte // 'k' key, 'v' value, 'K'/'V' schema change, 't'/'T' transaction, 'h'/'H' heartbeat
	schema string
}

// avroSchema is a Connect schema's Avro schema, registered.
type avroSchema struct {
	sch     *avro.Schema
	conv    *avroValue
	id      int
	header  [5]byte // the wire format's: 0 and the id
	subject string
}

// avroCacheMax bounds the derived schemas a format keeps, as the Connect
// format bounds its own.
const avroCacheMax = 512

// NewAvro returns the format, or an error naming a bad option.
func NewAvro(env Envelope, copts ConnectOptions, o AvroOptions) (*Avro, error) {
	conn, err := NewConnectJSON(env, copts)
	if err != nil {
		return nil, err
	}
	if err := o.SchemaNames.Validate("schema.name.adjustment.mode"); err != nil {
		return nil, err
	}
	if err := o.FieldNames.Validate("field.name.adjustment.mode"); err != nil {
		return nil, err
	}
	if o.Registry == nil || o.Subject == nil || o.Topic == nil {
		return nil, errors.New("debezium-avro: a schema registry and the topics are required")
	}
	return &Avro{conn: conn, o: o, schemas: map[avroCacheKey]*avroSchema{}}, nil
}

// Options returns the Connect options, with their defaults applied.
func (f *Avro) Options() ConnectOptions { return f.conn.opts }

var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// schema returns the registered Avro schema of a Connect schema text,
// deriving and registering it on first use. topic is called only then.
func (f *Avro) schema(role byte, connect []byte, isKey bool, topic func() (string, error), what string) (*avroSchema, error) {
	f.mu.Lock()
	s, ok := f.schemas[avroCacheKey{role, string(connect)}]
	f.mu.Unlock()
	if ok {
		return s, nil
	}
	var cs connectSchemaNode
	if err := json.Unmarshal(connect, &cs); err != nil {
		return nil, fmt.Errorf("%s: read the Connect schema: %w", what, err)
	}
	text, conv, err := deriveAvro(&cs, f.o.SchemaNames, f.o.FieldNames)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	sch, err := avro.Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: the derived Avro schema: %w", what, err)
	}
	t, err := topic()
	if err != nil {
		return nil, err
	}
	full := sch.Root().Name
	if sch.Root().Namespace != "" {
		full = sch.Root().Namespace + "." + full
	}
	subject := f.o.Subject(t, full, isKey)
	// The registry's own timeouts bound the call; a format is called
	// without a context, and a registration is rare.
	id, err := f.o.Registry.Register(context.Background(), subject, string(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s = &avroSchema{sch: sch, conv: conv, id: id, subject: subject}
	s.header[0] = 0
	binary.BigEndian.PutUint32(s.header[1:], uint32(id))
	f.mu.Lock()
	if len(f.schemas) >= avroCacheMax {
		clear(f.schemas)
	}
	f.schemas[avroCacheKey{role, string(connect)}] = s
	f.mu.Unlock()
	return s, nil
}

// transcode appends the wire form of a debezium-connect-json message.
func (f *Avro) transcode(dst, msg []byte, role byte, isKey bool, topic func() (string, error), what string) ([]byte, error) {
	connect, payload, ok := splitConnect(msg)
	if !ok {
		return dst, fmt.Errorf("%s: not a Connect message", what)
	}
	s, err := f.schema(role, connect, isKey, topic, what)
	if err != nil {
		return dst, err
	}
	return f.appendWire(dst, s, payload, func() string { return what })
}

// appendWire appends the header of s and the Avro body of payload; what
// names the record in an error.
func (f *Avro) appendWire(dst []byte, s *avroSchema, payload []byte, what func() string) ([]byte, error) {
	n := len(dst)
	dst = append(dst, s.header[:]...)
	sc := jsonScan{b: payload}
	out, err := s.conv.appendAvro(dst, &sc)
	if err == nil && sc.i != len(payload) {
		err = sc.fail("text after the payload")
	}
	if err != nil {
		return dst[:n], fmt.Errorf("%s: encode Avro (subject %s): %w", what(), s.subject, err)
	}
	return out, nil
}

func (f *Avro) tableTopic(t *cdc.TableInfo) func() (string, error) {
	return func() (string, error) { return f.o.Topic(t) }
}

// tableSchema returns the registered schema of an event's key ('k') or
// value ('v') and the Connect format's compiled table, deriving the
// schema from that table's Connect schema on first use. The compiled
// table keeps it, so that an event finds it without a map or a lock.
func (f *Avro) tableSchema(c *cdc.Commit, role byte) (*avroSchema, *connectTable, error) {
	ct, err := f.conn.table(&c.Table)
	if err != nil {
		return nil, nil, err
	}
	prefix, slot := ct.valuePrefix, ct.avroValue
	if role == 'k' {
		prefix, slot = ct.keyPrefix, ct.avroKey
	}
	if s := slot.Load(); s != nil {
		return s, ct, nil
	}
	const open, mid = len(`{"schema":`), len(`,"payload":`)
	s, err := f.schema(role, prefix[open:len(prefix)-mid], role == 'k', f.tableTopic(&c.Table), recordWhat(c, role))
	if err != nil {
		return nil, nil, err
	}
	if role == 'v' && !directEnvelope(s.conv) {
		return nil, nil, fmt.Errorf("%s: the envelope schema has fields the Avro writer does not know", recordWhat(c, role))
	}
	slot.Store(s)
	return s, ct, nil
}

// recordWhat names an event's key or value record in errors; it is
// called only when one needs it: a name per event is not free.
func recordWhat(c *cdc.Commit, role byte) string {
	if role == 'k' {
		return "key of " + tableWhat(&c.Table)
	}
	return tableWhat(&c.Table)
}

// avroErr names the record and the subject in an error of the Avro
// writer itself; a value the Connect form refuses is named as that form
// names it.
func avroErr(err error, s *avroSchema, c *cdc.Commit, role byte) error {
	if errors.Is(err, errAvroJSON) {
		return fmt.Errorf("%s: encode Avro (subject %s): %w", recordWhat(c, role), s.subject, err)
	}
	return err
}

// tableWhat names the table and its schema version in errors about its
// registered schemas.
func tableWhat(t *cdc.TableInfo) string {
	if t.Schema == nil {
		return "table " + t.Namespace + "." + t.Name
	}
	return fmt.Sprintf("table %s.%s schema %d", t.Namespace, t.Name, t.Schema.ID)
}

// AppendKey appends the event's key in the wire format. On error it
// returns dst unchanged.
func (f *Avro) AppendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	s, ct, err := f.tableSchema(c, 'k')
	if err == nil {
		var out []byte
		if out, err = f.appendKeyBody(append(dst, s.header[:]...), s.conv, ct, c, e); err == nil {
			return out, nil
		}
		err = avroErr(err, s, c, 'k')
	}
	return dst, fmt.Errorf("encode key of event %s: %w", eventID(c, e), err)
}

// AppendValue appends the event's envelope in the wire format; tsMs is
// the processing time. On error it returns dst unchanged.
func (f *Avro) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	err := f.transactionSchemas()
	if err == nil {
		var s *avroSchema
		var ct *connectTable
		if s, ct, err = f.tableSchema(c, 'v'); err == nil {
			var out []byte
			if out, err = f.appendEnvelope(append(dst, s.header[:]...), s.conv, ct, c, e, tsMs); err == nil {
				return out, nil
			}
			err = avroErr(err, s, c, 'v')
		}
	}
	return dst, fmt.Errorf("encode event %s: %w", eventID(c, e), err)
}

// EncodeSchemaChange encodes the schema-change record in the wire format.
func (f *Avro) EncodeSchemaChange(c *cdc.Commit, s *cdc.SchemaChange, tsMs int64) (key, value []byte, err error) {
	k, v, err := f.conn.EncodeSchemaChange(c, s, tsMs)
	if err != nil {
		return nil, nil, err
	}
	topic := func() (string, error) { return f.o.SchemaChangeTopic, nil }
	if key, err = f.transcode(nil, k, 'K', true, topic, "schema-change key"); err != nil {
		return nil, nil, err
	}
	if value, err = f.transcode(nil, v, 'V', false, topic, "schema-change record"); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// transactionSchemas registers the transaction records' schemas before
// the first event, when the format writes them: their encoders cannot
// fail, so whatever can fail happens where an error can be returned.
func (f *Avro) transactionSchemas() error {
	if f.o.TransactionTopic == "" {
		return nil
	}
	f.txMu.Lock()
	defer f.txMu.Unlock()
	if f.txKey != nil && f.txValue != nil {
		return nil
	}
	m := &cdc.TransactionMarker{Status: "BEGIN"}
	topic := func() (string, error) { return f.o.TransactionTopic, nil }
	k, _, _ := splitConnect(f.conn.AppendTransactionKey(nil, m))
	key, err := f.schema('t', k, true, topic, "transaction key")
	if err != nil {
		return err
	}
	v, _, _ := splitConnect(f.conn.AppendTransactionValue(nil, m))
	value, err := f.schema('T', v, false, topic, "transaction record")
	if err != nil {
		return err
	}
	f.txKey, f.txValue = key, value
	return nil
}

// AppendTransactionKey appends the marker's key in the wire format.
func (f *Avro) AppendTransactionKey(dst []byte, m *cdc.TransactionMarker) []byte {
	return f.appendTransaction(dst, f.conn.AppendTransactionKey(nil, m), 't', true)
}

// AppendTransactionValue appends the marker in the wire format.
func (f *Avro) AppendTransactionValue(dst []byte, m *cdc.TransactionMarker) []byte {
	return f.appendTransaction(dst, f.conn.AppendTransactionValue(nil, m), 'T', false)
}

func (f *Avro) appendTransaction(dst, msg []byte, role byte, isKey bool) []byte {
	topic := func() (string, error) { return f.o.TransactionTopic, nil }
	// The schemas were registered with the first event of the batch the
	// marker belongs to (transactionSchemas), so this answers from the
	// cache; the transaction schemas are fixed, so their values fit.
	out, err := f.transcode(dst, msg, role, isKey, topic, "transaction record")
	if err != nil {
		return dst
	}
	return out
}
