package health

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Health follows each table's ongoing fault, so that a failure is seen
// without flooding the log: its first error is logged at WARN, then at
// most one line per Interval sums it up while it lasts, and one INFO line
// says when it ended. The daemon's /readyz and /status read it. It is safe
// for concurrent use.
type Health struct {
	// Log receives the lines (default: the pipeline's logger).
	Log *slog.Logger
	// Interval is the least time between two lines about one ongoing
	// fault (default 30s).
	Interval time.Duration
	// Sink names the sink in lines about sink faults ("webhook", "kafka").
	Sink string
	// Now is the clock (default time.Now), for tests.
	Now func() time.Time

	mu     sync.Mutex
	tables map[string]*fault
	// catalogChecked is the last successful bulk check of the catalog
	// (see CatalogChecked), which checked every watched table.
	catalogChecked time.Time
	throttle       throttleState
}

// Components a fault is in.
const (
	InSink   = "sink"   // the sink refused or could not be reached
	InSource = "source" // the table could not be loaded or read
	InState  = "state"  // the table's checkpoint could not be stored
)

// Table states of TableHealth.
const (
	StateOK      = "ok"
	StateFailing = "failing" // a transient fault, being retried
	StateStopped = "stopped" // a permanent fault: not followed until a restart
)

// TableHealth is one table's condition, as /status shows it.
type TableHealth struct {
	Table     string    `json:"table"`
	State     string    `json:"state"`               // ok, failing or stopped
	Component string    `json:"component,omitempty"` // sink, source or state
	Since     time.Time `json:"since,omitzero"`      // when the fault began
	Failures  int       `json:"failures,omitempty"`  // failed attempts since then
	LastError string    `json:"last_error,omitempty"`
	// LastChecked is when the table's metadata was last checked for a
	// change: by its own load, or by its catalog's bulk check.
	LastChecked time.Time `json:"last_checked,omitzero"`
	// SnapshotPaused names the signal whose on-demand snapshot is paused
	// (pause-snapshot): the table's stream waits for resume-snapshot.
	SnapshotPaused string `json:"snapshot_paused,omitempty"`
	// Lag is how far delivery was behind the branch head when the table
	// last compared them; nil before its first load.
	Lag *TableLag `json:"-"`
}

// TableLag is a table's branch head and the part of it not yet delivered,
// as the table saw them at its last load.
type TableLag struct {
	Head    Head // zero ID: the branch has no snapshot
	Pending int  // snapshots on the branch not yet delivered
	// OldestMs is the commit time of the oldest snapshot not yet
	// delivered (0 when caught up): the seconds behind grow from it.
	OldestMs int64
	At       time.Time // when it was measured (Lag sets it)
	// After, when set, counts the snapshots of Pending a checkpoint at
	// sequence number seq leaves undelivered (done: the whole of seq is
	// delivered), and the oldest one's commit time: a checkpoint read
	// after the lag was measured (a commit delivered in between) is
	// counted against what is really left, wherever it stands.
	After func(seq int64, done bool) (pending int, oldestMs int64)
}

// Behind is the lag of a checkpoint at seq (done: the whole of seq is
// delivered): the snapshots not yet delivered and the oldest one's commit
// time, Pending and OldestMs when the table gave no After.
func (l *TableLag) Behind(seq int64, done bool) (pending int, oldestMs int64) {
	if l.After == nil {
		return l.Pending, l.OldestMs
	}
	return l.After(seq, done)
}

// Head is what /status shows of a branch head snapshot.
type Head struct {
	ID             int64 // 0: the branch has no snapshot
	SequenceNumber int64
	TimestampMs    int64 // its commit time
}

type fault struct {
	TableHealth
	logged   time.Time // when the last line about it was written
	unlogged int       // failures since that line
	checked  time.Time // see Checked
	watched  bool
	paused   string    // see Paused
	lag      *TableLag // see Lag
}

func (h *Health) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Health) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.New(slog.DiscardHandler)
}

func (h *Health) interval() time.Duration {
	if h.Interval > 0 {
		return h.Interval
	}
	return 30 * time.Second
}

// table returns the table's entry, creating it; h.mu is held.
func (h *Health) table(name string) *fault {
	if h.tables == nil {
		h.tables = map[string]*fault{}
	}
	f := h.tables[name]
	if f == nil {
		f = &fault{TableHealth: TableHealth{Table: name, State: StateOK}}
		h.tables[name] = f
	}
	return f
}

// Track lists a table, healthy, so that Tables shows it before anything
// happened to it.
func (h *Health) Track(table string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.table(table)
}

