package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/kafka"
)

// Table is one table of the pipeline, which any member may follow.
type Table struct {
	// TableSpec is the table as a pipeline follows it, without its
	// Source: each follow opens one.
	cdc.TableSpec
	// Open returns a new source for the table; the pipeline that
	// follows it closes it.
	Open func() (cdc.Source, error)
}

// Options configure a Member.
type Options struct {
	Pipeline    string
	Version     string // this binary's version; no live member may be newer
	Fingerprint string // of the configuration every member must share
	Config      Config // with its defaults
	// Kafka is the Kafka configuration of the tables' transactional
	// producers: the sink's in exactly-once mode (events and
	// checkpoints), else the cluster's connection (checkpoints only).
	Kafka kafka.Config
	// ExactlyOnce makes each table's transactional producer its sink too.
	ExactlyOnce bool
	// Sink is the sink shared by the member's tables when ExactlyOnce is
	// false; the member does not close it.
	Sink   cdc.Sink
	Tables []Table
	// NewPipeline returns the pipeline of one table, with the settings
	// (encoder, poll, chunk, metrics, health) of the configuration.
	NewPipeline func(spec cdc.TableSpec, sink cdc.Sink, store cdc.Store) *cdc.Pipeline
	Log         *slog.Logger
	Metrics     *Metrics
	// Released, if set, is called with a table's name once the member
	// gave the table up (or lost it) and its follower stopped: the
	// daemon drops the table's series there (metrics.Metrics.Forget).
	Released func(table string)
	// Ready, if set, is closed once the member joined the group and
	// started the tables of its first assignment.
	Ready chan struct{}
	// RetryInitial and RetryMax bound the backoff of a table whose
	// source cannot be loaded (default 500ms and 30s).
	RetryInitial, RetryMax time.Duration
	// Assigned, if set, is called with the coordination partitions the
	// group gave this member, once their tables are started; Revoked
	// with those it gives up (or lost, with lost true), before their
	// tables are stopped: the group hands a partition to its next owner
	// only after Revoked returned, so what runs for one partition at a
	// time (the heartbeats of partition 0, the signals of a partition's
	// tables) never runs on two members at once. Both are called from
	// the group's callbacks and must return quickly.
	Assigned func(parts []int32)
	Revoked  func(parts []int32, lost bool)
}

// Member is one process of a cluster: it joins the group and follows the
// tables of the partitions it is assigned.
type Member struct {
	o    Options
	name string
	log  *slog.Logger
	cl   *kgo.Client
	// instance is the member's group.instance.id (KIP-345 static
	// membership); empty for a dynamic member.
	instance string
	release  func() // frees the instance id's slot

	// byPart lists each partition's tables as indexes into o.Tables:
	// every member indexes every table of the pipeline, so the index
	// holds 4 bytes a table rather than a copy of each.
	byPart map[int32][]int32

	idMu    sync.Mutex
	coordID [16]byte // the coordination topic's id, for SaveMarks

	mu        sync.Mutex
	running   map[string]*runner // by table name
	closing   bool
	gen       atomic.Int32
	readyOnce sync.Once
}

// runner is a table being followed by this member.
type runner struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// New prepares a member; Run joins the group.
func New(o Options) (*Member, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics(nil)
	}
	if o.RetryInitial <= 0 {
		o.RetryInitial = 500 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 30 * time.Second
	}
	host, _ := os.Hostname()
	m := &Member{o: o, name: fmt.Sprintf("%s-%d", host, os.Getpid()), byPart: map[int32][]int32{}, running: map[string]*runner{},
		instance: o.Config.InstanceID, release: func() {}}
	if m.instance == "" {
		id, release, err := instanceSlot(o.Config.Group)
		switch {
		case errors.Is(err, errors.ErrUnsupported):
			o.Log.Warn("cluster: no instance id slot on this system; joining with a dynamic membership (set cluster.instance_id for a static one)")
		case err != nil:
			return nil, err
		default:
			m.instance, m.release = id, release
		}
	}
	m.log = o.Log.With("member", m.name)
	if m.instance != "" {
		m.log = m.log.With("instance_id", m.instance)
	}
	for i, t := range o.Tables {
		p := Partition(t.Name, o.Config.Partitions)
		m.byPart[p] = append(m.byPart[p], int32(i))
	}
	m.gen.Store(-1)
	return m, nil
}

