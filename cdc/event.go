package cdc

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// Op is the kind of a row event, with Debezium's letters.
type Op byte

const (
	OpCreate   Op = 'c' // a row id that appeared with lusn == s
	OpUpdate   Op = 'u' // a row id present before and after, with lusn == s
	OpDelete   Op = 'd' // a row id that disappeared
	OpSnapshot Op = 'r' // a row emitted by an initial read
)

// String returns the one-letter code used in the envelope and event ids.
func (o Op) String() string { return string(rune(o)) }

// Phase orders the ops inside one snapshot (docs/contract.md): deletes,
// then updates, then inserts.
func (o Op) Phase() int {
	switch o {
	case OpDelete:
		return 0
	case OpUpdate:
		return 1
	default:
		return 2
	}
}

// RowSlab hands out the new Rows of a chunk's shaped or projected images
// from shared arrays, a few allocations per chunk instead of one per
// image. Each Row is capped at its length, so an append to one never
// writes into the next.
type RowSlab struct{ free []any }

// slabValues is how many values one array of a RowSlab holds.
const slabValues = 4096

// Row returns a new Row of n nil values.
func (s *RowSlab) Row(n int) values.Row {
	if n > len(s.free) {
		if n > slabValues/4 {
			return make(values.Row, n)
		}
		s.free = make([]any, slabValues)
	}
	r := s.free[:n:n]
	s.free = s.free[n:]
	return values.Row(r)
}

// SnapshotMarker says whether an event comes from an initial read, and
// whether it is the read's last (Debezium's source.snapshot, which each
// format spells in its own way).
type SnapshotMarker uint8

const (
	SnapshotNone SnapshotMarker = iota // a streamed change
	SnapshotRead                       // a row of an initial read
	SnapshotLast                       // the last row of an initial read
)

// Event is one row-level change.
type Event struct {
	Op Op
	// Snapshot and Resync are set by the pipeline as it delivers the
	// event: Snapshot marks the rows of an initial read, Resync a read
	// that re-emits the head after the table's history was lost.
	Snapshot SnapshotMarker
	Resync   bool
	RowID    int64
	LUSN     int64      // effective _last_updated_sequence_number of the row image the event carries last
	Before   values.Row // nil for c and r
	After    values.Row // nil for d
	// BeforeArrow and AfterArrow, when set (and Before or After is nil),
	// hold the image as row BeforePos or AfterPos of a record batch's
	// columns: encoders read it there, and BeforeRow and AfterRow give it
	// as a Row. Code that reads images calls those (or HasBefore,
	// HasAfter), never Before and After alone.
	BeforeArrow *ArrowRows
	AfterArrow  *ArrowRows
	BeforePos   int
	AfterPos    int
	Index       int // position inside its snapshot, from 0
	// Source is set for updates paired from an equality delete and an
	// insert; it says so in the envelope.
	Source string
	// PairedRowID is the row id the equality delete removed, for a paired
	// update (RowID is the new row's id).
	PairedRowID int64
}

// TableInfo names a table and its identity.
type TableInfo struct {
	Catalog   string
	Namespace string
	Name      string
	UUID      string
	Schema    *iceberg.Schema // schema of the events (the snapshot's schema)
	KeyFields []string        // identifier fields, or empty for {_row_id}
	// MaskedFields are the top-level field ids whose values a column mask
	// or hash replaced (package shape): changed_fields never names them.
	MaskedFields []int
}

