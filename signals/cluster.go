package signals

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/snapreq"
)

// Marks are a cluster's coordination partitions as signals see them
// (*cluster.Member): each table belongs to one partition, and the
// partition's owner keeps the partition's mark (only a member of the
// group's current generation can write one).
type Marks interface {
	PartitionOf(table string) int32
	LoadMarks(ctx context.Context, parts []int32) (map[int32]string, error)
	SaveMarks(ctx context.Context, marks map[int32]string) error
}

// ClusterChannel reads the signal topic for a cluster member: every
// member reads it, and each signal is acted on, for each table it names,
// by the member that owns the table's coordination partition, exactly
// once across the partition's moves.
//
// Each partition's mark says how far its tables have read the topic:
// the offset below which every record is done for them, and the done
// offsets past it (a signal that waits, say for a table's initial read,
// holds the offset back but not the records after it). The owner
// commits the mark as its signals finish and when it gives the
// partition up; the member that takes the partition over reads the
// topic again from the mark, passes over the records the mark says are
// done and acts on the rest, so that a signal read by no owner (the
// table was between two members) or not finished by the last one is
// acted on by the next. A snapshot that started but whose record was
// not marked done yet (the member died in between) is not read twice:
// the table's checkpoint names the signal, and the table answers a
// request with that id as read already.
//
// A partition without a mark (a new cluster) reads the topic from its
// start, as Debezium's signal consumer does with a new group.
type ClusterChannel struct {
	// Opts are the Kafka client's options (brokers, TLS, SASL).
	Opts []kgo.Opt
	// Topic is the signal topic; its partition 0 is read.
	Topic string
	// Key is the key a signal must have (the topic prefix).
	Key string
	// Tables are the tables signals may name.
	Tables []string
	Target Target
	Marks  Marks
	Notify *Notifier
	Log    *slog.Logger
	// RetryMax bounds the backoff of a signal for a table this member
	// owns whose pipeline is not serving yet (starting). Default 5s.
	RetryMax time.Duration
	// Window bounds the signals this member acts on and has not finished;
	// while that many wait, the reader stops. Default DefaultWindow.
	Window int

	initOnce sync.Once
	base     context.Context // ends when Run returns
	stopBase context.CancelFunc

	mu      sync.Mutex
	parts   map[int32]*partSignals
	pos     int64 // the next offset the reader hands over; -1: not reading
	restart int64 // where the reader must start again; -1: nowhere
	kick    context.CancelFunc
	wake    chan struct{} // the reader: a restart is due
	saveNow chan struct{} // the committer: a mark changed
	wg      sync.WaitGroup
	acting  int           // signals handed to lanes, not finished
	freed   chan struct{} // acting went down
	lanes   lanes
}

// partSignals is a coordination partition this member owns.
type partSignals struct {
	ctx    context.Context // ends when the partition is given up
	cancel context.CancelFunc
	loaded bool // its mark is read
	ready  bool // the reader hands it every record from floor on
	floor  int64
	done   *skip    // done past floor, as the loaded mark says
	prog   progress // the records read from floor on: prog.end, and those pending
	dirty  int      // bumped by every change of the mark
	saved  int      // dirty as last committed
}

// A partition's mark, as committed: markPrefix, the first offset not
// done, and the progress metadata past it (see progress). Marks of an
// earlier icecdc, oldMarkPrefix and JSON {"next", "done"}, are read.
const (
	markPrefix    = "signals/2 "
	oldMarkPrefix = "signals:"
)

// oldMark is a mark an earlier icecdc committed.
type oldMark struct {
	Next int64   `json:"next"`
	Done []int64 `json:"done,omitempty"`
}

