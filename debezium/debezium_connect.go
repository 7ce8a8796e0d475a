package debezium

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
)

// ConnectJSON encodes events as Kafka Connect's JsonConverter
// writes Debezium's change events with schemas.enable=true (its default):
// key and value are each {"schema": …, "payload": …}, the schemas derived
// from the event's Iceberg schema, with Debezium's logical types per
// ConnectOptions. Connect sinks and Debezium consumers read them as they
// read Debezium's own topics.
//
// The payload is the debezium-json envelope plus ts_us, ts_ns and
// source.sequence, with values in Connect's form. Create it with
// NewConnectJSON; it may be used from several goroutines.
type ConnectJSON struct {
	Envelope
	opts  ConnectOptions
	cache *connectCache
}

// NewConnectJSON returns the format with opts (zero fields take
// Debezium's defaults), or an error naming a bad mode. The format caches
// what it derives from schemas and commits, for itself alone.
func NewConnectJSON(env Envelope, opts ConnectOptions) (*ConnectJSON, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &ConnectJSON{Envelope: env, opts: opts.withDefaults(), cache: &connectCache{}}, nil
}

// Options returns the format's options, with their defaults applied.
func (f *ConnectJSON) Options() ConnectOptions { return f.opts }

// connectTable is what the format derives once per schema and table: the
// compiled row, and the key and value prefixes up to the payload.
type connectTable struct {
	row         *jsonSchema
	valuePrefix []byte // {"schema":<envelope>,"payload":
	keyNames    []string
	key         *jsonKey
	keyPrefix   []byte // {"schema":<key>,"payload":
	err         error  // a column the format cannot express
	// rowSchema is the Value struct's schema, open (see
	// connectSchemaOpen); flat caches the flattened value's prefix.
	rowSchema []byte
	flat      *atomic.Pointer[connectFlat]
	// avroValue and avroKey hold the registered Avro schemas of the
	// envelope and the key, for the debezium-avro format that owns this
	// format; a new key layout has a slot of its own.
	avroValue, avroKey *atomic.Pointer[avroSchema]
}

type connectCacheKey struct {
	schema          *iceberg.Schema
	namespace, name string
}

// connectCache holds the derived schemas of the tables an encoder saw.
// Schemas change rarely and events are many; the map is bounded so that
// a daemon that reloads table metadata on every poll does not grow it.
type connectCache struct {
	mu     sync.Mutex
	tables map[connectCacheKey]*connectTable
	// recent holds the tables found last, a few slots chosen by schema
	// id and name, read without the lock: every event asks for its table
	// twice (key and value), and the lock and the map's hashing of two
	// names cost more than the rest of a small key.
	recent [16]atomic.Pointer[connectHit]
	// connCommits holds the envelope parts of the commits being encoded.
	connCommits connectCommits
}

// connectHit is an entry of connectCache.recent.
type connectHit struct {
	key connectCacheKey
	ct  *connectTable
}

const connectCacheMax = 256

func (f *ConnectJSON) table(t *cdc.TableInfo) (*connectTable, error) {
	if t.Schema == nil {
		return nil, errNoSchema
	}
	k := connectCacheKey{t.Schema, t.Namespace, t.Name}
	slot := &f.cache.recent[uint(t.Schema.ID+len(t.Namespace)+len(t.Name))%uint(len(f.cache.recent))]
	if h := slot.Load(); h != nil && h.key == k && slices.Equal(h.ct.keyNames, t.KeyFields) {
		return h.ct, nil
	}
	ct, err := f.tableLocked(k, t)
	if err == nil {
		slot.Store(&connectHit{key: k, ct: ct})
	}
	return ct, err
}

// tableLocked finds or compiles the table of k under the cache's lock.
func (f *ConnectJSON) tableLocked(k connectCacheKey, t *cdc.TableInfo) (*connectTable, error) {
	c := f.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.tables[k]
	if !ok {
		if c.tables == nil || len(c.tables) >= connectCacheMax {
			c.tables = map[connectCacheKey]*connectTable{}
		}
		ct = f.compile(t)
		c.tables[k] = ct
	}
	if ct.err != nil {
		return nil, ct.err
	}
	if ct.keyPrefix == nil || !slices.Equal(ct.keyNames, t.KeyFields) {
		// A new layout replaces the entry rather than change it under
		// an encoder that holds it.
		next := *ct
		if err := f.compileKey(&next, t); err != nil {
			return nil, err
		}
		ct = &next
		c.tables[k] = ct
	}
	return ct, nil
}

func (f *ConnectJSON) schemaName(t *cdc.TableInfo, suffix string) string {
	return f.opts.Prefix + "." + t.Namespace + "." + t.Name + "." + suffix
}