// ChangedFields returns the changed fields of an update (see the function
// ChangedFields) in t's schema, leaving out the masked ones.
func (t *TableInfo) ChangedFields(before, after values.Row) []string {
	ch := ChangedFields(t.Schema, before, after)
	if len(t.MaskedFields) == 0 {
		return ch
	}
	out := ch[:0]
	for _, p := range ch {
		top, _, _ := strings.Cut(p, ".")
		if f, ok := t.Schema.FindFieldByName(top); ok && slices.Contains(t.MaskedFields, f.ID) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// SnapshotInfo describes one snapshot on the followed branch.
type SnapshotInfo struct {
	ID             int64
	ParentID       int64 // 0 when none
	SequenceNumber int64
	TimestampMs    int64
	Operation      string
	HasLineage     bool // false for snapshots committed before the table carried row lineage
	SchemaID       int
	// Files is the data and delete files the snapshot adds or removes,
	// as its summary counts them; -1 when its summary does not.
	Files int
}

// Commit is the ordered events of one snapshot.
type Commit struct {
	Table     TableInfo
	Snapshot  SnapshotInfo
	Events    []Event
	Anomalies []Anomaly
	// Rest, when set, yields the events after Events, in order and a
	// batch at a time, starting at index from: a commit too large to hold
	// (a bulk append) streams its inserts instead of holding them. Total
	// is then the number of all events.
	Rest  func(ctx context.Context, from int, yield func([]Event) error) error
	Total int
	// SchemaChange, when set, is the change of the table's schema this
	// snapshot brings (nil: the parent's schema is kept).
	SchemaChange *SchemaChange
	// FileEnds, for a read whose events come data file after data file
	// (an initial read), is the event index at which each file's events
	// end, ascending: the files done follow the events delivered.
	FileEnds []int
}

// Len returns the number of events of the commit.
func (c *Commit) Len() int {
	if c.Rest != nil {
		return c.Total
	}
	return len(c.Events)
}

// EachBatch calls fn with the commit's events from index from on, in
// order, in batches.
func (c *Commit) EachBatch(ctx context.Context, from int, fn func([]Event) error) error {
	if from < len(c.Events) {
		if err := fn(c.Events[from:]); err != nil {
			return err
		}
		from = len(c.Events)
	}
	if c.Rest != nil && from < c.Total {
		return c.Rest(ctx, from, fn)
	}
	return nil
}

// Materialize brings every event into Events (for small consumers and tests).
func (c *Commit) Materialize(ctx context.Context) error {
	if c.Rest == nil {
		return nil
	}
	// Total comes from metadata: grow as events arrive, not all at once.
	all := make([]Event, 0, min(c.Total, 1<<12))
	if err := c.EachBatch(ctx, 0, func(evs []Event) error { all = append(all, evs...); return nil }); err != nil {
		return err
	}
	if len(all) != c.Total {
		return fmt.Errorf("snapshot %d: streamed %d events, expected %d", c.Snapshot.ID, len(all), c.Total)
	}
	c.Events, c.Rest, c.Total = all, nil, 0
	return nil
}

// Anomaly is a lineage inconsistency found while classifying a commit: it is
// logged and counted, and never turned into an event.
type Anomaly struct {
	Kind     string // "duplicate-row-id", "moved-without-removal", ...
	File     string
	Position int64
	RowID    int64
	// Detail, for a commit-wide anomaly (NotPaired), says what it counts.
	Detail string
}

// NotPaired is the anomaly of a keyed table's commit that removed and
// added more rows than a commit holds (max_held_rows): its deletes and
// inserts were not paired by key into updates (docs/contract.md). Its
// events are still right by row id: a key that was deleted and inserted
// is a delete and an insert.
const NotPaired = "not-paired-by-key"

func (a Anomaly) String() string {
	if a.Kind == NotPaired {
		return a.Kind + ": " + a.Detail
	}
	return fmt.Sprintf("%s: row id %d at %s position %d", a.Kind, a.RowID, a.File, a.Position)
}

// EventID is the stable identifier of an event across restarts and replays:
// <table_uuid>:<sequence_number>:<row_id>:<op>.
func EventID(tableUUID string, seq, rowID int64, op Op) string {
	b := make([]byte, 0, len(tableUUID)+48)
	return string(AppendEventID(b, tableUUID, seq, rowID, op))
}

// AppendEventID appends EventID's text to b.
func AppendEventID(b []byte, tableUUID string, seq, rowID int64, op Op) []byte {
	b = append(b, tableUUID...)
	b = append(b, ':')
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, rowID, 10)
	b = append(b, ':', byte(op))
	return b
}