// Name is the member's name: host-pid, as checkpoint records and
// `icecdc status` show it.
func (m *Member) Name() string { return m.name }

// Owned lists the tables this member follows now, sorted.
func (m *Member) Owned() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.running))
	for name := range m.running {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// Generation is the group generation the member is in (-1 before it
// joined).
func (m *Member) Generation() int32 { return m.gen.Load() }

// Run checks the cluster, joins the group and follows the tables it is
// assigned until ctx is done. Then it stops every table (their in-flight
// batches finish and are checkpointed) and leaves the group, so that the
// other members take the tables over at once rather than after the
// session timeout; all of that within the session timeout (see shutdown).
func (m *Member) Run(ctx context.Context) error {
	defer m.release()
	c := m.o.Config
	base, err := c.Kafka.ClientOpts()
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	admCl, err := kgo.NewClient(base...)
	if err != nil {
		return fmt.Errorf("cluster: kafka client: %w", err)
	}
	adm := kadm.NewClient(admCl)
	defer admCl.Close()
	self := clientID(m.o.Version, m.o.Fingerprint, m.name)
	if err := m.startChecks(ctx, adm, self); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it joined
		}
		return err
	}

	opts := append(base[:len(base):len(base)],
		kgo.ClientID(self),
		kgo.ConsumerGroup(c.Group),
		kgo.ConsumeTopics(c.Topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(c.SessionTimeout),
		kgo.HeartbeatInterval(heartbeatInterval(c.SessionTimeout)),
		kgo.RebalanceTimeout(rebalanceTimeout(c.SessionTimeout)),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(m.assigned),
		kgo.OnPartitionsRevoked(m.revoked),
		kgo.OnPartitionsLost(m.lost),
	)
	if m.instance != "" {
		opts = append(opts, kgo.InstanceID(m.instance))
	}
	m.cl, err = kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("cluster: kafka client: %w", err)
	}
	m.log.Info("cluster: joining", "group", c.Group, "topic", c.Topic, "partitions", c.Partitions, "tables", len(m.o.Tables))
	// The coordination topic has no records; polling surfaces the
	// group's errors, and franz-go manages the group in the background.
	fenced := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			fs.EachError(func(t string, p int32, err error) {
				if ctx.Err() != nil || errors.Is(err, context.Canceled) {
					return
				}
				if errors.Is(err, kerr.FencedInstanceID) {
					select {
					case fenced <- err:
					default:
					}
					return
				}
				m.log.Warn("cluster: group consumer", "topic", t, "partition", p, "err", err)
			})
			if fs.IsClientClosed() {
				return
			}
		}
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-fenced:
		// Another process joined with this member's instance id: it
		// has the tables now, and this one must not carry on.
		runErr = fmt.Errorf("cluster: group %s: another member joined with this member's instance id %s (cluster.instance_id): %w", c.Group, m.instance, err)
	}
	m.shutdown(adm)
	return runErr
}