// parseMark reads a mark: the first offset not done, and what past it
// is done (nil: nothing).
func parseMark(s string) (int64, *skip, error) {
	if rest, ok := strings.CutPrefix(s, oldMarkPrefix); ok {
		var m oldMark
		if len(s) > 1<<20 {
			return 0, nil, fmt.Errorf("a mark of %d bytes", len(s))
		}
		if err := json.Unmarshal([]byte(rest), &m); err != nil {
			return 0, nil, err
		}
		sk := &skip{base: m.Next, listed: map[int64]bool{}}
		for _, o := range m.Done {
			if o >= m.Next {
				sk.listed[o] = true
			}
		}
		return m.Next, sk, nil
	}
	rest, ok := strings.CutPrefix(s, markPrefix)
	if !ok {
		return 0, nil, fmt.Errorf("not a signal mark: %s", quote(s))
	}
	head, meta, _ := strings.Cut(rest, " ")
	next, err := strconv.ParseInt(head, 36, 64)
	if err != nil || next < 0 {
		return 0, nil, fmt.Errorf("not a signal mark: %s", quote(s))
	}
	sk, err := parseSkip(next, meta)
	return next, sk, err
}

func (c *ClusterChannel) init() {
	c.initOnce.Do(func() {
		c.base, c.stopBase = context.WithCancel(context.Background())
		c.parts = map[int32]*partSignals{}
		c.pos, c.restart = -1, -1
		c.wake, c.saveNow, c.freed = make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
		if c.RetryMax <= 0 {
			c.RetryMax = 5 * time.Second
		}
		if c.Window <= 0 {
			c.Window = DefaultWindow
		}
	})
}

func (c *ClusterChannel) router() *router {
	return &router{topic: c.Topic, key: c.Key, tables: c.Tables, target: c.Target, notify: c.Notify, log: c.Log, retryMax: c.RetryMax}
}

// Assigned takes partitions over (cluster.Options.Assigned): their marks
// are read in the background, and the topic is read again from the
// lowest of them.
func (c *ClusterChannel) Assigned(parts []int32) {
	c.init()
	c.mu.Lock()
	load := map[int32]*partSignals{}
	for _, p := range parts {
		if c.parts[p] != nil {
			continue
		}
		ctx, cancel := context.WithCancel(c.base)
		ps := &partSignals{ctx: ctx, cancel: cancel}
		c.parts[p], load[p] = ps, ps
	}
	c.mu.Unlock()
	if len(load) == 0 {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.load(load)
	}()
}

