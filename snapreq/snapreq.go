package snapreq

import "errors"

// ErrUnknownTable is a snapshot request for a table the pipeline does not
// follow.
var ErrUnknownTable = errors.New("the pipeline follows no such table")

// ErrNotServing is a snapshot request the table cannot take: the pipeline
// is starting or stopping, or the table stopped on an error.
var ErrNotServing = errors.New("the table is not being followed")

// ErrNothingToRead is an on-demand snapshot of a table that is followed
// but has no rows to read now (no commit delivered yet, a snapshot from
// before row lineage, or the checkpoint's snapshot gone). Such an error
// is ErrNotServing too, with the same text: it tells a table that
// refuses the request from one not served at all (starting, stopped, on
// another member).
var ErrNothingToRead = errors.New("nothing to read")

// ErrBadSnapshotRequest is an on-demand snapshot the table refuses as
// asked (a filter naming an unknown column): nothing changed.
var ErrBadSnapshotRequest = errors.New("bad snapshot request")

// ErrSnapshotStopped answers a request that a stop removed before its
// read began.
var ErrSnapshotStopped = errors.New("stopped before it started")

// SnapshotRequest says which rows an on-demand snapshot reads and who
// asked for it.
type SnapshotRequest struct {
	// ID names the request (a signal's id). Its notices carry it, and a
	// request whose ID the table's checkpoint already names is not read
	// again: a signal read a second time after a crash changes nothing.
	ID string
	// Kind is the snapshot's type as a signal gave it (incremental or
	// blocking); a request with a kind gets notices (cdc.Pipeline.Notify).
	Kind string
	// Filter, when set, keeps the rows it holds for (in the language of
	// cdc.Pipeline.RowFilters), checked against the table's schema when
	// the read starts.
	Filter string
	// Mark, when set, is where the request was read (a signal record). A
	// table's requests with marks must come in their topic's order: the
	// checkpoint keeps the last mark taken, and a request at or below it
	// is answered as read already.
	Mark *SignalMark
}

// SignalMark is a signal record's place in its topic, and its id.
type SignalMark struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	ID        string `json:"id,omitempty"`
}

// Taken reports whether a request at m was taken by a table whose
// checkpoint holds mark cp (nil: none): the same topic and partition,
// at or below it.
func (m *SignalMark) Taken(cp *SignalMark) bool {
	return m != nil && cp != nil && m.Topic == cp.Topic && m.Partition == cp.Partition && m.Offset <= cp.Offset
}

// SnapshotControl is what a signal asks of a table's on-demand snapshot.
type SnapshotControl int

const (
	// PauseSnapshot holds the read after its current chunk, the table's
	// stream with it (its rows come before the next commit's); a restart
	// keeps it paused.
	PauseSnapshot SnapshotControl = iota + 1
	// ResumeSnapshot goes on with a paused read.
	ResumeSnapshot
	// StopSnapshot ends the read after its current chunk, and drops the
	// requests not started; the stream goes on after the read's snapshot.
	StopSnapshot
)

// SnapshotNotice is a step of an on-demand snapshot with a kind, for
// cdc.Pipeline.Notify. It is told after the step is checkpointed.
type SnapshotNotice struct {
	Table      string
	ID         string
	Kind       string
	Type       string // STARTED, IN_PROGRESS, PAUSED, RESUMED, TABLE_SCAN_COMPLETED, COMPLETED, ABORTED
	SnapshotID int64
	// Next is the index of the read's next row, Total its rows (before
	// the filter).
	Next, Total int
}

// The notice types, as Debezium names them.
const (
	NoticeStarted            = "STARTED"
	NoticeInProgress         = "IN_PROGRESS"
	NoticePaused             = "PAUSED"
	NoticeResumed            = "RESUMED"
	NoticeTableScanCompleted = "TABLE_SCAN_COMPLETED"
	NoticeCompleted          = "COMPLETED"
	NoticeAborted            = "ABORTED"
)