// Fail records a failed attempt of a table in component (InSink or
// InSource) that will be retried. The first failure of a fault is logged
// at once; later ones at most once per Interval, summed up.
func (h *Health) Fail(table, component string, err error) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.table(table)
	if f.State == StateStopped {
		return
	}
	attrs := h.attrs(table, component)
	if f.State != StateFailing || f.Component != component {
		f.TableHealth = TableHealth{Table: table, State: StateFailing, Component: component, Since: now, Failures: 1, LastError: err.Error()}
		f.logged, f.unlogged = now, 0
		h.log().Warn(component+" failing; retrying", append(attrs, "err", err)...)
		return
	}
	f.Failures++
	f.unlogged++
	f.LastError = err.Error()
	if now.Sub(f.logged) >= h.interval() {
		h.log().Warn(component+" still failing", append(attrs,
			"failures", f.unlogged, "for", now.Sub(f.Since).Round(time.Millisecond).String(), "last_err", err)...)
		f.logged, f.unlogged = now, 0
	}
}

// OK records that a table made progress: an ongoing fault is over, and
// that is logged once.
func (h *Health) OK(table string) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.table(table)
	if f.State != StateFailing {
		return
	}
	msg := fmt.Sprintf("%s recovered after %s over %s", f.Component, failures(f.Failures), now.Sub(f.Since).Round(time.Millisecond))
	h.log().Info(msg, h.attrs(table, f.Component)...)
	f.TableHealth = TableHealth{Table: table, State: StateOK}
}

// Stop records that a table stopped on a permanent error. The pipeline
// logs that error itself.
func (h *Health) Stop(table, component string, err error) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.table(table)
	failures := 1
	if f.State == StateFailing {
		failures += f.Failures
	}
	f.TableHealth = TableHealth{Table: table, State: StateStopped, Component: component, Since: now, Failures: failures, LastError: err.Error()}
}

func (h *Health) attrs(table, component string) []any {
	attrs := []any{"table", table}
	if component == InSink && h.Sink != "" {
		attrs = append(attrs, "sink", h.Sink)
	}
	return attrs
}

// Paused records that the table's on-demand snapshot of signal id is
// paused (id "": it is not). /readyz and /status name a paused table.
func (h *Health) Paused(table, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.table(table).paused = id
}

// PausedNotes describes, one line per table, every table whose
// on-demand snapshot is paused.
func (h *Health) PausedNotes() []string {
	var out []string
	for _, t := range h.Tables() {
		if t.SnapshotPaused != "" {
			out = append(out, fmt.Sprintf("%s: on-demand snapshot paused (signal %.64q); its stream waits for resume-snapshot or stop-snapshot", t.Table, t.SnapshotPaused))
		}
	}
	return out
}

// Lag records the branch head a table loaded and the part of it not yet
// delivered, for /status.
func (h *Health) Lag(table string, l TableLag) {
	l.At = h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.table(table).lag = &l
}

// Forget drops a table this process no longer follows (cluster mode:
// another member took it over), so that /status and /readyz speak of the
// tables it owns only: a table that stopped here and moved on would keep
// the member unready for ever.
func (h *Health) Forget(table string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.tables, table)
}

// Tables returns every known table's condition, by name.
func (h *Health) Tables() []TableHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]TableHealth, 0, len(h.tables))
	for _, f := range h.tables {
		t := f.TableHealth
		t.LastChecked, t.SnapshotPaused = f.checked, f.paused
		t.Lag = f.lag
		if f.watched && h.catalogChecked.After(t.LastChecked) {
			t.LastChecked = h.catalogChecked
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b TableHealth) int { return strings.Compare(a.Table, b.Table) })
	return out
}

// Problems describes, one line per table, every table that is failing or
// stopped; none when all are well.
func (h *Health) Problems() []string {
	var out []string
	if p := h.throttleProblem(); p != "" {
		out = append(out, p)
	}
	for _, t := range h.Tables() {
		if t.State != StateOK {
			out = append(out, t.String())
		}
	}
	return out
}

func (t TableHealth) String() string {
	if t.State == StateOK {
		return t.Table + ": ok"
	}
	return fmt.Sprintf("%s: %s %s since %s (%s): %s", t.Table, t.Component, t.State,
		t.Since.UTC().Format(time.RFC3339), failures(t.Failures), t.LastError)
}

func failures(n int) string {
	if n == 1 {
		return "1 failure"
	}
	return fmt.Sprintf("%d failures", n)
}
