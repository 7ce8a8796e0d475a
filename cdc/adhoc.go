package cdc

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrUnknownTable is a snapshot request for a table the pipeline does not
// follow.
var ErrUnknownTable = errors.New("the pipeline follows no such table")

// ErrNotServing is a snapshot request the table cannot take: the pipeline
// is starting or stopping, or the table stopped on an error.
var ErrNotServing = errors.New("the table is not being followed")

// RequestSnapshot asks for the table's rows as 'r' events in its stream
// (Debezium's ad-hoc snapshot): the rows of the snapshot the checkpoint
// stands at, placed after that commit's events and before the next
// commit's, never inside a commit, while the other tables go on. It
// returns the snapshot read once the read's start is checkpointed, so
// that a crash resumes the read by index; a request that arrives while
// one waits joins it.
func (p *Pipeline) RequestSnapshot(ctx context.Context, table string) (SnapshotInfo, error) {
	reply, err := p.requests.add(table)
	if err != nil {
		return SnapshotInfo{}, err
	}
	select {
	case r := <-reply:
		return r.snap, r.err
	case <-ctx.Done():
		return SnapshotInfo{}, fmt.Errorf("snapshot of table %s: not started yet (the table is delivering a commit or retrying): %w; the request stays queued", table, ctx.Err())
	}
}

type snapshotReply struct {
	snap SnapshotInfo
	err  error
}

// snapshotRequests are the pending on-demand snapshots, by table.
type snapshotRequests struct {
	mu     sync.Mutex
	tables map[string]*tableRequests // nil until Run
}

type tableRequests struct {
	pending []chan snapshotReply
	stopped error // set once the table's follower returned
}

func (r *snapshotRequests) open(specs []TableSpec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tables = make(map[string]*tableRequests, len(specs))
	for _, s := range specs {
		r.tables[s.Name] = &tableRequests{}
	}
}

func (r *snapshotRequests) add(table string) (<-chan snapshotReply, error) {
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
	t.pending = append(t.pending, c)
	return c, nil
}

// take removes and returns the table's pending requests.
func (r *snapshotRequests) take(table string) []chan snapshotReply {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tables[table]
	if t == nil {
		return nil
	}
	p := t.pending
	t.pending = nil
	return p
}

// stopped answers the table's pending requests and refuses new ones.
func (r *snapshotRequests) stopped(table string, err error) {
	if err == nil {
		err = errors.New("the pipeline is stopping")
	}
	for _, c := range r.take(table) {
		c <- snapshotReply{err: fmt.Errorf("snapshot of table %s: %w: %v", table, ErrNotServing, err)}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tables[table]; t != nil {
		t.stopped = err
	}
}

// serveSnapshots starts the pending on-demand snapshots. It is called only
// between two commits, where the checkpoint is a whole commit: the read
// becomes a new epoch at that commit's snapshot, resumable by index as an
// initial read, and the stream goes on after it from the same snapshot.
func (f *follower) serveSnapshots(ctx context.Context) error {
	if !f.cp.Done {
		return nil // inside an initial read or a commit: the requests wait
	}
	reqs := f.p.requests.take(f.spec.Name)
	if len(reqs) == 0 {
		return nil
	}
	answer := func(r snapshotReply) {
		for _, c := range reqs {
			c <- r
		}
	}
	si, err := f.checkpointSnapshot(ctx)
	if err != nil {
		answer(snapshotReply{err: fmt.Errorf("snapshot of table %s: %w", f.spec.Name, err)})
		return nil // the request fails, the table goes on
	}
	cp := f.cp
	cp.Initial, cp.Done, cp.Next, cp.Resync, cp.Epoch = true, false, 0, false, cp.Epoch+1
	if err := f.p.Store.Save(context.WithoutCancel(ctx), f.p.Name, f.spec.Name, cp); err != nil {
		answer(snapshotReply{err: fmt.Errorf("snapshot of table %s: %w", f.spec.Name, err)})
		return err
	}
	f.cp = cp
	f.p.Metrics.Snapshots.WithLabelValues(f.spec.Name).Inc()
	f.log.Info("on-demand snapshot: emitting the table's rows", "snapshot", si.ID, "sequence_number", si.SequenceNumber, "requests", len(reqs))
	answer(snapshotReply{snap: si})
	return f.initialRead(ctx)
}

// checkpointSnapshot is the snapshot a Done checkpoint stands at.
func (f *follower) checkpointSnapshot(ctx context.Context) (SnapshotInfo, error) {
	if f.cp.SnapshotID == 0 {
		return SnapshotInfo{}, fmt.Errorf("%w: no commit of the table has been delivered yet, so there are no rows to read; ask again once one is", ErrNotServing)
	}
	snaps, _, err := f.spec.Source.Retained(ctx)
	if err != nil {
		return SnapshotInfo{}, err
	}
	for _, s := range snaps {
		if s.ID == f.cp.SnapshotID {
			if !s.HasLineage {
				return SnapshotInfo{}, fmt.Errorf("%w: snapshot %d predates the table's row lineage; ask again after the next commit", ErrNotServing, s.ID)
			}
			return s, nil
		}
	}
	return SnapshotInfo{}, fmt.Errorf("%w: the checkpoint's snapshot %d is no longer on the branch (expired or rolled back)", ErrNotServing, f.cp.SnapshotID)
}
