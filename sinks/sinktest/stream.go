package sinktest

import (
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/values"
)

// Stream makes the batches of one table's change stream, the way the
// pipeline hands them to a sink: each snapshot's events follow the change
// contract (deletes, then updates, then inserts), are encoded with
// debezium.JSON, keyed by the business key order_id, and carry stable
// ids <table_uuid>:<seq>:<row_id>:<op>. Keys repeat across events and
// snapshots, since that is where ordering matters: a row is inserted,
// updated, deleted, and its key re-inserted under a new row id in the same
// snapshot as the delete (an upsert through an equality delete). A Stream
// is not safe for concurrent use.
type Stream struct {
	// Table is the table the batches belong to.
	Table cdc.TableInfo
	// ValueBytes pads each value with a note field to about this many
	// bytes; an envelope without padding has about 600. Default 0: no
	// padding.
	ValueBytes int

	enc       debezium.JSON
	seq       int64
	snapID    int64
	nextRow   int64
	nextOrder int64
	live      []row // in insertion order; the oldest are deleted first
}

type row struct {
	id, order int64
	status    string
	cents     int64
}

// ordersSchema is the bookshop orders table of `icecdc demo`.
var ordersSchema = iceberg.NewSchemaWithIdentifiers(1, []int{1},
	iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "status", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.DecimalTypeOf(9, 2)},
	iceberg.NestedField{ID: 5, Name: "note", Type: iceberg.PrimitiveTypes.String},
)

// NewStream starts the stream of table namespace.name, with a random
// table uuid, at sequence number 1.
func NewStream(namespace, name string) *Stream {
	return &Stream{
		Table: cdc.TableInfo{
			Catalog:   "local",
			Namespace: namespace,
			Name:      name,
			UUID:      newUUID(),
			Schema:    ordersSchema,
			KeyFields: []string{"order_id"},
		},
		enc:       debezium.JSON{Envelope: debezium.Envelope{Pipeline: "sinktest", Version: "test"}},
		snapID:    4_000_000_000_000_000_000,
		nextOrder: 1000,
	}
}

// Snapshot returns the next snapshot's events, about n of them, as
// batches of at most chunk messages (chunk <= 0: one batch). A fifth of
// the live rows' worth are deleted and as many updated; the rest are
// inserts, the first of which reuses the key of the first delete.
func (s *Stream) Snapshot(n, chunk int) []*cdc.Batch {
	s.seq++
	s.snapID += 7919
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(s.seq) * time.Minute).UnixMilli()
	c := &cdc.Commit{
		Table: s.Table,
		Snapshot: cdc.SnapshotInfo{
			ID: s.snapID, SequenceNumber: s.seq, TimestampMs: ts,
			Operation: "overwrite", HasLineage: true,
		},
	}
	if s.seq > 1 {
		c.Snapshot.ParentID = s.snapID - 7919
	}
	nd := min(n/5, len(s.live))
	nu := min(n/5, len(s.live)-nd)
	ni := max(n-nd-nu, 0)

	var events []cdc.Event
	for _, r := range s.live[:nd] {
		events = append(events, cdc.Event{Op: cdc.OpDelete, RowID: r.id, LUSN: s.seq, Before: s.image(r)})
	}
	for i := range s.live[nd : nd+nu] {
		r := &s.live[nd+i]
		before := s.image(*r)
		r.status, r.cents = nextStatus(r.status), r.cents+100
		events = append(events, cdc.Event{Op: cdc.OpUpdate, RowID: r.id, LUSN: s.seq, Before: before, After: s.image(*r)})
	}
	reused := s.live[:nd]
	s.live = append([]row(nil), s.live[nd:]...)
	for i := range ni {
		r := row{id: s.nextRow, status: "placed", cents: 1999 + int64(i)}
		s.nextRow++
		if i == 0 && len(reused) > 0 {
			r.order = reused[0].order
		} else {
			r.order = s.nextOrder
			s.nextOrder++
		}
		s.live = append(s.live, r)
		events = append(events, cdc.Event{Op: cdc.OpCreate, RowID: r.id, LUSN: s.seq, After: s.image(r)})
	}
	for i := range events {
		events[i].Index = i
	}
	return s.batches(c, events, chunk)
}

// Empty returns the batch of a snapshot without events (a compaction, an
// expired range): a sink writes nothing for it, but it moves the
// checkpoint.
func (s *Stream) Empty() *cdc.Batch {
	s.seq++
	s.snapID += 7919
	return &cdc.Batch{
		Table:      s.Table,
		Snapshot:   cdc.SnapshotInfo{ID: s.snapID, SequenceNumber: s.seq, Operation: "replace", HasLineage: true},
		Checkpoint: cdc.Checkpoint{TableUUID: s.Table.UUID, SnapshotID: s.snapID, Seq: s.seq, Done: true},
	}
}

func (s *Stream) batches(c *cdc.Commit, events []cdc.Event, chunk int) []*cdc.Batch {
	if chunk <= 0 {
		chunk = max(len(events), 1)
	}
	var out []*cdc.Batch
	for start := 0; start == 0 || start < len(events); start += chunk {
		end := min(start+chunk, len(events))
		b := &cdc.Batch{
			Table:    s.Table,
			Snapshot: c.Snapshot,
			Checkpoint: cdc.Checkpoint{
				TableUUID: s.Table.UUID, SnapshotID: c.Snapshot.ID, Seq: c.Snapshot.SequenceNumber,
				Next: end, Done: end == len(events), TimestampMs: c.Snapshot.TimestampMs,
			},
		}
		for i := start; i < end; i++ {
			b.Messages = append(b.Messages, s.message(c, &events[i]))
		}
		out = append(out, b)
	}
	return out
}

func (s *Stream) message(c *cdc.Commit, e *cdc.Event) cdc.Message {
	key, err := s.enc.AppendKey(nil, c, e)
	if err != nil {
		panic(fmt.Sprintf("sinktest: encode key: %v", err)) // the fixed schema cannot fail
	}
	tsMs := c.Snapshot.TimestampMs + 1000
	value, err := s.enc.AppendValue(nil, c, e, tsMs)
	if err != nil {
		panic(fmt.Sprintf("sinktest: encode value: %v", err))
	}
	if pad := s.ValueBytes - len(value); pad > 0 {
		// The note is in both images of an update, so it takes half the
		// padding there.
		if e.Before != nil && e.After != nil {
			pad /= 2
		}
		note := strings.Repeat("x", pad)
		for _, img := range []values.Row{e.Before, e.After} {
			if img != nil {
				img[4] = note
			}
		}
		value, _ = s.enc.AppendValue(nil, c, e, tsMs)
	}
	return cdc.Message{
		ID:    cdc.EventID(s.Table.UUID, c.Snapshot.SequenceNumber, e.RowID, e.Op),
		Op:    e.Op,
		Index: e.Index,
		Key:   key,
		Value: value,
	}
}

func (s *Stream) image(r row) values.Row {
	return values.Row{r.order, "customer-" + strconv.FormatInt(r.order%97, 10), r.status, values.Decimal{Unscaled: strconv.FormatInt(r.cents, 10), Scale: 2}, ""}
}

func nextStatus(s string) string {
	switch s {
	case "placed":
		return "paid"
	case "paid":
		return "shipped"
	default:
		return "delivered"
	}
}

// newUUID returns a random (version 4) UUID in its text form.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
