package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/kafka"
)

// Table is one table of the pipeline, which any member may follow.
type Table struct {
	Name  string
	Start cdc.Start
	Hold  bool // keep a retention hold on the table (tables[].hold)
	// Columns, Net and NetMaxRows are tables[].columns, tables[].net and
	// net_max_rows, as cdc.TableSpec has them.
	Columns    []string
	Net        bool
	NetMaxRows int
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
	// Ready, if set, is closed once the member joined the group and
	// started the tables of its first assignment.
	Ready chan struct{}
	// RetryInitial and RetryMax bound the backoff of a table whose
	// source cannot be loaded (default 500ms and 30s).
	RetryInitial, RetryMax time.Duration
}

// Member is one process of a cluster: it joins the group and follows the
// tables of the partitions it is assigned.
type Member struct {
	o    Options
	name string
	log  *slog.Logger
	cl   *kgo.Client

	byPart map[int32][]Table

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
	m := &Member{o: o, name: fmt.Sprintf("%s-%d", host, os.Getpid()), byPart: map[int32][]Table{}, running: map[string]*runner{}}
	m.log = o.Log.With("member", m.name)
	for _, t := range o.Tables {
		p := Partition(t.Name, o.Config.Partitions)
		m.byPart[p] = append(m.byPart[p], t)
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
// session timeout.
func (m *Member) Run(ctx context.Context) error {
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
	checkCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := ensureCoordinationTopic(checkCtx, adm, c.Topic, c.Partitions); err != nil {
		return err
	}
	if err := checkCheckpointTopic(checkCtx, adm, c.Kafka.WithDefaults().CheckpointTopic, c.MinReplicas); err != nil {
		return err
	}
	if err := checkPeers(checkCtx, adm, c.Group, m.o.Version, m.o.Fingerprint, self); err != nil {
		return err
	}

	opts := append(base[:len(base):len(base)],
		kgo.ClientID(self),
		kgo.ConsumerGroup(c.Group),
		kgo.ConsumeTopics(c.Topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(c.SessionTimeout),
		kgo.HeartbeatInterval(max(c.SessionTimeout/5, 100*time.Millisecond)),
		kgo.RebalanceTimeout(max(2*c.SessionTimeout, 30*time.Second)),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(m.assigned),
		kgo.OnPartitionsRevoked(m.revoked),
		kgo.OnPartitionsLost(m.lost),
	)
	m.cl, err = kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("cluster: kafka client: %w", err)
	}
	m.log.Info("cluster: joining", "group", c.Group, "topic", c.Topic, "partitions", c.Partitions, "tables", len(m.o.Tables))
	// The coordination topic has no records; polling surfaces the
	// group's errors, and franz-go manages the group in the background.
	go func() {
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			fs.EachError(func(t string, p int32, err error) {
				if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
					m.log.Warn("cluster: group consumer", "topic", t, "partition", p, "err", err)
				}
			})
			if fs.IsClientClosed() {
				return
			}
		}
	}()

	<-ctx.Done()
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	n := len(m.Owned())
	m.stop(m.allTables(), "released")
	leaveCtx, cancelLeave := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelLeave()
	if err := m.cl.LeaveGroupContext(leaveCtx); err != nil {
		m.log.Warn("cluster: leave group", "err", err)
	}
	m.cl.Close()
	m.log.Info("cluster: left the group; tables handed over", "tables", n)
	return nil
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
		out = append(out, m.byPart[p]...)
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
			go func() {
				defer close(r.done)
				m.follow(rctx, t)
			}()
		}
		m.o.Metrics.Tables.Set(float64(len(m.running)))
	}
	m.mu.Unlock()
	if len(tables) > 0 {
		m.log.Info("cluster: tables assigned", "generation", m.gen.Load(), "tables", names(tables))
	}
	if m.o.Ready != nil {
		m.readyOnce.Do(func() { close(m.o.Ready) })
	}
}

func (m *Member) revoked(_ context.Context, cl *kgo.Client, parts map[string][]int32) {
	m.o.Metrics.Rebalances.WithLabelValues("revoked").Inc()
	tables := m.tablesOf(parts)
	m.stop(tables, "released")
	m.noteGeneration(cl)
	if len(tables) > 0 {
		m.log.Info("cluster: tables handed over", "tables", names(tables))
	}
}

func (m *Member) lost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	m.o.Metrics.Rebalances.WithLabelValues("lost").Inc()
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
		out[i] = Table{Name: name}
	}
	return out
}

// stop stops the followers of tables and waits for them: a table is
// given up only once its in-flight batch is confirmed and checkpointed,
// or has failed.
func (m *Member) stop(tables []Table, direction string) {
	m.mu.Lock()
	var stopping []*runner
	stopOne := func(name string) {
		r, ok := m.running[name]
		if !ok {
			return
		}
		delete(m.running, name)
		r.cancel()
		stopping = append(stopping, r)
		m.o.Metrics.Owned.WithLabelValues(name).Set(0)
		m.o.Metrics.Moves.WithLabelValues(direction).Inc()
	}
	for _, t := range tables {
		stopOne(t.Name)
	}
	m.o.Metrics.Tables.Set(float64(len(m.running)))
	m.mu.Unlock()
	for _, r := range stopping {
		<-r.done
	}
}

// follow runs the table's pipeline until ctx is done or the table stops
// on an error. Its transactional producer is made once the table's uuid
// is known; loading the producer id (in the pipeline's first load) fences
// the previous owner.
func (m *Member) follow(ctx context.Context, t Table) {
	log := m.log.With("table", t.Name)
	backoff := m.o.RetryInitial
	for {
		err := m.followOnce(ctx, t)
		if ctx.Err() != nil {
			return
		}
		if err == nil || errors.Is(err, cdc.ErrPermanent) || errors.Is(err, cdc.ErrHistory) || errors.Is(err, cdc.ErrDisabled) {
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

func (m *Member) followOnce(ctx context.Context, t Table) error {
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
	store := &tableStore{txn: txn, info: info}
	var sink cdc.Sink = sharedSink{m.o.Sink}
	if m.o.ExactlyOnce {
		sink = &eventSink{ExactlyOnceSink: txn, store: store}
	}
	p := m.o.NewPipeline(cdc.TableSpec{Name: t.Name, Source: src, Start: t.Start, Hold: t.Hold,
		Columns: t.Columns, Net: t.Net, NetMaxRows: t.NetMaxRows}, sink, store)
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