// shutdown stops the member within the session timeout, so that it exits
// within it (a SIGTERM's grace period): its tables get until half of it
// to finish their in-flight batches (a table that does not is abandoned:
// its next owner fences its producer, so nothing it still sends commits),
// then the member leaves the group, by the rest of the time at most.
//
// A static member's close does not leave the group (a restart with the
// same instance id would get its assignment back without a rebalance),
// but a stopping member must hand its tables over at once: waiting for
// its session to expire would stall them for the whole session timeout.
// So once franz-go has stopped managing the group, the member sends the
// LeaveGroup for its instance id itself. Only a member that dies without
// shutting down (SIGKILL, a crash) keeps its place for the session
// timeout, and its restart on the same host takes it back.
func (m *Member) shutdown(adm *kadm.Client) {
	c := m.o.Config
	begin := time.Now()
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	n := len(m.Owned())
	if left := m.stopUntil(m.allTables(), "released", begin.Add(c.SessionTimeout/2)); left > 0 {
		m.log.Warn("cluster: tables still finishing a batch at half the session timeout; leaving the group without them (their next owners fence them)",
			"tables", left, "session_timeout", c.SessionTimeout)
	}
	leaveBy := begin.Add(c.SessionTimeout * 8 / 10)
	leaveCtx, cancelLeave := context.WithDeadline(context.Background(), leaveBy)
	defer cancelLeave()
	if err := m.cl.LeaveGroupContext(leaveCtx); err != nil {
		m.log.Warn("cluster: leave group", "err", err)
	}
	if m.instance != "" {
		resp, err := adm.LeaveGroup(leaveCtx, kadm.LeaveGroup(c.Group).InstanceIDs(m.instance))
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.UnknownMemberID) {
			m.log.Warn("cluster: leave group as static member", "err", err)
		}
	}
	closed := make(chan struct{})
	go func() {
		m.cl.Close()
		close(closed)
	}()
	t := time.NewTimer(time.Until(begin.Add(c.SessionTimeout * 9 / 10)))
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		m.log.Warn("cluster: the Kafka client did not close in time; exiting without it")
	}
	m.log.Info("cluster: left the group; tables handed over", "tables", n, "ms", time.Since(begin).Milliseconds())
}

