package cdc

import (
	"context"
	"errors"
	"fmt"

	"github.com/icecdc/icecdc/snapreq"
)

// Checkpoint is a position in one table's change stream. Events of the
// snapshot with sequence number Seq are delivered up to, not including,
// Next; Done says the whole snapshot is delivered, so the stream resumes
// after Seq. Checkpoints compare by (Seq, Initial before stream, Done, Next).
type Checkpoint struct {
	TableUUID   string `json:"table_uuid"`
	SnapshotID  int64  `json:"snapshot_id"`
	Seq         int64  `json:"sequence_number"`
	Next        int    `json:"event_index"`
	Done        bool   `json:"done"`
	TimestampMs int64  `json:"commit_ts_ms,omitempty"` // commit time of the snapshot
	// Initial marks a position inside the initial read of snapshot
	// SnapshotID (start: initial): Next counts the r events delivered.
	Initial bool `json:"initial,omitempty"`
	// Net marks a position inside the net changes (TableSpec.Net) of the
	// snapshots with NetFrom < sequence number <= Seq: Next counts the net
	// events delivered, and a restart computes the same range again. A
	// position that completes the range is a plain Done one.
	Net     bool  `json:"net,omitempty"`
	NetFrom int64 `json:"net_from_sequence_number,omitempty"`
	// Resync marks an initial read that re-emits the head after the
	// table's history from the checkpoint was lost (on_history_loss:
	// resync): its events carry source.resync.
	Resync bool `json:"resync,omitempty"`
	// Epoch counts the deliberate restarts of the table's stream at a
	// position that does not follow the previous one: a resync and an
	// on-demand snapshot each begin a new epoch. Positions compare by
	// epoch first.
	Epoch int64 `json:"epoch,omitempty"`
	// Signal is the id of the request that began the epoch's on-demand
	// snapshot (snapreq.SnapshotRequest.ID), kept for the rest of the
	// epoch so that the request read again is not read twice.
	Signal string `json:"signal,omitempty"`
	// SignalMark is where the last signal this table took came from
	// (snapreq.SnapshotRequest.Mark), kept in every later position: a
	// table takes a signal topic's requests in the topic's order, so a
	// request at or below the mark, read again after a restart or a move,
	// was taken.
	SignalMark *snapreq.SignalMark `json:"signal_mark,omitempty"`
	// Kind, Filter and Paused describe the on-demand snapshot being read
	// (Initial): its kind for notices, its row filter, and a pause.
	Kind   string `json:"snapshot_kind,omitempty"`
	Filter string `json:"filter,omitempty"`
	Paused bool   `json:"paused,omitempty"`
}

// Before reports whether c is an earlier position than o.
func (c Checkpoint) Before(o Checkpoint) bool {
	if c.Epoch != o.Epoch {
		return c.Epoch < o.Epoch
	}
	if c.Seq != o.Seq {
		return c.Seq < o.Seq
	}
	if c.Initial != o.Initial {
		return c.Initial // the initial read of a snapshot precedes its stream
	}
	if c.Done != o.Done {
		return !c.Done
	}
	return c.Next < o.Next
}

func (c Checkpoint) String() string {
	if c.Initial {
		return fmt.Sprintf("%s@%d(initial read of snapshot %d, next row %d)", c.TableUUID, c.Seq, c.SnapshotID, c.Next)
	}
	if c.Done {
		return fmt.Sprintf("%s@%d(snapshot %d, done)", c.TableUUID, c.Seq, c.SnapshotID)
	}
	if c.Net {
		return fmt.Sprintf("%s@%d(net changes after sequence number %d up to snapshot %d, next event %d)", c.TableUUID, c.Seq, c.NetFrom, c.SnapshotID, c.Next)
	}
	return fmt.Sprintf("%s@%d(snapshot %d, next event %d)", c.TableUUID, c.Seq, c.SnapshotID, c.Next)
}

// Message is one encoded event, ready for a sink.
type Message struct {
	ID string // stable event id: <table_uuid>:<seq>:<row_id>:<op>
	Op Op
	// Index is the event's position inside its snapshot (Event.Index),
	// which orders a key's events within one sequence number.
	Index int
	Key   []byte
	Value []byte
	// Headers are record headers the format adds after the sink's own
	// (RecordShaper); nil for most formats.
	Headers []Header
}

// Where a record carries its event id (Message.ID) for its consumer, the
// same on every sink: a transport with headers carries it in the header
// EventIDHeader (Kafka's "id", beside CloudEvents' ce_id when on), one
// without headers as the member EventIDField of the JSON value
// (Message.AppendValueWithID): file and stdout lines, webhook bodies,
// OpenSearch documents. A tombstone, which is not an event, has none.
const (
	EventIDHeader = "id"
	EventIDField  = "__event_id"
)

// AppendValueWithID appends m.Value to dst with the event id added as the
// last member of the envelope (or flattened row) it is, EventIDField:
// {…,"__event_id":"<id>"}, inside payload when e.ValuePayload. A value
// that is no JSON object (a tombstone's nil, a flattened delete's null, a
// Connect payload of null, Avro bytes) is appended as it is. The value is
// expected as the encoders write it; trailing white space is dropped.
func (e Encoding) AppendValueWithID(dst []byte, m *Message) []byte {
	start := len(dst)
	dst = append(dst, m.Value...)
	return e.AddEventID(dst, start, m.ID)
}

