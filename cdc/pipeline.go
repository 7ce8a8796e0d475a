package cdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/metrics"
	"github.com/icecdc/icecdc/retryreport"
	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/values"
)

// TableSpec is one followed table of a pipeline.
type TableSpec struct {
	Name   string // as configured, e.g. "shop.orders"; the checkpoint key
	Source Source
	Start  Start // used only when the table has no checkpoint
	// WarnStart, when set, says why starting the table from Start
	// deserves a warning rather than the usual info line.
	WarnStart string
	// Policies are the table's per-event policies, in the order they
	// apply (cmd/icecdc: the shaping, then the column subscription), each
	// resolved against the table's schema when the table is loaded.
	Policies []Policy
	// Net delivers the net changes of each backlog (see netfollow.go),
	// reduced by Pipeline.NewNet.
	Net bool
	// NetMaxRows bounds the rows a net range holds (default 100,000).
	NetMaxRows int
	// Hold keeps a retention ref on the table (see hold.go); the source
	// must implement Holder.
	Hold bool
}

// Encoder turns an event into a message key and value. An error names the
// event ("encode event <id>: …"): the pipeline marks it permanent and adds
// nothing to its text.
type Encoder interface {
	AppendKey(dst []byte, c *Commit, e *Event) ([]byte, error)
	AppendValue(dst []byte, c *Commit, e *Event, tsMs int64) ([]byte, error)
}

// RecordShaper is an Encoder whose records are not one per event with
// the sink's headers only (the flattened records of debezium.Unwrap):
// it leaves some events without a record and adds record headers. An
// empty value from AppendValue is a tombstone, as for any Encoder.
type RecordShaper interface {
	Encoder
	// Keep reports whether e has a record; AppendKey and AppendValue are
	// not called for an event it leaves out.
	Keep(c *Commit, e *Event) bool
	// AppendHeaders appends the headers e's record carries after the
	// sink's own.
	AppendHeaders(dst []Header, c *Commit, e *Event, tsMs int64) []Header
}

// ErrHistory marks a table whose history no longer continues from its
// checkpoint: expired snapshots, a rollback, a re-created table.
var ErrHistory = errors.New("history does not continue from the checkpoint")

// Pipeline follows tables and delivers their events to one sink. Each
// table runs on goroutines of its own (none while it waits parked, see
// park.go); its checkpoint moves only after the sink confirmed a batch,
// to the highest confirmed position. A transient
// error reloads the checkpoint and retries with backoff; a permanent one
// (sink ErrPermanent / ErrDisabled, ErrHistory) stops that table only.
type Pipeline struct {
	Name   string
	Tables []TableSpec
	Sink   Sink
	Store  Store
	// Encoder writes the events in the pipeline's format (package
	// debezium has icecdc's); required, the pipeline knows no format.
	Encoder Encoder
	Poll    time.Duration // default 1s
	// MaxPoll is the longest wait between two checks of a table that does
	// not change (see schedule.go): its wait doubles from Poll up to
	// MaxPoll, and is Poll again after a change. A table its catalog
	// watches (Watched) waits for the catalog's wake-up instead, looking
	// every MaxPoll whether the catalog still covers it.
	// Default (or less than Poll): Poll.
	MaxPoll time.Duration
	// WatchedReload is how often, at least, a watched table that its
	// catalog keeps covering is loaded on its own, as a safety net: after
	// between one and two WatchedReload, at random (see schedule.go;
	// default twenty MaxPoll, at least ten minutes).
	WatchedReload time.Duration
	// IdleAfter is how long a table must not change before its source is
	// told to drop its caches (Idler; default twice MaxPoll, at least a
	// minute).
	IdleAfter time.Duration
	// ChunkSize is the most events of a batch (default 8192), and
	// ChunkBytes about the most bytes of their keys and values (default
	// 4 MiB): a batch ends at either, mostly at ChunkBytes. Bytes are
	// measured on the batches written; the next batch's event count is
	// sized from the previous one's bytes per event.
	ChunkSize  int
	ChunkBytes int
	// RetryInitial and RetryMax bound the backoff after transient errors
	// (defaults 500ms and 30s).
	RetryInitial, RetryMax time.Duration
	Log                    *slog.Logger
	Metrics                *metrics.Metrics
	// Health follows each table's ongoing fault: it logs a fault when it
	// begins, sums it up at most once per Health.Interval, and logs its
	// end (default: a Health logging to Log).
	Health *health.Health
	// Ready is closed once every table has loaded its start position.
	Ready chan struct{}
	// Once makes each table stop, without error, as soon as it delivered
	// every snapshot up to the head it found (for batch jobs and
	// benchmarks); Run returns when all did. A table that fails
	// OnceAttempts times in a row stops with its error instead of retrying
	// for ever. Default false: follow for ever.
	Once bool
	// Progress, when set, shows the files and rows of initial reads as
	// they are delivered (NewProgress: only to a terminal).
	Progress *Progress
	// OnHistoryLoss is what a table does when its history no longer
	// continues from its checkpoint (see resync.go; default stop).
	OnHistoryLoss HistoryLossPolicy
	// HoldInterval is the least time between two moves of a table's
	// retention hold (default 1m).
	HoldInterval time.Duration
	// SchemaChanges makes every batch that starts a snapshot with a schema
	// change (Commit.SchemaChange) carry its record (Batch.SchemaChange),
	// encoded by Encoder, which must be a SchemaChangeEncoder. A snapshot
	// delivered again after a restart mid-way does not repeat it.
	SchemaChanges bool
	// Notify, when set, is told the steps of the on-demand snapshots that
	// have a kind (see snapreq.SnapshotNotice), on the table's goroutines;
	// it must not block.
	Notify func(snapreq.SnapshotNotice)
	// NewNet makes the reducer of a net range (package netchange's), for
	// the tables with Net and a checkpoint left inside a net range; nil
	// stops such a table.
	NewNet func() NetChanges
	// RowFilters is the language of the row filters of on-demand
	// snapshots (package rowfilter's); nil refuses a request with one.
	RowFilters RowFilters
	// Tracer, when set, traces every commit of every table (trace.go):
	// OpenTelemetry's tracer provider. Nil: no spans, at no cost.
	Tracer trace.TracerProvider

	// MaxActive bounds the tables that load or read at once (default 16
	// per core, at least 64: enough that their waits for the catalog, the
	// sink and the state file's fsyncs overlap): when thousands of tables
	// start with a backlog each, the memory of their reads follows the
	// bound, not the tables. A table waits for a slot before each load and catch-up, and
	// holds it until its catch-up's batches were delivered; an idle
	// table's poll is a short hold. A long read (a large initial read)
	// keeps its slot throughout.
	MaxActive int
	// Warm bounds the tables that keep, between two changes, what their
	// reads left (see warm.go; default 4 MaxActive): the table that
	// changed longest ago is told to idle (Idler) as another changes.
	Warm int

	requests snapshotRequests // on-demand snapshots, see adhoc.go
	warm     warmSet          // Warm's tables
	active   chan struct{}    // MaxActive's slots
}