// startChecks runs the start checks until they pass, fail for good, or
// ctx is done. An answer that says the group coordinator or a partition
// leader is moving, loading or not there yet, a rebalance, a network
// error, or an attempt that ran out of time is retried, with a backoff
// from RetryInitial to RetryMax and a log line each time: a broker that
// restarts or moves a coordinator is no reason for a member to exit.
func (m *Member) startChecks(ctx context.Context, adm *kadm.Client, self string) error {
	c := m.o.Config
	backoff := m.o.RetryInitial
	for {
		err := func() error {
			actx, cancel := context.WithTimeout(ctx, checkAttempt)
			defer cancel()
			if err := ensureCoordinationTopic(actx, adm, c.Topic, c.Partitions); err != nil {
				return err
			}
			if err := checkCheckpointTopic(actx, adm, c.Kafka.WithDefaults().CheckpointTopic, c.MinReplicas); err != nil {
				return err
			}
			return checkPeers(actx, adm, c.Group, m.o.Version, m.o.Fingerprint, self)
		}()
		if err == nil || ctx.Err() != nil || !Retriable(err) {
			return err
		}
		m.log.Warn("cluster: start checks: Kafka is not ready; retrying", "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, m.o.RetryMax)
	}
}

// checkAttempt bounds one attempt of the start checks; a retriable
// answer that lasts longer is logged and the checks start again.
const checkAttempt = 10 * time.Second

// Retriable reports whether err is an answer or failure of Kafka that
// goes away by itself: a retriable Kafka error code (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, LEADER_NOT_AVAILABLE…),
// REBALANCE_IN_PROGRESS, a connection that failed or closed, or a
// request that ran out of time.
func Retriable(err error) bool {
	var ne net.Error
	return kerr.IsRetriable(err) || errors.Is(err, kerr.RebalanceInProgress) || kgo.IsRetryableBrokerErr(err) ||
		errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}

// rebalanceTimeout is how long the group waits for every member to
// rejoin once a rebalance starts: the session timeout, so that a member
// paused or dead in the middle of a rebalance holds the others up no
// longer than a silent one does (its revoke, which stops its tables, has
// as long). Kafka's 60s default (30s before) stalled every table for that
// long whenever a member froze during a rebalance.
func rebalanceTimeout(session time.Duration) time.Duration { return session }

// heartbeatInterval is how often a member heartbeats to the group
// coordinator. Under the classic group protocol a member learns that the
// group is rebalancing (a member left or joined) only from the answer to
// its next heartbeat, so this interval bounds the time the others take
// to start on a leaving member's tables: at most 500ms (Kafka's 3s
// default made graceful takeovers wait a second or more), and a tenth of
// the session timeout when that is shorter (Kafka wants at most a third).
func heartbeatInterval(session time.Duration) time.Duration {
	return max(min(session/10, 500*time.Millisecond), 50*time.Millisecond)
}

// owner names the writer of checkpoint records.
func (m *Member) owner() (string, int32) { return m.name, m.gen.Load() }

func (m *Member) noteGeneration(cl *kgo.Client) {
	_, gen := cl.GroupMetadata()
	m.gen.Store(gen)
	m.o.Metrics.Generation.Set(float64(gen))
}

func (m *Member) tablesOf(parts map[string][]int32) []Table {
	var out []Table
	for _, p := range parts[m.o.Config.Topic] {
		for _, i := range m.byPart[p] {
			out = append(out, m.o.Tables[i])
		}
	}
	return out
}

func (m *Member) assigned(ctx context.Context, cl *kgo.Client, parts map[string][]int32) {
	m.o.Metrics.Rebalances.WithLabelValues("assigned").Inc()
	m.noteGeneration(cl)
	tables := m.tablesOf(parts)
	m.mu.Lock()
	if !m.closing {
		for _, t := range tables {
			if _, ok := m.running[t.Name]; ok {
				continue
			}
			rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			r := &runner{cancel: cancel, done: make(chan struct{})}
			m.running[t.Name] = r
			m.o.Metrics.Owned.WithLabelValues(t.Name).Set(1)
			m.o.Metrics.Moves.WithLabelValues("acquired").Inc()
			at := time.Now()
			go func() {
				defer close(r.done)
				m.follow(rctx, t, at)
			}()
		}
		m.o.Metrics.Tables.Set(float64(len(m.running)))
	}
	m.mu.Unlock()
	if len(tables) > 0 {
		m.log.Info("cluster: tables assigned", "generation", m.gen.Load(), "tables", names(tables))
	}
	if ps := parts[m.o.Config.Topic]; len(ps) > 0 && m.o.Assigned != nil {
		m.o.Assigned(ps)
	}
	if m.o.Ready != nil {
		m.readyOnce.Do(func() { close(m.o.Ready) })
	}
}

func (m *Member) revoked(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
	m.o.Metrics.Rebalances.WithLabelValues("revoked").Inc()
	if ps := parts[m.o.Config.Topic]; len(ps) > 0 && m.o.Revoked != nil {
		m.o.Revoked(ps, false)
	}
	tables := m.tablesOf(parts)
	m.stop(tables, "released")
	m.noteGeneration(cl)
	if len(tables) > 0 {
		m.log.Info("cluster: tables handed over", "tables", names(tables))
	}
}

func (m *Member) lost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	m.o.Metrics.Rebalances.WithLabelValues("lost").Inc()
	if ps := parts[m.o.Config.Topic]; len(ps) > 0 && m.o.Revoked != nil {
		m.o.Revoked(ps, true)
	}
	tables := m.tablesOf(parts)
	m.stop(tables, "lost")
	if len(tables) > 0 {
		// Their new owners have fenced this member's producers: nothing
		// it still sent after the session expired was committed.
		m.log.Warn("cluster: lost the group membership (session expired?); tables stopped", "tables", names(tables))
	}
}

// allTables returns the tables this member follows now.
func (m *Member) allTables() []Table {
	owned := m.Owned()
	out := make([]Table, len(owned))
	for i, name := range owned {
		out[i] = Table{TableSpec: cdc.TableSpec{Name: name}}
	}
	return out
}

