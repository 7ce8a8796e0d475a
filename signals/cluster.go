package signals

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
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
}

// partSignals is a coordination partition this member owns.
type partSignals struct {
	ctx    context.Context // ends when the partition is given up
	cancel context.CancelFunc
	loaded bool // its mark is read
	ready  bool // the reader hands it every record from floor on
	floor  int64
	marked map[int64]bool // done past floor, as the loaded mark says
	list   []*inflight    // the records read since floor, by offset
	seen   map[int64]bool
	dirty  int // bumped by every change of the mark
	saved  int // dirty as last committed
}

// mark is a partition's mark as committed.
type mark struct {
	Next int64   `json:"next"`
	Done []int64 `json:"done,omitempty"`
}

// markPrefix tells a signal mark from another use of the metadata.
const markPrefix = "signals:"

func parseMark(s string) (mark, error) {
	var m mark
	if len(s) < len(markPrefix) || s[:len(markPrefix)] != markPrefix {
		return m, fmt.Errorf("not a signal mark: %q", s)
	}
	err := json.Unmarshal([]byte(s[len(markPrefix):]), &m)
	return m, err
}

func (c *ClusterChannel) init() {
	c.initOnce.Do(func() {
		c.base, c.stopBase = context.WithCancel(context.Background())
		c.parts = map[int32]*partSignals{}
		c.pos, c.restart = -1, -1
		c.wake, c.saveNow = make(chan struct{}, 1), make(chan struct{}, 1)
		if c.RetryMax <= 0 {
			c.RetryMax = 5 * time.Second
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
		ps := &partSignals{ctx: ctx, cancel: cancel, marked: map[int64]bool{}, seen: map[int64]bool{}}
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
			m, err := parseMark(s)
			if err != nil {
				c.Log.Warn("signals: a partition's mark cannot be read; reading the signal topic from its start for it", "partition", p, "err", err)
			}
			ps.floor = m.Next
			for _, o := range m.Done {
				ps.marked[o] = true
			}
		}
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

func (ps *partSignals) mark() string {
	m := mark{Next: ps.floor}
	for _, f := range ps.list {
		if f.done {
			m.Done = append(m.Done, f.offset)
		}
	}
	for o := range ps.marked {
		if o >= ps.floor {
			m.Done = append(m.Done, o)
		}
	}
	slices.Sort(m.Done)
	b, _ := json.Marshal(m)
	return markPrefix + string(b)
}

// advance moves ps's floor past its done records.
func (ps *partSignals) advance() {
	for len(ps.list) > 0 && ps.list[0].done {
		ps.floor = ps.list[0].offset + 1
		delete(ps.seen, ps.list[0].offset)
		ps.list = ps.list[1:]
	}
	for o := range ps.marked {
		if o < ps.floor {
			delete(ps.marked, o)
		}
	}
	ps.dirty++
}

// Run reads the signal topic until ctx ends. It creates the topic when
// missing; it reads only once a partition is assigned.
func (c *ClusterChannel) Run(ctx context.Context) error {
	c.init()
	defer c.wg.Wait()
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
			if !c.handle(rt, it.Next()) {
				break // a restart is due
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
		if !ps.ready || r.Offset < ps.floor || ps.seen[r.Offset] {
			continue
		}
		f := &inflight{offset: r.Offset, done: true}
		ps.list = append(ps.list, f)
		ps.seen[r.Offset] = true
		tables, mine := byPart[p]
		if mine && !ps.marked[r.Offset] {
			switch {
			case d.none != "":
				rt.passOver(r, d.none)
			case d.err != nil:
				rt.reject(d.a, d.err.Error())
			default:
				f.done = false
				c.wg.Add(1)
				go func() {
					defer c.wg.Done()
					if rt.act(ps.ctx, d.a, tables) {
						c.finish(ps, f)
					}
				}()
			}
		}
		ps.advance()
	}
	c.save()
	return true
}

// finish marks f done in ps, unless ps was given up meanwhile.
func (c *ClusterChannel) finish(ps *partSignals, f *inflight) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps.ctx.Err() != nil {
		return
	}
	f.done = true
	ps.advance()
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

// inflight is a signal read whose effect is not durable yet.
type inflight struct {
	offset int64
	done   bool
}