func (f *ConnectJSON) compile(t *cdc.TableInfo) *connectTable {
	ct := &connectTable{row: compileJSONSchema(t.Schema)}
	row, err := connectSchemaOpen(nil, &ct.row.row, true, &f.opts, "")
	if err != nil {
		ct.err = fmt.Errorf("table %s.%s: %w", t.Namespace, t.Name, err)
		return ct
	}
	row = append(row, `,"name":`...)
	row = appendJSONString(row, f.schemaName(t, "Value"))
	ct.rowSchema, ct.flat, ct.avroValue = row, new(atomic.Pointer[connectFlat]), new(atomic.Pointer[avroSchema])
	v := append([]byte(nil), `{"schema":`...)
	v = connectEnvelopeSchema(v, row, f.schemaName(t, "Envelope"))
	ct.valuePrefix = append(v, `,"payload":`...)
	return ct
}

func (f *ConnectJSON) compileKey(ct *connectTable, t *cdc.TableInfo) error {
	k := append([]byte(nil), `{"schema":{"type":"struct","fields":[`...)
	var key *jsonKey
	if len(t.KeyFields) == 0 {
		k = connectField(k, "int64", false, "_row_id")
	} else {
		var err error
		if key, err = ct.row.key(t.Schema, t.KeyFields); err != nil {
			return err
		}
		for i, p := range key.parts {
			if i > 0 {
				k = append(k, ',')
			}
			if k, err = connectSchemaOpen(k, p.typ, false, &f.opts, p.name); err != nil {
				return fmt.Errorf("table %s.%s: key: %w", t.Namespace, t.Name, err)
			}
			k = append(k, `,"field":`...)
			k = appendJSONString(k, p.name)
			k = append(k, '}')
		}
	}
	k = append(k, `],"optional":false,"name":`...)
	k = appendJSONString(k, f.schemaName(t, "Key"))
	k = append(k, `},"payload":`...)
	ct.key, ct.keyNames, ct.keyPrefix = key, append([]string(nil), t.KeyFields...), k
	ct.avroKey = new(atomic.Pointer[avroSchema])
	return nil
}

// AppendKey appends the event's key: the table's key fields (or _row_id)
// as a Connect struct named <prefix>.<namespace>.<table>.Key. On error it
// returns dst unchanged.
func (f *ConnectJSON) AppendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	out, err := f.appendKey(dst, c, e)
	if err != nil {
		return dst, fmt.Errorf("encode key of event %s: %w", eventID(c, e), err)
	}
	return out, nil
}

func (f *ConnectJSON) appendKey(dst []byte, c *cdc.Commit, e *cdc.Event) ([]byte, error) {
	ct, err := f.table(&c.Table)
	if err != nil {
		return dst, err
	}
	dst = append(dst, ct.keyPrefix...)
	if ct.key == nil {
		dst = append(dst, `{"_row_id":`...)
		dst = strconv.AppendInt(dst, e.RowID, 10)
		return append(dst, "}}"...), nil
	}
	im, err := keyImage(e, c.Table.Schema)
	if err != nil {
		return dst, err
	}
	if im.arrow != nil {
		if out, ok := ct.key.appendConnectArrow(dst, &ct.row.row, im.arrow, im.pos, &f.opts); ok {
			return out, nil
		}
		if im, err = im.materialized(); err != nil {
			return dst, err
		}
	}
	row := im.row
	for i := range ct.key.parts {
		p := &ct.key.parts[i]
		dst = append(dst, p.prefix...)
		v, err := p.lookup(row)
		if err != nil {
			return dst, err
		}
		if v == nil {
			// A key field is required in the key schema: a null there
			// (under a null struct) would make Connect refuse the record.
			return dst, &ValueError{Field: p.name, Type: p.typ.name, Want: "a value (key fields are required)", Got: "null"}
		}
		if dst, err = appendConnectValue(dst, p.typ, v, &f.opts); err != nil {
			return dst, err.(*ValueError).within(p.name)
		}
	}
	return append(dst, "}}"...), nil
}

// AppendValue appends the event's envelope with its schema, on one line;
// tsMs is the processing time. On error it returns dst unchanged.
func (f *ConnectJSON) AppendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	out, err := f.appendValue(dst, c, e, tsMs)
	if err != nil {
		return dst, fmt.Errorf("encode event %s: %w", eventID(c, e), err)
	}
	return out, nil
}

func (f *ConnectJSON) appendValue(dst []byte, c *cdc.Commit, e *cdc.Event, tsMs int64) ([]byte, error) {
	if err := validEvent(e); err != nil {
		return dst, err
	}
	ct, err := f.table(&c.Table)
	if err != nil {
		return dst, err
	}
	row := &ct.row.row
	before, after, err := images(e, c.Table.Schema, false)
	if err != nil {
		return dst, err
	}
	dst = append(dst, ct.valuePrefix...)
	dst = append(dst, `{"before":`...)
	if dst, err = row.appendConnectImage(dst, before, &f.opts); err != nil {
		return dst, fmt.Errorf("before: %w", err)
	}
	dst = append(dst, `,"after":`...)
	if dst, err = row.appendConnectImage(dst, after, &f.opts); err != nil {
		return dst, fmt.Errorf("after: %w", err)
	}
	cc := f.cache.connCommits.get(c, &f.Envelope)
	dst = append(dst, cc.head...) // source … ts_ms
	dst = append(dst, snapshotMarkers[e.Snapshot]...)
	if e.Resync {
		dst = append(dst, `,"resync":true`...)
	} else {
		dst = append(dst, `,"resync":null`...)
	}
	// sequence orders a table's events as Debezium's does: the commit's
	// sequence number, then the event's index inside it.
	dst = append(dst, cc.sequence...) // db, sequence up to the index
	dst = strconv.AppendInt(dst, int64(e.Index), 10)
	dst = append(dst, cc.times...) // ts_us, ts_ns
	cb := cc.commitBytes
	dst = appendSourceTail(dst, cb, e, true)
	dst = append(dst, `},"op":"`...)
	dst = append(dst, byte(e.Op), '"')
	dst = cc.appendTimes(dst, tsMs)
	order := int64(e.Index) + 1
	dst = append(dst, cb.transaction...)
	dst = strconv.AppendInt(dst, order, 10)
	dst = append(dst, `,"data_collection_order":`...)
	dst = strconv.AppendInt(dst, order, 10)
	return append(dst, "}}}"...), nil
}

