package cdc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

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

// notReadable is ErrNotServing that is also ErrNothingToRead.
type notReadable struct{}

func (notReadable) Error() string { return ErrNotServing.Error() }

func (notReadable) Is(target error) bool {
	return target == ErrNotServing || target == ErrNothingToRead
}

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
	// blocking); a request with a kind gets notices (Pipeline.Notify).
	Kind string
	// Filter, when set, keeps the rows it holds for (in the language of
	// Pipeline.RowFilters), checked against the table's schema when the
	// read starts.
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

// taken reports whether a request at m was taken by a table whose
// checkpoint holds mark cp (nil: none): the same topic and partition,
// at or below it.
func (m *SignalMark) taken(cp *SignalMark) bool {
	return m != nil && cp != nil && m.Topic == cp.Topic && m.Partition == cp.Partition && m.Offset <= cp.Offset
}

// SnapshotNotice is a step of an on-demand snapshot with a kind, for
// Pipeline.Notify. It is told after the step is checkpointed.
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

// RequestSnapshot asks for the table's rows as 'r' events in its stream
// (Debezium's ad-hoc snapshot): the rows of the snapshot the checkpoint
// stands at, placed after that commit's events and before the next
// commit's, never inside a commit, while the other tables go on. It
// returns the snapshot read once the read's start is checkpointed, so
// that a crash resumes the read by index; a request that arrives while
// one waits joins it.
func (p *Pipeline) RequestSnapshot(ctx context.Context, table string) (SnapshotInfo, error) {
	return p.Snapshot(ctx, table, SnapshotRequest{})
}

// Snapshot is RequestSnapshot with a request's id, kind and filter. It
// returns once the read's start is checkpointed (or once the table found
// the request's ID in its checkpoint: read already); a waiting request
// joins one with the same ID and filter.
func (p *Pipeline) Snapshot(ctx context.Context, table string, req SnapshotRequest) (SnapshotInfo, error) {
	wait, err := p.QueueSnapshot(table, req)
	if err != nil {
		return SnapshotInfo{}, err
	}
	return wait(ctx)
}

// QueueSnapshot is Snapshot in two steps: it queues the request at once
// (behind the table's earlier ones; a stop drops it), and wait answers
// as Snapshot does.
func (p *Pipeline) QueueSnapshot(table string, req SnapshotRequest) (wait func(context.Context) (SnapshotInfo, error), err error) {
	reply, err := p.requests.add(table, req)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (SnapshotInfo, error) {
		select {
		case r := <-reply:
			return r.snap, r.err
		case <-ctx.Done():
			return SnapshotInfo{}, fmt.Errorf("snapshot of table %s: not started yet (the table is delivering a commit or retrying): %w; the request stays queued", table, ctx.Err())
		}
	}, nil
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

// ControlSnapshot pauses, resumes or stops the table's on-demand
// snapshot. It returns at once: the read acts on it between two chunks
// and notifies.
func (p *Pipeline) ControlSnapshot(table string, c SnapshotControl) error {
	p.requests.mu.Lock()
	defer p.requests.mu.Unlock()
	if p.requests.tables == nil {
		return fmt.Errorf("snapshot of table %s: %w: the pipeline is starting", table, ErrNotServing)
	}
	t, ok := p.requests.tables[table]
	if !ok {
		return fmt.Errorf("snapshot of table %s: %w", table, ErrUnknownTable)
	}
	if t.stopped != nil {
		return fmt.Errorf("snapshot of table %s: %w: %v", table, ErrNotServing, t.stopped)
	}
	switch c {
	case PauseSnapshot:
		t.paused = true
	case ResumeSnapshot:
		t.paused = false
	case StopSnapshot:
		t.stop, t.paused = true, false
		for _, r := range t.pending {
			r.reply <- snapshotReply{err: fmt.Errorf("snapshot of table %s: %w", table, ErrSnapshotStopped)}
		}
		t.pending = nil
	}
	t.poke()
	return nil
}

type snapshotReply struct {
	snap SnapshotInfo
	err  error
}

// snapshotRequests are the pending on-demand snapshots, by table.
type snapshotRequests struct {
	mu      sync.Mutex
	tables  map[string]*tableRequests // nil until Run
	serving chan struct{}             // closed by open
}

// servingCh is the channel open closes (made on first use).
func (r *snapshotRequests) servingCh() chan struct{} {
	if r.serving == nil {
		r.serving = make(chan struct{})
	}
	return r.serving
}

// Serving is closed once Run takes snapshot requests and controls for
// every table, also those still loading their start position or
// retrying it: their requests wait in the table's queue.
func (p *Pipeline) Serving() <-chan struct{} {
	p.requests.mu.Lock()
	defer p.requests.mu.Unlock()
	return p.requests.servingCh()
}

type tableRequests struct {
	// wake tells the table's follower, idle until its next poll (which
	// may be poll.max_interval away), that a request or control came.
	wake     chan struct{}
	notify   func() // see snapshotRequests.notify
	pending  []pendingSnapshot
	stopped  error // set once the table's follower returned
	paused   bool  // asked: hold the read
	stop     bool  // asked: end the read
	restored bool  // paused was taken from the checkpoint once
}

type pendingSnapshot struct {
	req   SnapshotRequest
	reply chan snapshotReply
}

func (r *snapshotRequests) open(specs []TableSpec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tables = make(map[string]*tableRequests, len(specs))
	for _, s := range specs {
		r.tables[s.Name] = &tableRequests{wake: make(chan struct{}, 1)}
	}
	select {
	case <-r.servingCh():
	default:
		close(r.serving)
	}
}

func (r *snapshotRequests) add(table string, req SnapshotRequest) (<-chan snapshotReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tables == nil {
		return nil, fmt.Errorf("snapshot of table %s: %w: the pipeline is starting", table, ErrNotServing)
	}
	t, ok := r.tables[table]
	if !ok {
		return nil, fmt.Errorf("snapshot of table %s: %w", table, ErrUnknownTable)
	}
	if t.stopped != nil {
		return nil, fmt.Errorf("snapshot of table %s: %w: %v", table, ErrNotServing, t.stopped)
	}
	c := make(chan snapshotReply, 1)
	t.pending = append(t.pending, pendingSnapshot{req, c})
	t.poke()
	return c, nil
}

func (t *tableRequests) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
	if t.notify != nil {
		t.notify()
	}
}