// OnceAttempts is how many attempts in a row a table may fail under
// Pipeline.Once before it stops with the last error: a batch job that
// cannot read a table fails, so that its scheduler sees it, where the
// daemon would retry for ever; the retries before that ride out a blip.
const OnceAttempts = 3

// The defaults of Pipeline.ChunkSize and ChunkBytes.
const (
	DefaultChunkSize  = 8192
	DefaultChunkBytes = 4 << 20
)

// unmeasuredEvent is the bytes an event is taken to encode to before a
// table's first batch measured them (see chunkLimit): 1024 events a
// first batch at the default ChunkBytes.
const unmeasuredEvent = 4 << 10

func (p *Pipeline) defaults() {
	if p.Poll <= 0 {
		p.Poll = time.Second
	}
	if p.MaxPoll < p.Poll {
		p.MaxPoll = p.Poll
	}
	if p.IdleAfter <= 0 {
		p.IdleAfter = max(2*p.MaxPoll, time.Minute)
	}
	if p.ChunkSize <= 0 {
		p.ChunkSize = DefaultChunkSize
	}
	if p.ChunkBytes <= 0 {
		p.ChunkBytes = DefaultChunkBytes
	}
	if p.RetryInitial <= 0 {
		p.RetryInitial = 500 * time.Millisecond
	}
	if p.RetryMax <= 0 {
		p.RetryMax = 30 * time.Second
	}
	if p.Log == nil {
		p.Log = slog.New(slog.DiscardHandler)
	}
	if p.Metrics == nil {
		p.Metrics = metrics.NewMetrics(nil)
	}
	if p.Health == nil {
		p.Health = &health.Health{}
	}
	if p.Health.Log == nil {
		p.Health.Log = p.Log
	}
	if p.HoldInterval <= 0 {
		p.HoldInterval = time.Minute
	}
	if p.MaxActive <= 0 {
		p.MaxActive = max(64, 16*runtime.GOMAXPROCS(0))
	}
	if p.active == nil {
		p.active = make(chan struct{}, p.MaxActive)
	}
	if p.Warm <= 0 {
		p.Warm = 4 * p.MaxActive
	}
}

// Run follows every table until ctx is done (then it returns nil after the
// in-flight batches finished) or until every table stopped; it returns the
// tables' errors joined. A table's source is closed when its table stops.
func (p *Pipeline) Run(ctx context.Context) error {
	if p.Encoder == nil {
		return fmt.Errorf("pipeline %s: no encoder", p.Name)
	}
	p.defaults()
	var run tablesRun
	run.ready.Add(len(p.Tables))
	p.requests.open(p.Tables)
	fs := make([]*follower, 0, len(p.Tables))
	// At most 4 × MaxActive tables start at once: one goroutine for each
	// of 10,000 tables, all waiting for a slot, would cost their stacks
	// at the start and their goroutine records (the runtime keeps them
	// for reuse) for the process's life.
	run.starting = make(chan struct{}, 4*p.MaxActive)
	for _, spec := range p.Tables {
		run.wg.Add(1)
		f := &follower{p: p, spec: spec, run: &run, tracer: p.tracer()}
		fs = append(fs, f)
		f.warm.cool = make(chan struct{}, 1)
		// Up and in /status at once, also while waiting to start.
		p.Metrics.TableUp.WithLabelValues(spec.Name).Set(1)
		p.Health.Track(spec.Name)
		select {
		case run.starting <- struct{}{}:
			f.ls.starting = true
		case <-ctx.Done(): // they all end at once
		}
		go f.start(ctx)
	}
	// One wake-up at ctx's end for all: a parked follower has no
	// goroutine to see it (park), and one AfterFunc for each was 1.5 MiB
	// at 10,000 tables. One that parks after ctx ended sees it itself.
	defer context.AfterFunc(ctx, func() {
		for _, f := range fs {
			f.poke()
		}
	})()
	go func() {
		run.ready.Wait()
		if p.Ready != nil {
			close(p.Ready)
		}
	}()
	run.wg.Wait()
	return errors.Join(run.errs...)
}

// startAttrs says in a log line where a table without a checkpoint
// starts, in the words of the resume line, not as a Checkpoint (whose
// "<uuid>@0(snapshot 0, done)" reads as a position that exists).
func startAttrs(cp Checkpoint) []any {
	switch {
	case cp.Initial:
		return []any{"initial_read_of_snapshot", cp.SnapshotID, "sequence_number", cp.Seq}
	case cp.Done && cp.SnapshotID == 0:
		return []any{"from", "the first snapshot"}
	case cp.Done:
		return []any{"after_snapshot", cp.SnapshotID, "sequence_number", cp.Seq}
	}
	return []any{"snapshot", cp.SnapshotID, "sequence_number", cp.Seq}
}

// tablesRun is what Run's tables report to it as they end (follower.end).
type tablesRun struct {
	wg       sync.WaitGroup
	mu       sync.Mutex
	errs     []error
	starting chan struct{}  // a slot for each table in its first step
	ready    sync.WaitGroup // Done by each table once loaded (or ended)
}