// AddEventID adds the event id to the value buf[start:] (the end of buf)
// in place, as AppendValueWithID does, and returns buf.
func (e Encoding) AddEventID(buf []byte, start int, id string) []byte {
	end := trimJSONSpace(buf, start, len(buf))
	if end-start < 2 || buf[start] != '{' || buf[end-1] != '}' {
		return buf
	}
	closing := end - 1 // the brace that closes the object the id goes in
	if e.ValuePayload {
		// {"schema":…,"payload":{…}}: payload's brace, before the outer one.
		closing = trimJSONSpace(buf, start, closing) - 1
		if closing <= start || buf[closing] != '}' {
			return buf // a payload of null
		}
	}
	tail := "}" // what closed the value, white space left out
	if e.ValuePayload {
		tail = "}}"
	}
	buf = buf[:closing]
	if prev := trimJSONSpace(buf, start, closing); buf[prev-1] != '{' {
		buf = append(buf, ',')
	}
	buf = append(buf, `"`+EventIDField+`":"`...)
	if plainJSON(id) {
		buf = append(buf, id...)
		buf = append(buf, '"')
		return append(buf, tail...)
	}
	for i := 0; i < len(id); i++ {
		// Ids are ASCII without quotes (a uuid, digits, a letter); escape
		// what JSON needs escaped anyway.
		switch c := id[i]; {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c < 0x20:
			buf = append(buf, `\u00`...)
			buf = append(buf, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			buf = append(buf, c)
		}
	}
	buf = append(buf, '"')
	return append(buf, tail...)
}

// plainJSON reports whether s needs no escaping in a JSON string.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// trimJSONSpace returns end less the JSON white space before it, not
// before start.
func trimJSONSpace(buf []byte, start, end int) int {
	for end > start {
		switch buf[end-1] {
		case ' ', '\n', '\r', '\t':
			end--
		default:
			return end
		}
	}
	return end
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte // nil: a null value
}

// Batch is a chunk of one snapshot's events, in order. Once a sink
// confirmed it, the table's position is Checkpoint.
type Batch struct {
	Table      TableInfo
	Snapshot   SnapshotInfo
	Messages   []Message
	Checkpoint Checkpoint
	// SchemaChange, when set, is the encoded record of the snapshot's
	// schema change (Pipeline.SchemaChanges), on the batch that starts the
	// snapshot, which may then hold no message: the sink writes it before
	// the messages, to its schema-change topic.
	SchemaChange *Message
}

// Sink delivers batches. Implementations live in sinks/.
type Sink interface {
	// Write delivers every message of b, in order, and returns only once
	// the destination confirmed all of them (then the pipeline may store
	// b.Checkpoint), or an error. An error wrapping ErrPermanent stops the
	// table; any other error is retried by the pipeline from the last
	// checkpoint. Write is called for one table at a time per goroutine;
	// batches of one table arrive in stream order.
	Write(ctx context.Context, b *Batch) error
	// Close drains what is in flight and releases the sink.
	Close(ctx context.Context) error
}

// NonRetainingSink is a sink that keeps no part of a batch (its messages'
// bytes, its lines) once Write returned: it writes them out or copies
// them. The pipeline then encodes the next batch into the same buffers.
type NonRetainingSink interface {
	Sink
	RetainsNoBatch()
}

// CheckpointSink is a sink that stores checkpoints itself, atomically with
// the events (Kafka exactly-once). On start, its checkpoint is the truth.
type CheckpointSink interface {
	Sink
	// Restore returns the last checkpoint committed for the table, if any.
	Restore(ctx context.Context, pipeline string, table TableInfo) (Checkpoint, bool, error)
}

// Rewinder is a Store that can move a table's checkpoint back. A
// CheckpointSink may confirm batches before it commits them with their
// checkpoint (the Iceberg sink commits per interval): after a crash its
// position is behind the store's, and the store follows it back.
type Rewinder interface {
	// Rewind stores cp even when it is earlier than the stored checkpoint,
	// and forgets what was recorded after it.
	Rewind(ctx context.Context, pipeline, table string, cp Checkpoint) error
}

// ErrPermanent marks an error that retrying cannot fix (HTTP 4xx, a
// message too large, an authorization failure, a table without lineage):
// the table stops.
var ErrPermanent = errors.New("not retried")

// ErrDisabled marks a destination that asked to be left alone (HTTP 410).
var ErrDisabled = errors.New("sink disabled by the destination")

// Store keeps checkpoints (state/ implements it on bbolt).
type Store interface {
	// Load returns the table's checkpoint in the pipeline, if any.
	Load(ctx context.Context, pipeline, table string) (Checkpoint, bool, error)
	// Save durably (fsynced) stores the table's checkpoint and, when it
	// completes a snapshot, records the snapshot in the bounded history.
	Save(ctx context.Context, pipeline, table string, cp Checkpoint) error
	// Close releases the store (and its file lock).
	Close() error
}
