package signals

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/snapreq"
)

// Target is what signals act on: a pipeline's on-demand snapshots
// (*cdc.Pipeline), or a cluster member's.
type Target interface {
	Snapshot(ctx context.Context, table string, req snapreq.SnapshotRequest) (cdc.SnapshotInfo, error)
	ControlSnapshot(table string, c snapreq.SnapshotControl) error
}

// Queuer is a Target that queues a snapshot request without waiting for
// its start (*cdc.Pipeline): a table's lane queues its requests with
// its lock held, so that a stop-snapshot read after one finds it queued
// (and drops it) or not yet taken from the lane (and removes it).
type Queuer interface {
	QueueSnapshot(table string, req snapreq.SnapshotRequest) (wait func(context.Context) (cdc.SnapshotInfo, error), err error)
}

// ErrNotOwned is a table another member of the cluster follows: its
// owner acts on the signal.
var ErrNotOwned = errors.New("the table is followed by another member")

// Channel reads the signal topic and routes each signal to Target.
//
// Each table's signals run in the topic's order (a lane per table) and
// different tables' side by side. A signal is done once its effect is
// durable (see the package's doc); the group's committed offset is the
// first signal not done, and the commit's metadata names the later ones
// not done, so a restart passes over those done past the committed
// offset. A snapshot a signal started is named in its table's
// checkpoint (snapreq.SignalMark), so a signal read again after a crash
// before its commit is not read twice either.
type Channel struct {
	// Opts are the Kafka client's options (brokers, TLS, SASL).
	Opts []kgo.Opt
	// Topic and Group are the signal topic (partition 0 is read, as
	// Debezium does) and the consumer group its offset is committed in.
	Topic, Group string
	// Key is the key a signal must have: the topic prefix. Records with
	// another key are for another connector and are passed over.
	Key string
	// Tables are the tables signals may name.
	Tables []string
	Target Target
	Notify *Notifier // nil: bad signals are logged only
	Log    *slog.Logger
	// Window bounds the signals read and not done yet; while that many
	// wait, the channel fetches no more. Default DefaultWindow.
	Window int

	mu         sync.Mutex
	prog       progress
	skipped    int64 // records passed over as done before a restart
	skipLogged bool
	carry      *skip         // the done signals the restart found, for commit
	freed      chan struct{} // a signal is done: room in the window
	dirty      chan struct{} // the committer: progress changed
	lanes      lanes
	adm        *kadm.Client

	commitMu sync.Mutex
	last     struct {
		at      int64
		meta    string
		failing bool
	}
}

// Run reads signals until ctx ends. It creates the topic when missing
// and starts at the group's committed offset (the topic's start without
// one, as Debezium's auto.offset.reset=earliest).
func (c *Channel) Run(ctx context.Context) error {
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	c.freed, c.dirty = make(chan struct{}, 1), make(chan struct{}, 1)
	c.last.at = -1
	cl, err := kgo.NewClient(c.Opts...)
	if err != nil {
		return fmt.Errorf("signal topic %s: %w", c.Topic, err)
	}
	start, skip, err := c.prepare(ctx, kadm.NewClient(cl))
	c.carry = skip
	cl.Close()
	if err != nil {
		return nil // ctx ended
	}
	// Fetches are bounded: a record above MaxSignalBytes is refused once
	// read, and at most a fetch's worth waits in the client while the
	// window is full.
	cl, err = kgo.NewClient(append(c.Opts[:len(c.Opts):len(c.Opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: {0: start}}),
		kgo.FetchMaxBytes(4*MaxSignalBytes), kgo.FetchMaxPartitionBytes(2*MaxSignalBytes))...)
	if err != nil {
		return fmt.Errorf("signal topic %s: %w", c.Topic, err)
	}
	defer cl.Close()
	c.adm = kadm.NewClient(cl)
	c.Log.Info("reading signals", "topic", c.Topic, "group", c.Group)
	var committer sync.WaitGroup
	committer.Add(1)
	go func() {
		defer committer.Done()
		c.commitLoop(ctx)
	}()
	rt := c.router()
	for ctx.Err() == nil {
		room := c.room(ctx)
		if room == 0 {
			break
		}
		fs := cl.PollRecords(ctx, room)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) {
			c.Log.Warn("read the signal topic", "topic", topic, "partition", p, "err", err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			c.handle(ctx, rt, r, skip)
		})
	}
	c.lanes.wait()
	committer.Wait()
	c.commit(context.WithoutCancel(ctx), true)
	return nil
}