// follower is the loop of one table.
type follower struct {
	p      *Pipeline
	spec   TableSpec
	tracer trace.Tracer                // nil: no spans
	log    atomic.Pointer[slog.Logger] // see logger
	cp     Checkpoint
	// cpFrom names where cp was read, for errors that doubt it.
	cpFrom string
	// synced: every snapshot of the metadata the source last loaded was
	// delivered, so an unchanged metadata needs no further work.
	synced bool
	stages []Stage // the table's policies, resolved by load
	// perEvent is the key and value bytes per event of the last batch,
	// which sizes the next (ChunkBytes).
	perEvent atomic.Int64
	resumed  bool      // the resume from a checkpoint was logged
	held     heldState // the retention hold, see hold.go
	bb       *builders // made by the first batch, dropped at idle
	// wait is the table's current poll interval, and changed whether the
	// last catch-up found new metadata (see schedule.go).
	wait       time.Duration
	changed    bool
	lastChange time.Time // see markIdle
	idled      bool
	warm       warmEntry // see warm.go
	// The loop's state (see start), and its wait (see idle, park).
	ctx      context.Context
	ls       loopState
	run      *tablesRun
	iw       idleWait
	pk       parking
	notified bool // the source calls f.poke on its catalog's wake-ups
	// pausedShown is the signal whose paused read the metrics and health
	// show ("": none), see showPaused.
	pausedShown string
	// readFilter is the row filter of the read being delivered, and
	// filter its last binding (see adhoc.go).
	readFilter string
	filter     struct {
		schema *iceberg.Schema
		text   string
		keep   func(values.Row) bool
	}
}

// logger is the pipeline's logger with the table's name, made at the
// table's first line and dropped when it idles (idleSource): 10,000 idle
// tables' handlers were 4 MiB. The sender's goroutine logs too (a hold
// moved during a write), hence the atomic.
func (f *follower) logger() *slog.Logger {
	if l := f.log.Load(); l != nil {
		return l
	}
	l := f.p.Log.With("table", f.spec.Name)
	f.log.CompareAndSwap(nil, l) // a logger another goroutine made is the same
	return l
}

// start begins the table's loop (loop), which ends with f.end. The loop
// runs on goroutines of its own, but not while it waits parked (park).
func (f *follower) start(ctx context.Context) {
	f.ctx = ctx
	f.ls.backoff = f.p.RetryInitial
	if n, ok := f.spec.Source.(ChangeNotifier); ok {
		n.NotifyChanges(f.poke)
		f.p.requests.notify(f.spec.Name, f.poke)
		f.notified = true
	}
	f.loop()
}

// loopState is what the table's loop carries from one step to the next.
type loopState struct {
	backoff  time.Duration
	loaded   bool
	failures int
	starting bool // holds a slot of tablesRun.starting, until its first step ends
	ready    bool // tablesRun.ready is done for the table
}

// readied marks the table ready in its run, once (the loop's goroutines
// call it one at a time: no sync.OnceFunc, which was 2.5 MiB at 10,000
// tables).
func (f *follower) readied() {
	if !f.ls.ready {
		f.ls.ready = true
		f.run.ready.Done()
	}
}

// end ends the table's loop with err (nil: shutdown, or Once done): an
// error that stops the table is logged ("table stopped": a daemon's
// tables stop one by one, and each must be seen when it does).
func (f *follower) end(err error) {
	f.readied()
	defer f.run.wg.Done()
	f.p.warm.leave(f)
	f.p.requests.stopped(f.spec.Name, err)
	if cerr := f.spec.Source.Close(); cerr != nil {
		f.logger().Warn("close the table's source", "err", cerr)
	}
	if err != nil {
		f.run.mu.Lock()
		f.run.errs = append(f.run.errs, &TableError{Table: f.spec.Name, Err: err})
		f.run.mu.Unlock()
	}
}

// loop is the table's loop, until it ends (end) or parks (park).
func (f *follower) loop() {
	ctx, m, h := f.ctx, f.p.Metrics, f.p.Health
	ls := &f.ls
	for {
		again, err := f.step(ctx, &ls.loaded, f.readied)
		if ls.starting {
			ls.starting = false
			<-f.run.starting
		}
		if again {
			continue // the resync read starts at once
		}
		if err != nil {
			ls.loaded = false // after any error, the position comes from the store or sink again
		}
		if ctx.Err() != nil {
			f.end(nil) // shutdown: the last confirmed batch is checkpointed
			return
		}
		switch {
		case err == nil:
			h.OK(f.spec.Name)
			h.Checked(f.spec.Name, f.watched())
			if f.p.Once {
				f.end(nil)
				return
			}
			ls.backoff = f.p.RetryInitial
			if f.changed {
				f.p.warm.touch(f)
			}
			switch f.idle(ctx, f.nextPoll(f.changed)) {
			case waitStop:
				f.end(nil)
				return
			case waitParked:
				return
			}
			continue
		case health.IsThrottled(err):
			// The catalog's doing, not the table's: the whole schedule
			// slows down, and the table is not failing.
			h.Throttle(err, f.p.Poll, max(f.p.MaxPoll, f.p.RetryMax))
			f.logger().Debug("catalog throttled; retrying", "err", err)
			if !sleep(ctx, jitter(h.ThrottleDelay())) {
				f.end(nil)
				return
			}
			continue
		case stops(err):
			m.TableUp.WithLabelValues(f.spec.Name).Set(0)
			h.Stop(f.spec.Name, component(err), err)
			f.logger().Error("table stopped", "err", err)
			f.end(err)
			return
		}
		m.Retries.WithLabelValues(f.spec.Name).Inc()
		h.Fail(f.spec.Name, component(err), err) // logs, rate-limited
		if ls.failures++; f.p.Once && ls.failures >= OnceAttempts {
			m.TableUp.WithLabelValues(f.spec.Name).Set(0)
			f.end(fmt.Errorf("%w (gave up after %d attempts)", err, ls.failures))
			return
		}
		f.logger().Debug("retrying from the checkpoint", "err", err, "backoff", ls.backoff)
		if !sleep(ctx, jitter(ls.backoff)) {
			f.end(nil)
			return
		}
		ls.backoff = min(2*ls.backoff, f.p.RetryMax)
	}
}