// load reads the marks of parts until it can or they are given up. A
// partition given up and taken again meanwhile is the later Assigned's
// to load: its mark may have changed since this one read it.
func (c *ClusterChannel) load(load map[int32]*partSignals) {
	backoff := 100 * time.Millisecond
	var marks map[int32]string
	parts := slices.Sorted(maps.Keys(load))
	for {
		ctx, cancel := context.WithTimeout(c.base, 10*time.Second)
		var err error
		marks, err = c.Marks.LoadMarks(ctx, parts)
		cancel()
		if err == nil {
			break
		}
		if c.base.Err() != nil {
			return
		}
		c.Log.Warn("signals: read the partitions' marks; retrying", "partitions", parts, "err", err, "backoff", backoff)
		if !cdc.Sleep(c.base, backoff) {
			return
		}
		backoff = min(2*backoff, c.RetryMax)
		c.mu.Lock()
		parts = slices.DeleteFunc(parts, func(p int32) bool { return c.parts[p] != load[p] })
		c.mu.Unlock()
		if len(parts) == 0 {
			return
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range parts {
		ps := load[p]
		if c.parts[p] != ps {
			continue // given up meanwhile
		}
		ps.loaded = true
		if s, ok := marks[p]; ok {
			next, done, err := parseMark(s)
			if err != nil {
				c.Log.Warn("signals: a partition's mark cannot be read; reading the signal topic from its start for it", "partition", p, "err", err)
				next, done = 0, nil
			}
			ps.floor, ps.done = next, done
		}
		ps.prog.end = ps.floor
		if c.pos >= 0 && ps.floor >= c.pos {
			ps.ready = true
			continue
		}
		if c.restart < 0 || ps.floor < c.restart {
			c.restart = ps.floor
		}
	}
	if c.restart >= 0 {
		if c.kick != nil {
			c.kick()
		}
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// Revoked gives partitions up (cluster.Options.Revoked): the signals in
// flight for their tables stop waiting, and the marks are committed
// (unless lost: the member is out of the group, its commit would fail).
func (c *ClusterChannel) Revoked(parts []int32, lost bool) {
	c.init()
	c.mu.Lock()
	marks := map[int32]string{}
	for _, p := range parts {
		ps := c.parts[p]
		if ps == nil {
			continue
		}
		ps.cancel()
		delete(c.parts, p)
		if ps.loaded && ps.ready && ps.dirty != ps.saved && !lost {
			marks[p] = ps.mark()
		}
	}
	c.mu.Unlock()
	if len(marks) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(c.base, 2*time.Second)
	defer cancel()
	if err := c.Marks.SaveMarks(ctx, marks); err != nil {
		c.Log.Warn("signals: commit the marks of the partitions given up (their next owners read those signals again and pass over those their tables took)", "err", err)
	}
}

// mark is ps's mark to commit. The records past its end that the
// loaded mark said were done are read again by the next owner: their
// tables' checkpoints recognise a snapshot taken.
func (ps *partSignals) mark() string {
	at, meta := ps.prog.commit()
	if meta == "" {
		return markPrefix + strconv.FormatInt(at, 36)
	}
	return markPrefix + strconv.FormatInt(at, 36) + " " + meta
}

// Run reads the signal topic until ctx ends. It creates the topic when
// missing; it reads only once a partition is assigned.
func (c *ClusterChannel) Run(ctx context.Context) error {
	c.init()
	defer c.wg.Wait()
	defer c.lanes.wait() // after stopBase: the lanes' work ends with its partition
	defer c.stopBase()
	cl, err := kgo.NewClient(c.Opts...)
	if err != nil {
		return fmt.Errorf("signal topic %s: %w", c.Topic, err)
	}
	err = createTopic(ctx, kadm.NewClient(cl), c.Topic, c.Log)
	cl.Close()
	if err != nil {
		return nil // ctx ended
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.commitLoop(ctx)
	}()
	c.Log.Info("reading signals for the partitions this member owns", "topic", c.Topic)
	rt := c.router()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-c.wake:
		}
		if err := c.read(ctx, rt); err != nil {
			return err
		}
	}
	return nil
}

// room waits until fewer than Window signals are being acted on; false
// when ctx ended first.
func (c *ClusterChannel) room(ctx context.Context) bool {
	for {
		c.mu.Lock()
		full := c.acting >= c.Window
		c.mu.Unlock()
		if !full {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-c.freed:
		}
	}
}

// read reads from the due restart until ctx ends or another restart is
// due.
func (c *ClusterChannel) read(ctx context.Context, rt *router) error {
	rctx, kick := context.WithCancel(ctx)
	defer kick()
	c.mu.Lock()
	start := c.restart
	if start < 0 {
		c.mu.Unlock()
		return nil
	}
	c.restart, c.pos, c.kick = -1, start, kick
	for _, ps := range c.parts {
		if ps.loaded {
			ps.ready = true // every loaded partition's floor is at start or past it
		}
	}
	c.mu.Unlock()
	cl, err := kgo.NewClient(append(c.Opts[:len(c.Opts):len(c.Opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: {0: kgo.NewOffset().At(start)}}))...)
	if err != nil {
		return fmt.Errorf("signal topic %s: %w", c.Topic, err)
	}
	defer cl.Close()
	for rctx.Err() == nil {
		fs := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			break
		}
		fs.EachError(func(topic string, p int32, err error) {
			c.Log.Warn("read the signal topic", "topic", topic, "partition", p, "err", err)
		})
		for it := fs.RecordIter(); !it.Done(); {
			if !c.room(rctx) || !c.handle(rt, it.Next()) {
				break // a restart is due, or the reader stops
			}
		}
	}
	if ctx.Err() == nil {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// handle hands r to the partitions it concerns; false when a restart is
// due (r is read again then).
func (c *ClusterChannel) handle(rt *router, r *kgo.Record) bool {
	d := rt.decode(r)
	byPart := map[int32][]string{}
	switch {
	case d.none != "" || d.err != nil:
		byPart[0] = nil // told by the owner of partition 0 only
	default:
		for _, t := range d.a.Tables {
			p := c.Marks.PartitionOf(t)
			byPart[p] = append(byPart[p], t)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.restart >= 0 {
		return false
	}
	c.pos = r.Offset + 1
	for p, ps := range c.parts {
		if !ps.ready || r.Offset < ps.prog.end {
			continue // not this partition's yet, or handed to it already
		}
		tables, mine := byPart[p]
		if !mine || ps.done.done(r.Offset) {
			ps.prog.pass(r.Offset)
			ps.dirty++
			continue
		}
		switch {
		case d.none != "":
			rt.passOver(r, d.none)
		case d.err != nil:
			rt.reject(d.a, d.err.Error())
		default:
			ps.prog.read(r.Offset)
			ps.dirty++
			c.act(rt, ps, r.Offset, d.a, tables)
			continue
		}
		ps.prog.pass(r.Offset)
		ps.dirty++
	}
	c.save()
	return true
}

// act acts on a's signal for tables of ps, with c.mu held: a control at
// once (in its own goroutine: a table's pipeline may be starting), an
// execute-snapshot on its tables' lanes, in the topic's order.
func (c *ClusterChannel) act(rt *router, ps *partSignals, offset int64, a Action, tables []string) {
	c.acting++
	var left atomic.Int64
	left.Store(int64(len(tables)))
	var failed atomic.Bool
	part := func(ok bool) {
		if !ok {
			failed.Store(true)
		}
		if left.Add(-1) != 0 {
			return
		}
		c.mu.Lock()
		c.acting--
		c.mu.Unlock()
		select {
		case c.freed <- struct{}{}:
		default:
		}
		if !failed.Load() {
			c.finish(ps, offset)
		}
	}
	if a.Signal.Type != TypeExecuteSnapshot {
		left.Store(1)
		var dropped []*laneWork
		if a.Control == snapreq.StopSnapshot {
			for _, t := range tables {
				dropped = append(dropped, c.lanes.remove(t)...)
			}
		}
		c.wg.Add(1)
		go func() { // part and drop take c.mu, held here
			defer c.wg.Done()
			for _, w := range dropped {
				w.drop()
			}
			part(rt.control(ps.ctx, a, tables))
		}()
		return
	}
	rt.logExecute(a, tables)
	mark := &snapreq.SignalMark{Topic: c.Topic, Partition: 0, Offset: offset, ID: a.Signal.ID}
	for _, t := range tables {
		c.lanes.add(t, &laneWork{
			run: func() { part(rt.snapshot(ps.ctx, a, t, mark, nil)) },
			drop: func() {
				rt.log.Info("signal: snapshot stopped before it started", "id", a.Signal.ID, "table", t)
				part(true)
			},
		})
	}
}

// finish marks the record at offset done in ps, unless ps was given up
// meanwhile.
func (c *ClusterChannel) finish(ps *partSignals, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps.ctx.Err() != nil {
		return
	}
	ps.prog.done(offset)
	ps.dirty++
	c.save()
}

// save tells the committer a mark changed.
func (c *ClusterChannel) save() {
	select {
	case c.saveNow <- struct{}{}:
	default:
	}
}

// commitLoop commits the marks that changed, at once and then every
// second while a commit fails (a rebalance in progress).
func (c *ClusterChannel) commitLoop(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.saveNow:
		case <-t.C:
		}
		c.mu.Lock()
		marks := map[int32]string{}
		at := map[int32]int{}
		for p, ps := range c.parts {
			if ps.ready && ps.dirty != ps.saved {
				marks[p], at[p] = ps.mark(), ps.dirty
			}
		}
		c.mu.Unlock()
		if len(marks) == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := c.Marks.SaveMarks(cctx, marks)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			failing = true
			c.Log.Warn("signals: commit the partitions' marks; retried every second", "err", err)
		case err == nil:
			if failing {
				failing = false
				c.Log.Info("signals: the partitions' marks are committed again")
			}
			c.mu.Lock()
			for p, d := range at {
				if ps := c.parts[p]; ps != nil && ps.saved < d {
					ps.saved = d
				}
			}
			c.mu.Unlock()
		}
	}
}