// room waits until fewer than Window signals are pending and returns
// how many more may be read (0: ctx ended).
func (c *Channel) room(ctx context.Context) int {
	logged := false
	for {
		c.mu.Lock()
		n := c.Window - len(c.prog.pending)
		c.mu.Unlock()
		if n > 0 {
			return n
		}
		if !logged {
			logged = true
			c.Log.Info("signals: the window of pending signals is full; reading no more until one is done", "window", c.Window)
		}
		select {
		case <-ctx.Done():
			return 0
		case <-c.freed:
		}
	}
}

// prepare creates the topic if needed and returns where to read from,
// and what past it was done before.
func (c *Channel) prepare(ctx context.Context, adm *kadm.Client) (kgo.Offset, *skip, error) {
	if err := createTopic(ctx, adm, c.Topic, c.Log); err != nil {
		return kgo.Offset{}, nil, err
	}
	for {
		offs, err := adm.FetchOffsets(ctx, c.Group)
		none := kgo.NewOffset().AtStart()
		if errors.Is(err, kerr.GroupIDNotFound) {
			return none, nil, nil // a group that never committed
		}
		if err == nil {
			o, ok := offs.Lookup(c.Topic, 0)
			if !ok || o.Err != nil || o.At < 0 {
				return none, nil, nil
			}
			sk, err := parseSkip(o.At, o.Metadata)
			if err != nil {
				c.Log.Warn("signals: the committed offset's metadata cannot be read; the signals past the offset are read again", "offset", o.At, "err", err)
			}
			c.prog.end = o.At
			c.last.at, c.last.meta = o.At, o.Metadata // committed already
			return kgo.NewOffset().At(o.At), sk, nil
		}
		c.Log.Warn("read the signal group's offset", "group", c.Group, "err", err)
		select {
		case <-ctx.Done():
			return kgo.Offset{}, nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// createTopic creates the signal topic, with one partition, unless it
// exists; it retries until it can or ctx ends (ctx's error).
func createTopic(ctx context.Context, adm *kadm.Client, topic string, log *slog.Logger) error {
	for {
		_, err := adm.CreateTopic(ctx, 1, -1, nil, topic)
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		log.Warn("create the signal topic", "topic", topic, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// handle acts on one record: at once when it asks nothing, is refused
// or is a control, else on its tables' lanes.
func (c *Channel) handle(ctx context.Context, rt *router, r *kgo.Record, sk *skip) {
	if sk != nil && r.Offset >= sk.end && !c.skipLogged {
		c.skipLogged = true
		c.Log.Info("signals: passed over the signals done before the restart", "signals", c.skipped, "from", sk.base, "to", sk.end)
	}
	if sk.done(r.Offset) {
		c.mu.Lock()
		c.prog.pass(r.Offset)
		c.mu.Unlock()
		c.skipped++
		return
	}
	d := rt.decode(r)
	switch {
	case d.none != "":
		rt.passOver(r, d.none)
	case d.err != nil:
		rt.reject(d.a, d.err.Error())
	case d.a.Signal.Type != TypeExecuteSnapshot:
		if d.a.Control == snapreq.StopSnapshot {
			for _, t := range d.a.Tables {
				for _, w := range c.lanes.remove(t) {
					w.drop() // an execute before the stop, not started
				}
			}
		}
		if !rt.control(ctx, d.a, d.a.Tables) {
			c.mu.Lock()
			c.prog.read(r.Offset) // not handed: read again after the restart
			c.mu.Unlock()
			return
		}
	default:
		c.execute(ctx, rt, r.Offset, d.a)
		return
	}
	c.mu.Lock()
	c.prog.pass(r.Offset)
	c.mu.Unlock()
	c.changed()
}

// execute queues an execute-snapshot on its tables' lanes; it is done
// once each table took it.
func (c *Channel) execute(ctx context.Context, rt *router, offset int64, a Action) {
	c.mu.Lock()
	c.prog.read(offset)
	c.mu.Unlock()
	rt.logExecute(a, a.Tables)
	if len(a.Tables) == 0 { // Parse matches one at least; never left pending
		c.finishRecord(offset)
		return
	}
	var left atomic.Int64
	left.Store(int64(len(a.Tables)))
	part := func() {
		if left.Add(-1) == 0 {
			c.finishRecord(offset)
		}
	}
	mark := &snapreq.SignalMark{Topic: c.Topic, Partition: 0, Offset: offset, ID: a.Signal.ID}
	q, _ := rt.target.(Queuer)
	for _, t := range a.Tables {
		var queued *queuedSnapshot
		w := &laneWork{
			run: func() {
				if rt.snapshot(ctx, a, t, mark, queued) {
					part()
				} // else not durable: read again after the restart
			},
			drop: func() {
				rt.log.Info("signal: snapshot stopped before it started", "id", a.Signal.ID, "table", t)
				part()
			},
		}
		if q != nil {
			w.queue = func() {
				if ctx.Err() == nil {
					queued = &queuedSnapshot{}
					queued.wait, queued.err = q.QueueSnapshot(t, rt.request(a, t, mark))
				}
			}
		}
		c.lanes.add(t, w)
	}
}

// queuedSnapshot is a request a lane queued (Queuer): its wait, or the
// error queueing it met.
type queuedSnapshot struct {
	wait func(context.Context) (cdc.SnapshotInfo, error)
	err  error
}

// finishRecord marks the pending record at offset done.
func (c *Channel) finishRecord(offset int64) {
	c.mu.Lock()
	c.prog.done(offset)
	c.mu.Unlock()
	select {
	case c.freed <- struct{}{}:
	default:
	}
	c.changed()
}

// changed tells the committer.
func (c *Channel) changed() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// commitLoop commits the progress as it changes, until ctx ends.
func (c *Channel) commitLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.dirty:
		case <-t.C: // a failed commit again
		}
		c.commit(ctx, false)
	}
}

// commit commits the progress if it changed since the last commit.
func (c *Channel) commit(ctx context.Context, final bool) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	c.mu.Lock()
	p := c.prog
	if sk := c.carry; sk != nil && sk.end > p.end {
		// Not read that far since the restart: what the restart found
		// done past here stays so.
		p.pending = slices.Clone(p.pending)
		for o := range sk.pending {
			if o >= p.end {
				p.pending = append(p.pending, o)
			}
		}
		slices.Sort(p.pending)
		p.end = sk.end
	}
	at, meta := p.commit()
	c.mu.Unlock()
	if at == c.last.at && meta == c.last.meta || at <= 0 && meta == "" && c.last.at < 0 {
		return
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: c.Topic, Partition: 0, At: at, LeaderEpoch: -1, Metadata: meta})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.adm.CommitAllOffsets(cctx, c.Group, offs); err != nil {
		if !c.last.failing || final {
			// Read again after a restart, a done signal is recognised
			// by its table's checkpoint (a snapshot) or repeated (a
			// control, a refusal's notice).
			c.Log.Warn("commit the signal offset", "group", c.Group, "offset", at, "err", err)
		}
		c.last.failing = true
		return
	}
	c.last.at, c.last.meta, c.last.failing = at, meta, false
}

func (c *Channel) router() *router {
	return &router{topic: c.Topic, key: c.Key, tables: c.Tables, target: c.Target, notify: c.Notify, log: c.Log}
}

// router turns signal records into actions on a Target; Channel and
// ClusterChannel share it.
type router struct {
	topic, key string
	tables     []string
	target     Target
	notify     *Notifier
	log        *slog.Logger
	// retryMax bounds the backoff of a table not served yet (a cluster
	// member's table whose pipeline is starting); 0: not retried.
	retryMax time.Duration
}

// decoded is one signal record as read: an action, or why it asks
// nothing (none), or why it is refused (err).
type decoded struct {
	a    Action
	none string
	err  error
}

func (rt *router) decode(r *kgo.Record) decoded {
	if string(r.Key) != rt.key {
		return decoded{none: "signal for another connector passed over"}
	}
	if len(bytes.TrimSpace(r.Value)) == 0 || bytes.Equal(bytes.TrimSpace(r.Value), []byte("null")) {
		// A tombstone (a compacted signal topic) asks for nothing.
		return decoded{none: "-"}
	}
	var a Action
	var err error
	if len(r.Value) > MaxSignalBytes {
		err = fmt.Errorf("signal: a record of %d bytes, more than %d", len(r.Value), MaxSignalBytes)
	} else {
		a, err = Parse(r.Value, rt.tables)
	}
	if a.Signal.ID == "" {
		// Notifications need an id: a signal without one is named by
		// where it is.
		a.Signal.ID = fmt.Sprintf("%s@%d", rt.topic, r.Offset)
	}
	if err != nil {
		return decoded{a: a, err: fmt.Errorf("%v (offset %d)", err, r.Offset)}
	}
	return decoded{a: a}
}

// passOver logs a record that asks nothing.
func (rt *router) passOver(r *kgo.Record, why string) {
	if why != "-" {
		rt.log.Info(why, "offset", r.Offset, "key", quote(string(r.Key)), "want", rt.key)
	}
}

// act runs a's signal on tables (of a.Tables) and reports whether it is
// done: false when ctx ended first (not durable: the signal is read
// again), or, with retryMax set, when ctx ended while a table was not
// served yet.
func (rt *router) act(ctx context.Context, a Action, tables []string) bool {
	if a.Signal.Type != TypeExecuteSnapshot {
		return rt.control(ctx, a, tables)
	}
	rt.logExecute(a, tables)
	var twg sync.WaitGroup
	var shutdown atomic.Bool
	for _, t := range tables {
		twg.Add(1)
		go func() {
			defer twg.Done()
			if !rt.snapshot(ctx, a, t, nil, nil) {
				shutdown.Store(true)
			}
		}()
	}
	twg.Wait()
	return !shutdown.Load()
}

// control hands a's control to tables; false when ctx ended first.
func (rt *router) control(ctx context.Context, a Action, tables []string) bool {
	for _, t := range tables {
		err := rt.retry(ctx, t, func() error { return rt.target.ControlSnapshot(t, a.Control) })
		switch {
		case err == nil, errors.Is(err, ErrNotOwned) && rt.retryMax == 0:
		case ctx.Err() != nil:
			return false
		default:
			rt.reject(Action{Signal: a.Signal, Tables: []string{t}}, fmt.Sprintf("signal %s (%s): %v", quote(a.Signal.ID), a.Signal.Type, err))
		}
	}
	rt.log.Info("signal", "id", a.Signal.ID, "type", a.Signal.Type, "tables", shortTables(tables), "table_count", len(tables))
	return true
}

// logExecute logs an execute-snapshot as read. A filter's literals may
// be a masked column's values: logged as ?.
func (rt *router) logExecute(a Action, tables []string) {
	filters := make(map[string]string, min(len(tables), maxListed))
	for _, t := range tables[:min(len(tables), maxListed)] {
		if f, ok := a.Filters[t]; ok {
			filters[t] = rowfilter.Redact(f)
		}
	}
	rt.log.Info("signal", "id", a.Signal.ID, "type", a.Signal.Type, "snapshot", a.Kind, "tables", shortTables(tables), "table_count", len(tables), "filters", filters)
}

// snapshot hands a's execute-snapshot to table t (mark: where it was
// read; nil: its id alone names it) and reports whether that is done:
// false when ctx ended first.
func (rt *router) snapshot(ctx context.Context, a Action, t string, mark *snapreq.SignalMark, queued *queuedSnapshot) bool {
	if ctx.Err() != nil {
		return false
	}
	var si cdc.SnapshotInfo
	var err error
	switch {
	case queued != nil && queued.err != nil:
		err = queued.err
	case queued != nil:
		si, err = queued.wait(ctx)
	default:
		req := rt.request(a, t, mark)
		err = rt.retry(ctx, t, func() (err error) {
			si, err = rt.target.Snapshot(ctx, t, req)
			return err
		})
	}
	switch {
	case err == nil:
		rt.log.Info("signal: snapshot started", "id", a.Signal.ID, "table", t, "snapshot", si.ID)
	case ctx.Err() != nil:
		return false
	case errors.Is(err, ErrNotOwned) && rt.retryMax == 0:
	case errors.Is(err, snapreq.ErrSnapshotStopped):
		rt.log.Info("signal: snapshot stopped before it started", "id", a.Signal.ID, "table", t)
	default:
		rt.reject(Action{Signal: a.Signal, Kind: a.Kind, Tables: []string{t}}, fmt.Sprintf("signal %s (%s): %v", quote(a.Signal.ID), a.Signal.Type, err))
	}
	return true
}

// request is a's snapshot request for table t.
func (rt *router) request(a Action, t string, mark *snapreq.SignalMark) snapreq.SnapshotRequest {
	return snapreq.SnapshotRequest{ID: a.Signal.ID, Kind: a.Kind, Filter: a.Filters[t], Mark: mark}
}

// retry calls f until it returns anything but ErrNotOwned or ctx ends,
// with a backoff up to retryMax (f once when retryMax is 0).
func (rt *router) retry(ctx context.Context, table string, f func() error) error {
	backoff := 10 * time.Millisecond
	for logged := false; ; {
		err := f()
		if rt.retryMax == 0 || !errors.Is(err, ErrNotOwned) || ctx.Err() != nil {
			return err
		}
		if !logged && backoff >= rt.retryMax {
			logged = true
			rt.log.Info("signal: waiting for the table's pipeline", "table", table, "err", err)
		}
		if !cdc.Sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(2*backoff, rt.retryMax)
	}
}

// reject logs and notifies a refused signal.
func (rt *router) reject(a Action, reason string) {
	rt.log.Warn("signal refused", "reason", reason)
	rt.notify.Rejected(a.Signal, a.Kind, a.Tables, reason)
}