// step is one load (when not loaded) and catch-up of the table, in one of
// the pipeline's MaxActive slots; again: a resync read is to start at
// once.
//
// The work runs on a goroutine of its own that ends with it: the stack a
// load and read grow (tens of KiB) is freed then, where the follower's
// goroutine, waiting for its next poll, would keep it (the runtime only
// halves an idle goroutine's stack at each collection). At 10,000 tables
// those stacks were about 10 KiB each; this way only the MaxActive
// working ones are deep.
func (f *follower) step(ctx context.Context, loaded *bool, ready func()) (again bool, err error) {
	if active := f.p.active; active != nil {
		select {
		case active <- struct{}{}:
			defer func() { <-active }()
		case <-ctx.Done():
			return false, nil
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		again, err = f.stepWork(ctx, loaded, ready)
	}()
	<-done
	return again, err
}

// stepWork is step's work, in its slot.
func (f *follower) stepWork(ctx context.Context, loaded *bool, ready func()) (again bool, err error) {
	fresh := false
	if !*loaded {
		err = f.load(ctx)
		*loaded, fresh = err == nil, err == nil
	}
	if err == nil {
		ready()
		err = f.catchUp(ctx, fresh)
		if errors.Is(err, errReadHeld) {
			err = nil // a paused read: poll again
		}
		if errors.Is(err, ErrHistory) && f.p.OnHistoryLoss == ResyncOnHistoryLoss && ctx.Err() == nil {
			err = f.resync(ctx, err)
			if err == nil {
				return true, nil
			}
		}
	}
	return false, err
}

// stops reports whether err stops a table instead of being retried.
func stops(err error) bool {
	return errors.Is(err, ErrHistory) || IsPermanent(err) || errors.Is(err, ErrDisabled)
}

func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// Sleep waits d, or less if ctx ends first (false then): the backoff
// wait of the pipeline's retries, for the packages that retry alike.
func Sleep(ctx context.Context, d time.Duration) bool { return sleep(ctx, d) }

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// rewindStore moves the store's checkpoint back to cp, the sink's, when
// the store is ahead of it: the sink confirmed batches it had not
// committed yet, and they are delivered again from cp.
func (f *follower) rewindStore(ctx context.Context, cp Checkpoint) error {
	rw, ok := f.p.Store.(Rewinder)
	if !ok {
		return nil
	}
	stored, found, err := f.p.Store.Load(ctx, f.p.Name, f.spec.Name)
	if err != nil || !found || stored.TableUUID != cp.TableUUID || !cp.Before(stored) {
		return nil // nothing to rewind (a store error shows at the next save)
	}
	if err := rw.Rewind(ctx, f.p.Name, f.spec.Name, cp); err != nil {
		return &stateError{err}
	}
	f.logger().Info("the sink committed less than the state file holds: delivering again from the sink's checkpoint",
		"state_file", stored.String(), "sink", cp.String())
	return nil
}

// resolveStages resolves the table's policies against its current schema.
func (f *follower) resolveStages() error {
	info := f.spec.Source.Info()
	var stages []Stage
	for _, p := range f.spec.Policies {
		st, err := p.ForTable(f.spec.Name, info.Schema, info.KeyFields, stages)
		if err != nil {
			return Permanent(err)
		}
		if st != nil {
			stages = append(stages, st)
		}
	}
	f.stages = stages
	return nil
}

// load (re)reads the table's position: from a checkpointing sink, else the
// store, else the configured start. After any error the position is
// reloaded from there, never trusted from memory.
func (f *follower) load(ctx context.Context) error {
	src := f.spec.Source
	f.synced = false
	if _, err := src.Refresh(ctx); err != nil {
		return err
	}
	if err := f.resolveStages(); err != nil {
		return err
	}
	if cs, ok := f.p.Sink.(CheckpointSink); ok {
		cp, found, err := cs.Restore(ctx, f.p.Name, src.Info())
		if err != nil {
			return fmt.Errorf("restore checkpoint from sink: %w", err)
		}
		if found {
			if err := f.rewindStore(ctx, cp); err != nil {
				return err
			}
			f.cp, f.cpFrom = cp, "the sink's checkpoint record"
			if cp.Initial && cp.Paused {
				f.p.requests.restorePause(f.spec.Name)
			}
			f.logResume()
			return nil
		}
	}
	cp, found, err := f.p.Store.Load(ctx, f.p.Name, f.spec.Name)
	if IsPermanent(err) {
		return fmt.Errorf("%w; restore the state file from a backup, or run 'icecdc reset --table %s' to start the table over from its start position", err, f.spec.Name)
	}
	if err != nil {
		return err
	}
	if !found {
		if cp, err = f.spec.Start.resolve(ctx, src); err != nil {
			return err
		}
		// Stored at once: a restart must not resolve "latest" again and
		// skip the commits made in between.
		if err := f.saveCP(ctx, cp); err != nil {
			return err
		}
		switch {
		case f.spec.WarnStart != "":
			f.logger().Warn("no checkpoint: starting", append(startAttrs(cp), "why", f.spec.WarnStart)...)
		case f.spec.Start.Kind == StartEarliest && cp.Seq > 0:
			f.logger().Warn("no checkpoint: starting with the oldest retained snapshot; the table's older history was expired",
				"after_sequence_number", cp.Seq)
		default:
			f.logger().Info("no checkpoint: starting", startAttrs(cp)...)
		}
	}
	f.cp, f.cpFrom = cp, "the state store"
	if cp.Initial && cp.Paused {
		f.p.requests.restorePause(f.spec.Name)
	}
	if p, ok := f.p.Store.(interface{ Path() string }); ok {
		f.cpFrom = "state file " + p.Path()
	}
	if found {
		f.logResume()
	}
	return nil
}

// logResume says where a table resumes, once: a reload after an error
// resumes from the same checkpoint and is not news.
func (f *follower) logResume() {
	if f.resumed {
		return
	}
	f.resumed = true
	cp := f.cp
	args := []any{"snapshot", cp.SnapshotID, "sequence_number", cp.Seq}
	switch {
	case cp.Initial:
		args = append(args, "initial_read_next_row", cp.Next)
	case cp.Done:
		args = append(args, "snapshot_done", true)
	default:
		args = append(args, "next_event", cp.Next)
	}
	f.logger().Info("resuming from the checkpoint", append(args, "checkpoint", f.cpFrom)...)
}

// catchUp delivers every snapshot after the checkpoint. An idle poll —
// the metadata is the one already delivered — costs the Refresh alone;
// fresh: load has just refreshed the source (and left it not synced), so
// the catch-up goes on from that load without a second one.
func (f *follower) catchUp(ctx context.Context, fresh bool) error {
	src := f.spec.Source
	start := time.Now()
	changed := false
	if !fresh {
		var err error
		if changed, err = src.Refresh(ctx); err != nil {
			f.synced = false
			return err
		}
	}
	f.changed = changed || !f.synced
	if err := f.serveSnapshots(ctx); err != nil {
		f.synced = false // a read paused or failing: the next poll goes on with it
		return err
	}
	if !changed && f.synced {
		if err := f.hold(ctx); err != nil { // a move the interval held back
			return err
		}
		f.p.Metrics.PollDuration.WithLabelValues(f.spec.Name).Observe(time.Since(start).Seconds())
		return nil
	}
	f.synced = false
	info := src.Info()
	if f.cp.TableUUID != "" && f.cp.TableUUID != info.UUID {
		return fmt.Errorf("%w: table uuid changed from %s (checkpoint in %s) to %s: the table was dropped and re-created; "+
			"to follow the new table, run 'icecdc reset --table %s' (or change its start) and restart", ErrHistory, f.cp.TableUUID, f.cpFrom, info.UUID, f.spec.Name)
	}
	if f.cp.Initial && !f.cp.Done {
		if err := f.initialRead(ctx); err != nil {
			if errors.Is(err, errReadHeld) {
				// A paused read holds the stream: the commits after its
				// snapshot wait, and the lag says so.
				if snaps, serr := src.Snapshots(ctx, f.cp.Seq, 0); serr == nil {
					f.lag(snaps)
				}
			}
			return err
		}
	}
	if f.spec.Net || f.cp.Net && !f.cp.Done {
		if done, err := f.catchUpNet(ctx); done || err != nil {
			return err
		}
	}
	snaps, err := f.pending(ctx)
	if err != nil {
		return err
	}
	f.p.Metrics.PollDuration.WithLabelValues(f.spec.Name).Observe(time.Since(start).Seconds())
	f.lag(snaps)
	if err := f.hold(ctx); err != nil {
		return err
	}
	for i, si := range snaps {
		if i > 0 {
			// Between two commits: the only place where an on-demand
			// snapshot's rows may go, and where the hold may move.
			if err := f.serveSnapshots(ctx); err != nil {
				return err
			}
			if err := f.hold(ctx); err != nil {
				return err
			}
		}
		if err := f.deliverCommit(ctx, si); err != nil {
			return err
		}
		f.lag(snaps[i+1:])
	}
	if err := f.hold(ctx); err != nil {
		return err
	}
	f.synced = true
	if err := f.serveSnapshots(ctx); err != nil {
		// A read paused (or failing) in its first chunks: the next poll
		// must go on with it (a resume, a stop), though nothing changed.
		f.synced = false
		return err
	}
	return nil
}

// pending lists the snapshots after the checkpoint (its own too, when it
// is not done), checked to continue from it.
func (f *follower) pending(ctx context.Context) ([]SnapshotInfo, error) {
	after := f.cp.Seq
	if !f.cp.Done {
		after = f.cp.Seq - 1
	}
	snaps, err := f.spec.Source.Snapshots(ctx, after, 0)
	if errors.Is(err, ErrHistory) {
		return nil, fmt.Errorf("%w; the checkpoint is snapshot %d (sequence number %d, in %s): to resync, run 'icecdc reset --table %s' and restart with start: latest or initial",
			err, f.cp.SnapshotID, f.cp.Seq, f.cpFrom, f.spec.Name)
	}
	if err != nil {
		return nil, err
	}
	if err := f.checkContinuity(snaps); err != nil {
		return nil, fmt.Errorf("%w (the checkpoint was read from %s)", err, f.cpFrom)
	}
	return snaps, nil
}

// deliverCommit reads the commit of si and delivers its events from the
// checkpoint's position on, in a span of its own under ctx's.
func (f *follower) deliverCommit(ctx context.Context, si SnapshotInfo) error {
	t0 := time.Now()
	cctx, span := f.span(ctx, SpanCommit, &si, attribute.String(AttrOperation, si.Operation))
	c, err := f.readCommit(cctx, si)
	if err != nil {
		endSpan(span, err)
		return err
	}
	for _, a := range c.Anomalies {
		f.p.Metrics.Anomalies.WithLabelValues(f.spec.Name, a.Kind).Inc()
	}
	LogAnomalies(f.logger(), c)
	from := 0
	if !f.cp.Done && si.ID == f.cp.SnapshotID {
		from = f.cp.Next
	}
	span.SetAttributes(attribute.Int(AttrEvents, c.Len()-from))
	err = f.deliver(cctx, c, from, SnapshotNone)
	endSpan(span, err)
	if err != nil {
		return err
	}
	f.logger().Info("commit delivered", "snapshot", si.ID, "sequence_number", si.SequenceNumber, "operation", si.Operation,
		"events", c.Len()-from)
	f.p.Metrics.CommitDuration.WithLabelValues(f.spec.Name).Observe(time.Since(t0).Seconds())
	return nil
}

// readCommit reads the commit of si, in a span of its own under ctx's.
func (f *follower) readCommit(ctx context.Context, si SnapshotInfo) (*Commit, error) {
	rctx, span := f.span(ctx, SpanRead, &si)
	c, err := f.spec.Source.Commit(rctx, si)
	if errors.Is(err, ErrHistory) {
		err = fmt.Errorf("%w; to skip this snapshot, run 'icecdc reset --table %s' and restart with start: snapshot:%d", err, f.spec.Name, si.ID)
	}
	endSpan(span, err)
	return c, err
}

// checkContinuity makes sure the listed snapshots continue the stream
// exactly where the checkpoint stands.
func (f *follower) checkContinuity(snaps []SnapshotInfo) error {
	cp, src := f.cp, f.spec.Source
	if cp.SnapshotID == 0 {
		return nil // nothing delivered yet (earliest, or an empty table)
	}
	if !cp.Done || cp.Initial {
		if len(snaps) > 0 && snaps[0].ID == cp.SnapshotID {
			return nil
		}
	} else {
		if len(snaps) > 0 && snaps[0].ParentID == cp.SnapshotID {
			return nil
		}
		if head, ok := src.Head(); len(snaps) == 0 && ok && head.ID == cp.SnapshotID {
			return nil
		}
	}
	head, _ := src.Head()
	if !src.HasSnapshot(cp.SnapshotID) && head.SequenceNumber < cp.Seq {
		return fmt.Errorf("%w: the branch head %d (sequence number %d) is behind checkpoint snapshot %d (sequence number %d), which the table no longer holds: "+
			"its metadata was replaced by an older version or rolled back; to follow the table from its head, run 'icecdc reset --table %s' and restart",
			ErrHistory, head.ID, head.SequenceNumber, cp.SnapshotID, cp.Seq, f.spec.Name)
	}
	if !src.HasSnapshot(cp.SnapshotID) {
		return fmt.Errorf("%w: checkpoint snapshot %d (sequence number %d) was expired before the stream moved past it, so commits may be lost; "+
			"to resync, run 'icecdc reset --table %s' and restart with start: latest or initial", ErrHistory, cp.SnapshotID, cp.Seq, f.spec.Name)
	}
	return fmt.Errorf("%w: the branch head %d (sequence number %d) no longer descends from checkpoint snapshot %d (sequence number %d): the table was rolled back; "+
		"consumers may hold events of commits that no longer exist; to follow the new head, run 'icecdc reset --table %s' and restart",
		ErrHistory, head.ID, head.SequenceNumber, cp.SnapshotID, cp.Seq, f.spec.Name)
}

func (f *follower) lag(pending []SnapshotInfo) {
	m := f.p.Metrics
	m.SnapshotsBehind.WithLabelValues(f.spec.Name).Set(float64(len(pending)))
	behind := 0.0
	if len(pending) > 0 {
		behind = time.Since(time.UnixMilli(pending[0].TimestampMs)).Seconds()
	}
	m.SecondsBehind.WithLabelValues(f.spec.Name).Set(behind)
	head, _ := f.spec.Source.Head()
	f.p.Health.Lag(f.spec.Name, tableLag(head, pending))
	f.held.report(f)
}

// initialRead delivers the head's rows as 'r' events, resumable by index.
// An on-demand snapshot's read stops between two chunks for a pause or a
// stop (holdRead).
func (f *follower) initialRead(ctx context.Context) error {
	for {
		if err := f.holdRead(ctx); err != nil {
			return err
		}
		if !f.cp.Initial || f.cp.Done {
			return nil // stopped
		}
		err := f.readOnce(ctx)
		if !errors.Is(err, errReadInterrupted) {
			return err
		}
	}
}

func (f *follower) readOnce(ctx context.Context) error {
	src := f.spec.Source
	snaps, _, err := src.Retained(ctx)
	if err != nil {
		return err
	}
	var si SnapshotInfo
	for _, s := range snaps {
		if s.ID == f.cp.SnapshotID {
			si = s
		}
	}
	if si.ID == 0 {
		return fmt.Errorf("%w: initial read of snapshot %d: it was expired; run 'icecdc reset --table %s' and restart", ErrHistory, f.cp.SnapshotID, f.spec.Name)
	}
	c, err := src.InitialRead(ctx, si)
	if err != nil {
		return err
	}
	f.p.Progress.Begin("initial read of "+f.spec.Name, 0, 0, int64(c.Len()))
	f.p.Progress.FilesByRows(c.FileEnds)
	f.p.Progress.Add(0, 0, int64(f.cp.Next))
	defer f.p.Progress.Done()
	from := f.cp.Next
	f.readFilter = f.cp.Filter
	err = f.deliver(ctx, c, from, SnapshotRead)
	f.readFilter = ""
	if err != nil {
		return err
	}
	f.logger().Info("initial read delivered", "snapshot", si.ID, "sequence_number", si.SequenceNumber, "rows", c.Len()-from)
	return nil
}

// deliver sends the commit's events from index from on, in chunks, and
// checkpoints after each confirmed chunk. A snapshot without events is
// checkpointed too, so the position follows the head. Events of a
// streamed commit are taken a batch at a time, so at most a chunk of them
// is held.
//
// Reading and encoding a chunk overlaps with writing the previous one
// and storing its checkpoint (a sender, handed one chunk at a time): a
// sink that waits for its destination (an fsync, Kafka's acks) no longer
// stalls the reads. The order of writes and checkpoints is unchanged, and
// a chunk is encoded into the buffers of the chunk before the one in
// flight, which is confirmed by then.
func (f *follower) deliver(ctx context.Context, c *Commit, from int, marker SnapshotMarker) (err error) {
	n := c.Len()
	if f.tracer != nil && !inSpan(ctx) {
		// A read's or a net range's commit: the catch-up's have theirs.
		var span trace.Span
		ctx, span = f.span(ctx, SpanCommit, &c.Snapshot, attribute.String(AttrOperation, c.Snapshot.Operation), attribute.Int(AttrEvents, n-from))
		defer func() { endSpan(span, err) }()
	}
	d := &delivery{ctx: ctx, f: f, c: c, n: n, next: from, marker: marker, initial: marker == SnapshotRead,
		epoch: f.cp.Epoch, limit: f.chunkLimit()}
	d.resync = d.initial && f.cp.Resync
	d.signal, d.mark = f.cp.Signal, f.cp.SignalMark
	if d.initial {
		d.kind, d.filter = f.cp.Kind, f.cp.Filter
	}
	if f.p.SchemaChanges && from == 0 {
		d.change = c.SchemaChange // delivered with the first batch of the snapshot
	}
	d.chunk = make([]Event, 0, min(d.limit, max(n-from, 0)))
	d.s = f.startSender(ctx)
	defer d.s.wait()
	err = c.EachBatch(ctx, from, d.add)
	if err == nil && d.next+len(d.chunk) != n {
		err = fmt.Errorf("snapshot %d: the commit yielded %d events, it announced %d", c.Snapshot.ID, d.next+len(d.chunk), n)
	}
	if err == nil && (len(d.chunk) > 0 || !d.done || d.change != nil) {
		err = d.flush() // the tail, or the Done checkpoint of a commit with no events left
	}
	if serr := d.s.wait(); serr != nil {
		return serr // what the sender met first: the chunks after it were not sent
	}
	return err
}

// delivery is one deliver's state: the chunk being filled, where it
// starts, and the sender that writes the chunks before it.
type delivery struct {
	ctx     context.Context // the commit's span
	f       *follower
	c       *Commit
	n       int // the commit's events
	next    int // the index of the chunk's first event
	chunk   []Event
	limit   int // the events of the chunk being filled
	done    bool
	change  *SchemaChange // not yet delivered
	marker  SnapshotMarker
	initial bool
	resync  bool
	epoch   int64
	signal  string              // Checkpoint.Signal
	mark    *snapreq.SignalMark // Checkpoint.SignalMark
	kind    string              // Checkpoint.Kind and Filter of a read
	filter  string
	turn    int // which of the builders' send encodes the next chunk
	s       *sender
}

// add takes events into chunks, flushing each full one.
func (d *delivery) add(evs []Event) error {
	for len(evs) > 0 {
		k := min(d.limit-len(d.chunk), len(evs))
		d.chunk = append(d.chunk, evs[:k]...)
		evs = evs[k:]
		if len(d.chunk) >= d.limit {
			if err := d.flush(); err != nil {
				return err
			}
			if d.kind != "" && d.next < d.n && d.f.p.requests.interrupts(d.f.spec.Name) {
				return errReadInterrupted
			}
		}
	}
	return nil
}

// flush encodes the chunk and hands it, with its checkpoint, to the
// sender. Two builders (builders.send, kept from commit to commit): while the
// sender writes one chunk's batch, the next is encoded into the other; the
// hand-over blocks until the sender took it, so a builder is reused only
// once its batch was confirmed.
func (d *delivery) flush() error {
	c, lo := d.c, d.next
	hi := lo + len(d.chunk)
	cp := Checkpoint{TableUUID: c.Table.UUID, SnapshotID: c.Snapshot.ID, Seq: c.Snapshot.SequenceNumber,
		Next: hi, Done: hi >= d.n, TimestampMs: c.Snapshot.TimestampMs, Initial: d.initial, Resync: d.resync, Epoch: d.epoch,
		Signal: d.signal, SignalMark: d.mark, Kind: d.kind, Filter: d.filter}
	if d.initial && cp.Done {
		// The stream resumes after the read snapshot. Resync stays: the
		// write below marks this last chunk's events with it.
		cp.Initial, cp.Next, cp.Kind, cp.Filter = false, 0, "", ""
	}
	o := &outgoing{c: c, cp: cp, events: len(d.chunk), initial: d.initial, kind: d.kind, total: d.n}
	if len(d.chunk) > 0 || d.change != nil {
		bb := &d.f.builders().send[d.turn]
		d.turn ^= 1
		_, span := d.f.span(d.ctx, SpanEncode, &c.Snapshot, attribute.Int(AttrEvents, len(d.chunk)))
		var err error
		o.b, err = d.f.encode(bb, chunk{c: c, evs: d.chunk, lo: lo, total: d.n, cp: cp, marker: d.marker, change: d.change})
		endSpan(span, err)
		if err != nil {
			return err
		}
		o.ops = bb.ops
		d.change = nil
	}
	if err := d.s.hand(o); err != nil {
		return err
	}
	d.next, d.chunk, d.done = hi, d.chunk[:0], hi >= d.n
	d.limit = d.f.chunkLimit()
	return nil
}

// sender writes a delivery's chunks and stores their checkpoints, in
// order, on a goroutine of its own. On an error it stops taking chunks:
// the next hand-over meets the error instead.
type sender struct {
	jobs    chan *outgoing // unbuffered: see delivery.flush
	result  chan error     // the goroutine's end, once
	err     error
	stopped bool
}

func (f *follower) startSender(ctx context.Context) *sender {
	s := &sender{jobs: make(chan *outgoing), result: make(chan error, 1)}
	// The goroutine is given its channel: it must not read a field that
	// wait changes, or a sender that starts late would wait on nothing.
	go func(jobs <-chan *outgoing) {
		for o := range jobs {
			if err := f.send(ctx, o); err != nil {
				s.result <- err
				return
			}
		}
		s.result <- nil
	}(s.jobs)
	return s
}

// hand gives o to the sender, or returns the error it stopped on.
func (s *sender) hand(o *outgoing) error {
	if s.stopped {
		return s.err
	}
	select {
	case s.jobs <- o:
		return nil
	case s.err = <-s.result:
		s.stopped = true
		return s.err
	}
}

// wait ends the sender once every chunk handed was sent, and returns its
// error.
func (s *sender) wait() error {
	if !s.stopped {
		close(s.jobs)
		s.err = <-s.result
		s.stopped = true
	}
	return s.err
}

// outgoing is a chunk handed to a sender: its batch (nil when the
// subscription left no event and no schema change), then its checkpoint.
type outgoing struct {
	c       *Commit
	b       *Batch
	ops     opCounts
	cp      Checkpoint
	events  int
	initial bool
	kind    string // an on-demand snapshot's, for its notices
	total   int
}

// send writes o's batch, then stores its checkpoint, even when a shutdown
// began meanwhile, so a restart does not resend it.
func (f *follower) send(ctx context.Context, o *outgoing) error {
	if o.b != nil {
		dctx, span := f.span(ctx, SpanDeliver, &o.c.Snapshot, attribute.Int(AttrEvents, len(o.b.Messages)))
		err := f.sendBatch(dctx, o.c, o.b, &o.ops)
		endSpan(span, err)
		if err != nil {
			return err
		}
	}
	if o.initial {
		f.p.Progress.Add(0, 0, int64(o.events))
	}
	cctx, span := f.span(ctx, SpanCheckpoint, &o.c.Snapshot, attribute.Int(AttrNext, o.cp.Next), attribute.Bool(AttrCheckpoint, o.cp.Done))
	err := f.saveConfirmed(cctx, o.cp)
	endSpan(span, err)
	if err != nil {
		return err
	}
	f.cp = o.cp
	f.p.Metrics.CheckpointSeq.WithLabelValues(f.spec.Name).Set(float64(o.cp.Seq))
	if o.kind != "" && f.p.Notify != nil {
		n := snapreq.SnapshotNotice{Table: f.spec.Name, ID: o.cp.Signal, Kind: o.kind, SnapshotID: o.cp.SnapshotID, Next: o.cp.Next, Total: o.total}
		if !o.cp.Initial {
			n.Next = o.total
			for _, typ := range []string{snapreq.NoticeTableScanCompleted, snapreq.NoticeCompleted} {
				n.Type = typ
				f.p.Notify(n)
			}
		} else {
			n.Type = snapreq.NoticeInProgress
			f.p.Notify(n)
		}
	}
	return nil
}

// saveConfirmed stores the checkpoint of a batch the sink confirmed. A
// failed save is retried here, with the pipeline's backoff, not by the
// table's loop: that would load the last stored position and write the
// confirmed batch again. A shutdown ends the retries (the batch is
// written again after the restart).
func (f *follower) saveConfirmed(ctx context.Context, cp Checkpoint) error {
	backoff, failed := f.p.RetryInitial, false
	for {
		err := f.saveCP(context.WithoutCancel(ctx), cp)
		if err == nil {
			if failed {
				f.p.Health.OK(f.spec.Name)
			}
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		failed = true
		f.p.Health.Fail(f.spec.Name, health.InState, err)
		f.p.Metrics.Retries.WithLabelValues(f.spec.Name).Inc()
		if !sleep(ctx, jitter(backoff)) {
			return err
		}
		backoff = min(2*backoff, f.p.RetryMax)
	}
}

// saveCP stores the table's checkpoint; its error is a stateError.
func (f *follower) saveCP(ctx context.Context, cp Checkpoint) error {
	if err := f.p.Store.Save(ctx, f.p.Name, f.spec.Name, cp); err != nil {
		return &stateError{err}
	}
	return nil
}

// stateError is an error of Store.Save: the state file could not be
// written (a full disk, a lost volume).
type stateError struct{ err error }

func (e *stateError) Error() string { return "state: " + e.err.Error() }
func (e *stateError) Unwrap() error { return e.err }

// chunkLimit returns the events of the next batch: ChunkSize, or fewer
// when the last batch's bytes per event would take it past ChunkBytes.
func (f *follower) chunkLimit() int {
	per := f.perEvent.Load()
	if per <= 0 {
		// No batch measured yet: events are taken to be unmeasuredEvent
		// bytes, so that the first batch stays within ChunkBytes for
		// events up to that size. At the default count of 8192 a
		// debezium-connect-json first batch was 28 MiB, and its buffers
		// grew to that by doubling for every new follower.
		return max(1, min(f.p.ChunkSize, DefaultChunkSize, f.p.ChunkBytes/unmeasuredEvent))
	}
	return max(1, min(f.p.ChunkSize, f.p.ChunkBytes/int(per)))
}

// chunk is a run of a commit's events that becomes one batch.
type chunk struct {
	c      *Commit
	evs    []Event
	lo     int // the commit's index of evs[0]
	total  int // the commit's events
	cp     Checkpoint
	marker SnapshotMarker
	change *SchemaChange // the schema change the batch carries; nil: none
}

// write encodes and sends one chunk (the net ranges' path).
func (f *follower) write(ctx context.Context, ch chunk) error {
	bb := &f.builders().batch
	b, err := f.encode(bb, ch)
	if err != nil || b == nil {
		return err
	}
	return f.sendBatch(ctx, ch.c, b, &bb.ops)
}

// encode encodes a chunk into bb; nil when the policies left nothing to
// write.
func (f *follower) encode(bb *batchBuilder, ch chunk) (*Batch, error) {
	marker := ch.marker
	resync := marker != SnapshotNone && ch.cp.Resync
	stages := f.stages
	if marker != SnapshotNone && f.readFilter != "" {
		stages = append([]Stage{readFilter{f, f.readFilter}}, stages...)
	}
	left, err := applyStages(&ch, stages)
	if err != nil || !left {
		return nil, err // nothing left: only the chunk's checkpoint moves
	}
	c, evs := ch.c, ch.evs
	now := time.Now().UnixMilli()
	bb.start(c, len(evs))
	for k := range evs {
		e, i := &evs[k], ch.lo+k
		if len(stages) > 0 {
			i = e.Index // a stage may have left events out; indexes stay those of the commit
		}
		e.Snapshot, e.Resync = marker, resync
		if marker != SnapshotNone && i == ch.total-1 {
			e.Snapshot = SnapshotLast // the last row of an initial read says so
		}
		if err := bb.add(f.p.Encoder, c, e, now); err != nil {
			return nil, encodeError(err) // the encoder names the event
		}
	}
	b := bb.batch(c, ch.cp)
	if len(evs) > 0 {
		f.perEvent.Store(int64(max(1, bb.size()/len(evs))))
	}
	if ch.change != nil {
		m, err := encodeSchemaChange(f.p.Encoder, c, ch.change, now)
		if err != nil {
			return nil, encodeError(fmt.Errorf("encode the schema change of snapshot %d: %w", c.Snapshot.ID, err))
		}
		b.SchemaChange = m
	}
	return b, nil
}

// applyStages passes ch through stages in order, in place, and reports
// whether anything is left to write. The order is the table's: the read's
// row filter first (it reads the table's own values), then shaping, then
// the subscription (it projects the shaped images, and a column it leaves
// out is not mistaken for one a schema dropped).
func applyStages(ch *chunk, stages []Stage) (bool, error) {
	for _, s := range stages {
		var err error
		if ch.c, ch.evs, err = s.Apply(ch.c, ch.evs); err != nil {
			return false, err
		}
		if ch.change, err = s.SchemaChange(ch.change); err != nil {
			return false, err
		}
		if len(ch.evs) == 0 && ch.change == nil {
			return false, nil // nothing of this chunk passed
		}
	}
	return true, nil
}

// encodeError classes an encoder's error: permanent (the event cannot be
// written as it is), unless the encoder marked it ErrRetry; that one is
// the sink side's (a schema registry serves the Kafka sink) and is
// retried as a sink's transient error is.
func encodeError(err error) error {
	if errors.Is(err, ErrRetry) && !IsPermanent(err) {
		return &sinkError{err}
	}
	return Permanent(err)
}

// sendBatch writes an encoded batch to the sink and counts it.
func (f *follower) sendBatch(ctx context.Context, c *Commit, b *Batch, ops *opCounts) error {
	name := f.spec.Name
	report := retryreport.WithRetryReport(ctx, func(err error) { f.p.Health.Fail(name, health.InSink, err) })
	stopHold := f.keepHold(ctx)
	err := f.p.Sink.Write(report, b)
	stopHold()
	if err != nil {
		class := "transient"
		if IsPermanent(err) || errors.Is(err, ErrDisabled) {
			class = "permanent"
		}
		f.p.Metrics.SinkErrors.WithLabelValues(f.spec.Name, class).Inc()
		return &sinkError{err}
	}
	f.p.Health.OK(name)
	// Counted per batch: a labelled counter looked up per event costs
	// more than encoding it.
	for i, k := range ops {
		if k > 0 {
			f.p.Metrics.Events.WithLabelValues(f.spec.Name, countedOps[i].String()).Add(float64(k))
		}
	}
	if c.Snapshot.TimestampMs > 0 {
		f.p.Metrics.DeliveryLatency.WithLabelValues(f.spec.Name).Observe(time.Since(time.UnixMilli(c.Snapshot.TimestampMs)).Seconds())
	}
	return nil
}

// sinkError is an error of Sink.Write, as the pipeline returns it.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return "sink: " + e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

// component says where an error of a table's loop arose.
func component(err error) string {
	var se *sinkError
	var st *stateError
	switch {
	case errors.As(err, &se):
		return health.InSink
	case errors.As(err, &st):
		return health.InState
	}
	return health.InSource
}