// stop stops the followers of tables and waits for them: a table is
// given up only once its in-flight batch is confirmed and checkpointed,
// or has failed.
func (m *Member) stop(tables []Table, direction string) { m.stopUntil(tables, direction, time.Time{}) }

// stopUntil is stop that waits until deadline at most (for ever when it
// is zero) and returns how many followers had not stopped by then.
func (m *Member) stopUntil(tables []Table, direction string, deadline time.Time) int {
	m.mu.Lock()
	var stopping []*runner
	var stopped []string
	stopOne := func(name string) {
		r, ok := m.running[name]
		if !ok {
			return
		}
		delete(m.running, name)
		r.cancel()
		stopping = append(stopping, r)
		stopped = append(stopped, name)
		// A member serves series only for the tables it owns: kept at 0,
		// a table's series would stay on every member it ever passed
		// through.
		m.o.Metrics.Owned.DeleteLabelValues(name)
		m.o.Metrics.Moves.WithLabelValues(direction).Inc()
	}
	for _, t := range tables {
		stopOne(t.Name)
	}
	m.o.Metrics.Tables.Set(float64(len(m.running)))
	m.mu.Unlock()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	for i, r := range stopping {
		select {
		case <-r.done:
		case <-timeout:
			return len(stopping) - i
		}
		m.released(stopped[i])
	}
	return 0
}

// released tells Options.Released that the table's follower stopped,
// unless the table was assigned to this member again meanwhile.
func (m *Member) released(name string) {
	if m.o.Released == nil {
		return
	}
	m.mu.Lock()
	_, again := m.running[name]
	m.mu.Unlock()
	if !again {
		m.o.Released(name)
	}
}

// follow runs the table's pipeline until ctx is done or the table stops
// on an error. Its transactional producer is made once the table's uuid
// is known; loading the producer id (in the pipeline's first load) fences
// the previous owner.
func (m *Member) follow(ctx context.Context, t Table, assigned time.Time) {
	log := m.log.With("table", t.Name)
	backoff := m.o.RetryInitial
	first := &firstDelivery{log: log, assigned: assigned}
	for {
		err := m.followOnce(ctx, t, first)
		if ctx.Err() != nil {
			return
		}
		if err == nil || cdc.IsPermanent(err) || errors.Is(err, cdc.ErrHistory) || errors.Is(err, cdc.ErrDisabled) {
			return // the pipeline logged why the table stopped
		}
		log.Warn("cluster: cannot follow the table yet; retrying", "err", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, m.o.RetryMax)
	}
}

func (m *Member) followOnce(ctx context.Context, t Table, first *firstDelivery) error {
	src, err := t.Open()
	if err != nil {
		return err
	}
	if _, err := src.Refresh(ctx); err != nil {
		src.Close()
		return err
	}
	info := src.Info()
	kc := m.o.Kafka
	kc.Delivery = kafka.ExactlyOnce
	kc.Pipeline = m.o.Pipeline
	kc.TransactionalID = m.o.Pipeline + "/" + info.UUID
	kc.Owner = m.owner
	kc.Logger = m.log.With("table", t.Name)
	s, err := kafka.New(kc)
	if err != nil {
		src.Close()
		return err
	}
	txn := s.(*kafka.ExactlyOnceSink)
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		txn.Close(cctx)
	}()
	store := &tableStore{txn: txn, info: info, first: first}
	var sink cdc.Sink = sharedSink{Sink: m.o.Sink, first: first}
	if m.o.ExactlyOnce {
		sink = &eventSink{ExactlyOnceSink: txn, store: store, first: first}
	}
	spec := t.TableSpec
	spec.Source = src
	p := m.o.NewPipeline(spec, sink, store)
	return p.Run(ctx) // closes src
}

func names(ts []Table) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	slices.Sort(out)
	return out
}