// notify makes the table's requests call fn too, with r's lock held (a
// parked follower's poke).
func (r *snapshotRequests) notify(table string, fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tables[table]; t != nil {
		t.notify = fn
	}
}

// woken is the channel that tells table's follower a request or a
// control came (nil, which never fires, before Run).
func (r *snapshotRequests) woken(table string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tables[table]; t != nil {
		return t.wake
	}
	return nil
}

// take removes and returns the table's first pending request and those
// that join it (same ID and filter). A request with a mark joins only
// those before it (none taken past another request's mark), so that
// the checkpoint's mark only grows.
func (r *snapshotRequests) take(table string) []pendingSnapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tables[table]
	if t == nil || len(t.pending) == 0 {
		return nil
	}
	first := t.pending[0].req
	var took, rest []pendingSnapshot
	passed := false // a request left pending before this one
	for _, p := range t.pending {
		if p.req.ID == first.ID && p.req.Filter == first.Filter && (!passed || p.req.Mark == nil && first.Mark == nil) {
			took = append(took, p)
		} else {
			rest = append(rest, p)
			passed = true
		}
	}
	t.pending = rest
	return took
}

// control returns what was asked of the table's read: stop (taken, so
// asked once) or pause.
func (r *snapshotRequests) control(table string) (stop, paused bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tables[table]
	if t == nil {
		return false, false
	}
	stop, t.stop = t.stop, false
	return stop, t.paused
}

// interrupts reports whether a stop or a pause waits for the read.
func (r *snapshotRequests) interrupts(table string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tables[table]
	return t != nil && (t.stop || t.paused)
}

// restorePause pauses the table's read once, as its checkpoint says.
func (r *snapshotRequests) restorePause(table string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tables[table]; t != nil && !t.restored {
		t.restored, t.paused = true, true
	}
}

