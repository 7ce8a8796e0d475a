package signals

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
)

// Target is what signals act on: a pipeline's on-demand snapshots
// (*cdc.Pipeline), or a cluster member's.
type Target interface {
	Snapshot(ctx context.Context, table string, req cdc.SnapshotRequest) (cdc.SnapshotInfo, error)
	ControlSnapshot(table string, c cdc.SnapshotControl) error
}

// ErrNotOwned is a table another member of the cluster follows: its
// owner acts on the signal.
var ErrNotOwned = errors.New("the table is followed by another member")

// Channel reads the signal topic and routes each signal to Target.
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

	mu        sync.Mutex
	inflight  []*inflight // by offset
	commitMu  sync.Mutex
	committed int64
	adm       *kadm.Client
}

// inflight is a signal read whose effect is not durable yet.
type inflight struct {
	offset int64
	done   bool
}

// Run reads signals until ctx ends. It creates the topic when missing
// and starts at the group's committed offset (the topic's start without
// one, as Debezium's auto.offset.reset=earliest).
func (c *Channel) Run(ctx context.Context) error {
	cl, err := kgo.NewClient(c.Opts...)
	if err != nil {
		return fmt.Errorf("signal topic %s: %w", c.Topic, err)
	}
	start, err := c.prepare(ctx, kadm.NewClient(cl))
	cl.Close()
	if err != nil {
		return err
	}
	cl, err = kgo.NewClient(append(c.Opts[:len(c.Opts):len(c.Opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.Topic: {0: start}}))...)
	if err != nil {
		return fmt.Errorf("signal topic %s: %w", c.Topic, err)
	}
	defer cl.Close()
	c.adm = kadm.NewClient(cl)
	c.Log.Info("reading signals", "topic", c.Topic, "group", c.Group)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(topic string, p int32, err error) {
			c.Log.Warn("read the signal topic", "topic", topic, "partition", p, "err", err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			c.handle(ctx, r, &wg)
		})
	}
}

// prepare creates the topic if needed and returns where to read from.
func (c *Channel) prepare(ctx context.Context, adm *kadm.Client) (kgo.Offset, error) {
	if err := createTopic(ctx, adm, c.Topic, c.Log); err != nil {
		return kgo.Offset{}, err
	}
	for {
		offs, err := adm.FetchOffsets(ctx, c.Group)
		none := kgo.NewOffset().AtStart()
		if errors.Is(err, kerr.GroupIDNotFound) {
			return none, nil // a group that never committed
		}
		if err == nil {
			if o, ok := offs.Lookup(c.Topic, 0); ok && o.Err == nil && o.At >= 0 {
				return kgo.NewOffset().At(o.At), nil
			}
			return none, nil
		}
		c.Log.Warn("read the signal group's offset", "group", c.Group, "err", err)
		select {
		case <-ctx.Done():
			return kgo.Offset{}, ctx.Err()
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

// handle acts on one record; its offset is committed once it and every
// record before it are done.
func (c *Channel) handle(ctx context.Context, r *kgo.Record, wg *sync.WaitGroup) {
	f := &inflight{offset: r.Offset}
	c.mu.Lock()
	c.inflight = append(c.inflight, f)
	c.mu.Unlock()
	rt := c.router()
	d := rt.decode(r)
	switch {
	case d.none != "":
		rt.passOver(r, d.none)
		c.done(ctx, f)
		return
	case d.err != nil:
		rt.reject(d.a, d.err.Error())
		c.done(ctx, f)
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if rt.act(ctx, d.a, d.a.Tables) {
			c.done(ctx, f)
		} // else not durable: read again after the restart
	}()
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
	a, err := Parse(r.Value, rt.tables)
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
		rt.log.Info(why, "offset", r.Offset, "key", string(r.Key), "want", rt.key)
	}
}

// act runs a's signal on tables (of a.Tables) and reports whether it is
// done: false when ctx ended first (not durable: the signal is read
// again), or, with retryMax set, when ctx ended while a table was not
// served yet.
func (rt *router) act(ctx context.Context, a Action, tables []string) bool {
	if a.Signal.Type != TypeExecuteSnapshot {
		for _, t := range tables {
			err := rt.retry(ctx, t, func() error { return rt.target.ControlSnapshot(t, a.Control) })
			switch {
			case err == nil, errors.Is(err, ErrNotOwned) && rt.retryMax == 0:
			case ctx.Err() != nil:
				return false
			default:
				rt.reject(a, fmt.Sprintf("signal %q (%s): %v", a.Signal.ID, a.Signal.Type, err))
			}
		}
		rt.log.Info("signal", "id", a.Signal.ID, "type", a.Signal.Type, "tables", tables)
		return true
	}
	// A filter's literals may be a masked column's values: logged as ?.
	filters := make(map[string]string, len(a.Filters))
	for t, f := range a.Filters {
		filters[t] = cdc.RedactFilter(f)
	}
	rt.log.Info("signal", "id", a.Signal.ID, "type", a.Signal.Type, "snapshot", a.Kind, "tables", tables, "filters", filters)
	var twg sync.WaitGroup
	var shutdown atomic.Bool
	for _, t := range tables {
		twg.Add(1)
		go func() {
			defer twg.Done()
			req := cdc.SnapshotRequest{ID: a.Signal.ID, Kind: a.Kind, Filter: a.Filters[t]}
			var si cdc.SnapshotInfo
			err := rt.retry(ctx, t, func() (err error) {
				si, err = rt.target.Snapshot(ctx, t, req)
				return err
			})
			switch {
			case err == nil:
				rt.log.Info("signal: snapshot started", "id", a.Signal.ID, "table", t, "snapshot", si.ID)
			case ctx.Err() != nil:
				shutdown.Store(true)
			case errors.Is(err, ErrNotOwned) && rt.retryMax == 0:
			case errors.Is(err, cdc.ErrSnapshotStopped):
				rt.log.Info("signal: snapshot stopped before it started", "id", a.Signal.ID, "table", t)
			default:
				rt.reject(Action{Signal: a.Signal, Kind: a.Kind, Tables: []string{t}}, fmt.Sprintf("signal %q (%s): %v", a.Signal.ID, a.Signal.Type, err))
			}
		}()
	}
	twg.Wait()
	return !shutdown.Load()
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

// done marks f done and commits the offset past the done prefix.
func (c *Channel) done(ctx context.Context, f *inflight) {
	c.mu.Lock()
	f.done = true
	next := int64(-1)
	for len(c.inflight) > 0 && c.inflight[0].done {
		next = c.inflight[0].offset + 1
		c.inflight = c.inflight[1:]
	}
	c.mu.Unlock()
	if next < 0 {
		return
	}
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	if next <= c.committed {
		return // a later offset was committed meanwhile
	}
	c.committed = next
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: c.Topic, Partition: 0, At: next, LeaderEpoch: -1})
	if err := c.adm.CommitAllOffsets(context.WithoutCancel(ctx), c.Group, offs); err != nil {
		// The signal is done; read again after a restart, it is
		// recognised by its id (a snapshot) or repeated (a control).
		c.Log.Warn("commit the signal offset", "group", c.Group, "offset", next, "err", err)
	}
}
