package cdc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/values"
)

// notReadable is snapreq.ErrNotServing that is also
// snapreq.ErrNothingToRead.
type notReadable struct{}

func (notReadable) Error() string { return snapreq.ErrNotServing.Error() }

func (notReadable) Is(target error) bool {
	return target == snapreq.ErrNotServing || target == snapreq.ErrNothingToRead
}

// RequestSnapshot asks for the table's rows as 'r' events in its stream
// (Debezium's ad-hoc snapshot): the rows of the snapshot the checkpoint
// stands at, placed after that commit's events and before the next
// commit's, never inside a commit, while the other tables go on. It
// returns the snapshot read once the read's start is checkpointed, so
// that a crash resumes the read by index; a request that arrives while
// one waits joins it.
func (p *Pipeline) RequestSnapshot(ctx context.Context, table string) (SnapshotInfo, error) {
	return p.Snapshot(ctx, table, snapreq.SnapshotRequest{})
}

// Snapshot is RequestSnapshot with a request's id, kind and filter. It
// returns once the read's start is checkpointed (or once the table found
// the request's ID in its checkpoint: read already); a waiting request
// joins one with the same ID and filter.
func (p *Pipeline) Snapshot(ctx context.Context, table string, req snapreq.SnapshotRequest) (SnapshotInfo, error) {
	wait, err := p.QueueSnapshot(table, req)
	if err != nil {
		return SnapshotInfo{}, err
	}
	return wait(ctx)
}

// QueueSnapshot is Snapshot in two steps: it queues the request at once
// (behind the table's earlier ones; a stop drops it), and wait answers
// as Snapshot does.
func (p *Pipeline) QueueSnapshot(table string, req snapreq.SnapshotRequest) (wait func(context.Context) (SnapshotInfo, error), err error) {
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

// ControlSnapshot pauses, resumes or stops the table's on-demand
// snapshot. It returns at once: the read acts on it between two chunks
// and notifies.
func (p *Pipeline) ControlSnapshot(table string, c snapreq.SnapshotControl) error {
	p.requests.mu.Lock()
	defer p.requests.mu.Unlock()
	if p.requests.tables == nil {
		return fmt.Errorf("snapshot of table %s: %w: the pipeline is starting", table, snapreq.ErrNotServing)
	}
	t, ok := p.requests.tables[table]
	if !ok {
		return fmt.Errorf("snapshot of table %s: %w", table, snapreq.ErrUnknownTable)
	}
	if t.stopped != nil {
		return fmt.Errorf("snapshot of table %s: %w: %v", table, snapreq.ErrNotServing, t.stopped)
	}
	switch c {
	case snapreq.PauseSnapshot:
		t.paused = true
	case snapreq.ResumeSnapshot:
		t.paused = false
	case snapreq.StopSnapshot:
		t.stop, t.paused = true, false
		for _, r := range t.pending {
			r.reply <- snapshotReply{err: fmt.Errorf("snapshot of table %s: %w", table, snapreq.ErrSnapshotStopped)}
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
	req   snapreq.SnapshotRequest
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

func (r *snapshotRequests) add(table string, req snapreq.SnapshotRequest) (<-chan snapshotReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tables == nil {
		return nil, fmt.Errorf("snapshot of table %s: %w: the pipeline is starting", table, snapreq.ErrNotServing)
	}
	t, ok := r.tables[table]
	if !ok {
		return nil, fmt.Errorf("snapshot of table %s: %w", table, snapreq.ErrUnknownTable)
	}
	if t.stopped != nil {
		return nil, fmt.Errorf("snapshot of table %s: %w: %v", table, snapreq.ErrNotServing, t.stopped)
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
		p.reply <- snapshotReply{err: fmt.Errorf("snapshot of table %s: %w: %v", table, snapreq.ErrNotServing, err)}
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
	if mark.Taken(f.cp.SignalMark) || req.ID != "" && req.ID == f.cp.Signal && (mark == nil || f.cp.SignalMark == nil) {
		// Read already (the signal came again after a crash or a move):
		// the first read stands, resumed from its checkpoint.
		answer(snapshotReply{snap: SnapshotInfo{ID: f.cp.SnapshotID, SequenceNumber: f.cp.Seq}})
		return nil
	}
	if req.Filter != "" {
		if _, err := f.bindFilter(f.spec.Source.Info().Schema, req.Filter); err != nil {
			answer(snapshotReply{err: fmt.Errorf("snapshot of table %s: %w: %v", f.spec.Name, snapreq.ErrBadSnapshotRequest, err)})
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
	f.notice(snapreq.NoticeStarted, 0, 0)
	answer(snapshotReply{snap: si})
	return f.initialRead(ctx)
}

// notice tells Pipeline.Notify a step of the read f.cp is in, if the read
// has a kind.
func (f *follower) notice(typ string, next, total int) {
	if f.p.Notify == nil || f.cp.Kind == "" {
		return
	}
	f.p.Notify(snapreq.SnapshotNotice{Table: f.spec.Name, ID: f.cp.Signal, Kind: f.cp.Kind, Type: typ, SnapshotID: f.cp.SnapshotID, Next: next, Total: total})
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
		f.notice(snapreq.NoticeAborted, 0, 0)
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
			f.notice(snapreq.NoticePaused, cp.Next, 0)
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
		f.notice(snapreq.NoticeResumed, cp.Next, 0)
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