// stopped answers the table's pending requests and refuses new ones.
func (r *snapshotRequests) stopped(table string, err error) {
	if err == nil {
		err = errors.New("the pipeline is stopping")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tables[table]
	if t == nil {
		return
	}
	for _, p := range t.pending {
		p.reply <- snapshotReply{err: fmt.Errorf("snapshot of table %s: %w: %v", table, ErrNotServing, err)}
	}
	t.pending, t.stopped = nil, err
}

// errReadHeld ends a table's catch-up while its read is paused: the
// stream may not pass it.
var errReadHeld = errors.New("the on-demand snapshot is paused")

// errReadInterrupted ends a read's delivery between two chunks, for a
// pause or a stop.
var errReadInterrupted = errors.New("the on-demand snapshot was interrupted")

// serveSnapshots starts the pending on-demand snapshots. It is called only
// between two commits, where the checkpoint is a whole commit: the read
// becomes a new epoch at that commit's snapshot, resumable by index as an
// initial read, and the stream goes on after it from the same snapshot.
func (f *follower) serveSnapshots(ctx context.Context) error {
	for f.cp.Done { // inside an initial read or a commit: the requests wait
		reqs := f.p.requests.take(f.spec.Name)
		if len(reqs) == 0 {
			return nil
		}
		if err := f.serveSnapshot(ctx, reqs); err != nil {
			return err
		}
	}
	return nil
}

func (f *follower) serveSnapshot(ctx context.Context, reqs []pendingSnapshot) error {
	answer := func(r snapshotReply) {
		for _, p := range reqs {
			p.reply <- r
		}
	}
	req := reqs[0].req
	mark := req.Mark
	for _, p := range reqs { // the last of those joined
		if p.req.Mark != nil && (mark == nil || p.req.Mark.Offset > mark.Offset) {
			mark = p.req.Mark
		}
	}
	if mark.taken(f.cp.SignalMark) || req.ID != "" && req.ID == f.cp.Signal && (mark == nil || f.cp.SignalMark == nil) {
		// Read already (the signal came again after a crash or a move):
		// the first read stands, resumed from its checkpoint.
		answer(snapshotReply{snap: SnapshotInfo{ID: f.cp.SnapshotID, SequenceNumber: f.cp.Seq}})
		return nil
	}
	if req.Filter != "" {
		if _, err := f.bindFilter(f.spec.Source.Info().Schema, req.Filter); err != nil {
			answer(snapshotReply{err: fmt.Errorf("snapshot of table %s: %w: %v", f.spec.Name, ErrBadSnapshotRequest, err)})
			return nil
		}
	}
	si, err := f.checkpointSnapshot(ctx)
	if err != nil {
		answer(snapshotReply{err: fmt.Errorf("snapshot of table %s: %w", f.spec.Name, err)})
		return nil // the request fails, the table goes on
	}
	f.p.requests.control(f.spec.Name) // a stop asked before this read is not for it
	cp := f.cp
	cp.Initial, cp.Done, cp.Next, cp.Resync, cp.Epoch = true, false, 0, false, cp.Epoch+1
	cp.Signal, cp.Kind, cp.Filter, cp.Paused = req.ID, req.Kind, req.Filter, false
	if mark != nil {
		cp.SignalMark = mark
	}
	if err := f.saveCP(context.WithoutCancel(ctx), cp); err != nil {
		answer(snapshotReply{err: fmt.Errorf("snapshot of table %s: %w", f.spec.Name, err)})
		return err
	}
	f.cp = cp
	f.p.Metrics.Snapshots.WithLabelValues(f.spec.Name).Inc()
	f.logger().Info("on-demand snapshot: emitting the table's rows", "snapshot", si.ID, "sequence_number", si.SequenceNumber, "requests", len(reqs),
		"signal", req.ID, "filter", f.p.redactFilter(req.Filter))
	f.notice(NoticeStarted, 0, 0)
	answer(snapshotReply{snap: si})
	return f.initialRead(ctx)
}

// notice tells Pipeline.Notify a step of the read f.cp is in, if the read
// has a kind.
func (f *follower) notice(typ string, next, total int) {
	if f.p.Notify == nil || f.cp.Kind == "" {
		return
	}
	f.p.Notify(SnapshotNotice{Table: f.spec.Name, ID: f.cp.Signal, Kind: f.cp.Kind, Type: typ, SnapshotID: f.cp.SnapshotID, Next: next, Total: total})
}

// holdRead applies a stop or a pause asked of the read f.cp is in: a
// stop ends it where it is (the stream goes on after its snapshot), a
// pause is checkpointed and returns errReadHeld, a resume is
// checkpointed and the read goes on.
func (f *follower) holdRead(ctx context.Context) error {
	if f.cp.Kind == "" {
		return nil // an initial read, a resync or an HTTP request: signals do not stop them
	}
	stop, paused := f.p.requests.control(f.spec.Name)
	save := func(cp Checkpoint) error {
		if err := f.saveCP(context.WithoutCancel(ctx), cp); err != nil {
			return err
		}
		f.cp = cp
		return nil
	}
	switch {
	case stop:
		f.showPaused(false)
		cp := f.cp
		cp.Initial, cp.Done, cp.Next, cp.Paused, cp.Kind, cp.Filter = false, true, 0, false, "", ""
		kind := f.cp.Kind
		if err := save(cp); err != nil {
			return err
		}
		f.logger().Info("on-demand snapshot stopped", "snapshot", cp.SnapshotID, "at_row", f.cp.Next, "signal", cp.Signal)
		f.cp.Kind = kind // for the notice alone
		f.notice(NoticeAborted, 0, 0)
		f.cp.Kind = ""
		return nil
	case paused:
		if !f.cp.Paused {
			cp := f.cp
			cp.Paused = true
			if err := save(cp); err != nil {
				return err
			}
			f.logger().Info("on-demand snapshot paused", "snapshot", cp.SnapshotID, "at_row", cp.Next, "signal", cp.Signal)
			f.notice(NoticePaused, cp.Next, 0)
		}
		f.showPaused(true)
		return errReadHeld
	case f.cp.Paused:
		cp := f.cp
		cp.Paused = false
		if err := save(cp); err != nil {
			return err
		}
		f.logger().Info("on-demand snapshot resumed", "snapshot", cp.SnapshotID, "at_row", cp.Next, "signal", cp.Signal)
		f.notice(NoticeResumed, cp.Next, 0)
		f.showPaused(false)
	}
	return nil
}

// showPaused sets the table's icecdc_snapshot_paused and its health's
// note: a paused read holds the table's stream, which must be seen.
func (f *follower) showPaused(on bool) {
	id := ""
	if on {
		id = cmp.Or(f.cp.Signal, "-")
	}
	if f.pausedShown == id {
		return
	}
	f.pausedShown = id
	v := 0.0
	if on {
		v = 1
	}
	f.p.Metrics.SnapshotPaused.WithLabelValues(f.spec.Name).Set(v)
	f.p.Health.Paused(f.spec.Name, id)
}

// redactFilter is text as logs show it.
func (p *Pipeline) redactFilter(text string) string {
	if text == "" || p.RowFilters == nil {
		return text
	}
	return p.RowFilters.Redact(text)
}

// bindFilter binds the read's filter to sc, keeping the last binding.
func (f *follower) bindFilter(sc *iceberg.Schema, text string) (func(values.Row) bool, error) {
	if f.filter.keep != nil && f.filter.schema == sc && f.filter.text == text {
		return f.filter.keep, nil
	}
	if f.p.RowFilters == nil {
		return nil, errors.New("a row filter, but the pipeline has no filter language (Pipeline.RowFilters)")
	}
	keep, err := f.p.RowFilters.Bind(text, sc)
	if err != nil {
		return nil, fmt.Errorf("filter %q: %w", f.p.RowFilters.Redact(text), err)
	}
	f.filter.schema, f.filter.text, f.filter.keep = sc, text, keep
	return keep, nil
}

// filterRows keeps the events whose row the read's filter holds for.
func (f *follower) filterRows(c *Commit, evs []Event, text string) ([]Event, error) {
	keep, err := f.bindFilter(c.Table.Schema, text)
	if err != nil {
		return nil, err
	}
	kept := evs[:0:0]
	for i := range evs {
		r, err := evs[i].AfterRow()
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", evs[i].Index, err)
		}
		if keep(r) {
			kept = append(kept, evs[i])
		}
	}
	return kept, nil
}

// checkpointSnapshot is the snapshot a Done checkpoint stands at.
func (f *follower) checkpointSnapshot(ctx context.Context) (SnapshotInfo, error) {
	if f.cp.SnapshotID == 0 {
		return SnapshotInfo{}, fmt.Errorf("%w: no commit of the table has been delivered yet, so there are no rows to read; ask again once one is", notReadable{})
	}
	snaps, _, err := f.spec.Source.Retained(ctx)
	if err != nil {
		return SnapshotInfo{}, err
	}
	for _, s := range snaps {
		if s.ID == f.cp.SnapshotID {
			if !s.HasLineage {
				return SnapshotInfo{}, fmt.Errorf("%w: snapshot %d predates the table's row lineage; ask again after the next commit", notReadable{}, s.ID)
			}
			return s, nil
		}
	}
	return SnapshotInfo{}, fmt.Errorf("%w: the checkpoint's snapshot %d is no longer on the branch (expired or rolled back)", notReadable{}, f.cp.SnapshotID)
}