// connectCommit holds the envelope's parts that depend on the commit (and
// the encoder's envelope) only, as commitBytes does for both JSON forms:
// five of an event's thirteen numbers are the commit's.
type connectCommit struct {
	*commitBytes
	key connectCommitKey
	// head is the source block up to the snapshot marker; sequence is
	// db and sequence up to the event's index; times closes sequence and
	// holds source's ts_us and ts_ns.
	head, sequence, times []byte
	// now holds the envelope's processing times last written, the same
	// for every event of a batch.
	now atomic.Pointer[connectNow]
}

// connectNow is the text of a processing time's ts_ms, ts_us and ts_ns.
type connectNow struct {
	ms   int64
	text []byte
}

// appendTimes appends the processing time's ts_ms, ts_us and ts_ns.
func (cc *connectCommit) appendTimes(dst []byte, ms int64) []byte {
	if n := cc.now.Load(); n != nil && n.ms == ms {
		return append(dst, n.text...)
	}
	start := len(dst)
	dst = appendConnectTimes(dst, ms)
	cc.now.Store(&connectNow{ms: ms, text: append([]byte(nil), dst[start:]...)})
	return dst
}

type connectCommitKey struct {
	commitKey
	catalog string
	tsMs    int64
}

// connectCommits is commitCache for connectCommit.
type connectCommits struct {
	slots [16]atomic.Pointer[connectCommit]
}

func (cc *connectCommits) get(c *cdc.Commit, env *Envelope) *connectCommit {
	slot := &cc.slots[uint64(c.Snapshot.ID^c.Snapshot.SequenceNumber)%uint64(len(cc.slots))]
	k := connectCommitKey{keyOf(c), c.Table.Catalog, c.Snapshot.TimestampMs}
	if cb := slot.Load(); cb != nil && cb.key == k {
		return cb
	}
	ms := c.Snapshot.TimestampMs
	h := append([]byte(nil), `,"source":{"version":`...)
	h = appendJSONString(h, env.Version)
	h = append(h, `,"connector":"icecdc","name":`...)
	h = appendJSONString(h, env.Pipeline)
	h = append(h, `,"ts_ms":`...)
	h = strconv.AppendInt(h, ms, 10)
	h = append(h, `,"snapshot":`...)
	q := append([]byte(nil), `,"db":`...)
	q = appendJSONString(q, c.Table.Catalog)
	q = append(q, `,"sequence":"[\"`...)
	q = strconv.AppendInt(q, c.Snapshot.SequenceNumber, 10)
	q = append(q, `\",\"`...)
	t := append([]byte(nil), `\"]","ts_us":`...)
	t = strconv.AppendInt(t, ms*1000, 10)
	t = append(t, `,"ts_ns":`...)
	t = strconv.AppendInt(t, ms*1_000_000, 10)
	cb := &connectCommit{commitBytes: newCommitBytes(c), key: k, head: h, sequence: q, times: t}
	slot.Store(cb)
	return cb
}

// appendConnectTimes appends the envelope's ts_ms, ts_us and ts_ns of
// the processing time ms. A time in microseconds or nanoseconds is the
// digits of its milliseconds and three or six zeros, so the number is
// formatted once.
func appendConnectTimes(dst []byte, ms int64) []byte {
	dst = append(dst, `,"ts_ms":`...)
	if ms == 0 || ms > math.MaxInt64/1_000_000 || ms < math.MinInt64/1_000_000 {
		dst = strconv.AppendInt(dst, ms, 10)
		dst = append(dst, `,"ts_us":`...)
		dst = strconv.AppendInt(dst, ms*1000, 10)
		dst = append(dst, `,"ts_ns":`...)
		return strconv.AppendInt(dst, ms*1_000_000, 10)
	}
	start := len(dst)
	dst = strconv.AppendInt(dst, ms, 10)
	end := len(dst)
	dst = append(dst, `,"ts_us":`...)
	dst = append(dst, dst[start:end]...)
	dst = append(dst, `000,"ts_ns":`...)
	dst = append(dst, dst[start:end]...)
	return append(dst, `000000`...)
}
