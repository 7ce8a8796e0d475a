package cdc

import (
	"context"
	"sort"
	"time"

	"github.com/icecdc/icecdc/health"
)

// Watched is a Source whose catalog learns in bulk which of its tables
// changed (see package catalogwatch), so that an idle table need not be
// loaded every poll.
type Watched interface {
	// Changes returns the channel that receives a value when the catalog
	// names a metadata location other than the one the source loaded,
	// and whether the catalog's checks cover the table at all (a table
	// the catalog cannot check in bulk is polled on its own schedule). A
	// value is a hint: the follower still Refreshes, and a lost one is
	// made up for by Pipeline.MaxPoll.
	Changes() (<-chan struct{}, bool)
}

// Idler is a Source that can drop what it keeps only to read its next
// commits faster (caches, file indexes, open IO; a watched one its loaded
// metadata too), rebuilding it when it reads again. Idle is called by the
// table's follower, between two polls, once the table has not changed for
// Pipeline.IdleAfter or has left the warm set (see warm.go).
type Idler interface {
	Idle()
}

// markIdle calls the source's Idle once the table has not changed for
// IdleAfter; a change makes it due again.
func (f *follower) markIdle(changed bool) {
	now := time.Now()
	if changed || f.lastChange.IsZero() {
		f.lastChange, f.idled = now, false
		return
	}
	if f.idled || now.Sub(f.lastChange) < f.p.IdleAfter {
		return
	}
	f.idleSource()
}

// idleSource tells the source to idle (Idler), and drops the follower's
// batch builders with the buffers they keep from its last batches, and
// its logger.
func (f *follower) idleSource() {
	if i, ok := f.spec.Source.(Idler); ok {
		i.Idle()
	}
	f.bb = nil
	f.log.Store(nil)
	f.idled = true
}

// nextPoll is how long a table waits before its next check after a
// successful one: the floor again after a change, else twice the last
// wait up to the max. A watched table waits for its catalog's wake-up,
// and reloads on its own only every WatchedReload (jittered, so that the
// reloads of many tables spread out); idle stops that wait early once
// the catalog no longer covers the table.
func (f *follower) nextPoll(changed bool) time.Duration {
	p := f.p
	if f.idled && !changed && f.watched() {
		// An idle covered table reloaded without a change (the safety
		// reload): what the reload loaded again, its metadata, is dropped
		// again. A table polled on its own keeps it (see Idler).
		f.idleSource()
	}
	f.markIdle(changed)
	switch {
	case changed || f.wait == 0:
		f.wait = p.Poll
	default:
		f.wait = min(2*f.wait, p.MaxPoll)
	}
	if f.watched() {
		return max(jitter(2*p.watchedReload()), p.MaxPoll)
	}
	return f.wait
}

// watchedReload is Pipeline.WatchedReload or its default: twenty max
// intervals, at least ten minutes. The catalog's check reads the very
// pointer a load reads (sql: the table's iceberg_tables row; hadoop: its
// version-hint.text), so the reload is a safety net only, and rare: at
// 10,000 tables, one every max interval would be hundreds of loads a
// second.
func (p *Pipeline) watchedReload() time.Duration {
	if p.WatchedReload > 0 {
		return p.WatchedReload
	}
	return max(20*p.MaxPoll, 10*time.Minute)
}

// watched reports whether the table's catalog checks it in bulk.
func (f *follower) watched() bool {
	w, ok := f.spec.Source.(Watched)
	if !ok {
		return false
	}
	_, covered := w.Changes()
	return covered
}

// idle waits d (at least the catalog's throttle delay), or until the
// table's catalog says it changed or an on-demand snapshot is asked for;
// waitStop when ctx ended. A watched table looks again every max interval
// whether its catalog still covers it (a check that failed or no longer
// finds it uncovers it), and ends the wait if not: then it polls on its
// own. Each look is also when an unchanged table is told to idle.
//
// A table whose source calls back on its catalog's wake-ups
// (ChangeNotifier) waits without a goroutine of its own (waitParked, see
// park): at 10,000 followed tables, their goroutines' stacks were about
// 45 MiB that only the tables at work need.
func (f *follower) idle(ctx context.Context, d time.Duration) waitResult {
	if !f.held.due.IsZero() {
		// A hold move the interval held back is made when it is due, not
		// at the table's next commit, which may never come: the wait's
		// own timer ends it then (no timer of its own, even parked).
		d = min(d, time.Until(f.held.due))
	}
	d = max(d, f.p.Health.ThrottleDelay())
	f.iw = idleWait{end: time.Now().Add(d)}
	if w, ok := f.spec.Source.(Watched); ok {
		f.iw.wake, _ = w.Changes()
	}
	return f.idling(ctx)
}

// waitResult is how a follower's wait ended.
type waitResult int

const (
	waitGo     waitResult = iota // poll now
	waitStop                     // ctx ended
	waitParked                   // parked: a wake-up resumes the follower (park)
)

// idleWait is the wait idle began.
type idleWait struct {
	end  time.Time
	tick time.Time // the next look; zero: none due
	wake <-chan struct{}
}

// idling is idle's wait, begun or resumed.
func (f *follower) idling(ctx context.Context) waitResult {
	woken := f.p.requests.woken(f.spec.Name)
	for {
		select {
		case <-ctx.Done():
			return waitStop
		case <-woken:
			return waitGo
		case <-f.warm.cool:
			f.cool()
			continue
		case <-f.iw.wake:
			return f.woken(ctx)
		default:
		}
		if r, ok := f.tick(); ok {
			return r
		}
		if f.parks() {
			f.park(ctx, time.Until(f.iw.tick))
			return waitParked
		}
		t := time.NewTimer(time.Until(f.iw.tick))
		select {
		case <-ctx.Done():
			t.Stop()
			return waitStop
		case <-t.C:
		case <-woken:
			t.Stop()
			return waitGo
		case <-f.warm.cool:
			t.Stop()
			f.cool()
		case <-f.iw.wake:
			t.Stop()
			return f.woken(ctx)
		}
	}
}

// tick makes the next look due, or takes one that is: ok when the wait
// ends with it.
func (f *follower) tick() (waitResult, bool) {
	now := time.Now()
	if !f.iw.tick.IsZero() && !now.Before(f.iw.tick) {
		f.iw.tick = time.Time{}
		if !now.Before(f.iw.end) || !f.watched() {
			return waitGo, true
		}
		f.markIdle(false)
	}
	if f.iw.tick.IsZero() {
		step := f.iw.end.Sub(now)
		if f.iw.wake != nil {
			step = min(step, max(f.p.MaxPoll, f.p.Poll))
		}
		f.iw.tick = now.Add(step)
	}
	return 0, false
}

// cool idles the table if it left the warm set (see warm.go).
func (f *follower) cool() {
	if f.p.warm.cooled(f) {
		f.idleSource() // tables that changed since came first
	}
}

// woken ends a wait on the catalog's wake-up.
func (f *follower) woken(ctx context.Context) waitResult {
	f.wait = 0 // a change: poll at the floor again
	if d := f.p.Health.ThrottleDelay(); d > 0 && !sleep(ctx, d) {
		return waitStop
	}
	return waitGo
}

// tableLag is the lag Health shows of a table whose branch head is head
// and whose snapshots not yet delivered are pending, oldest first.
func tableLag(head SnapshotInfo, pending []SnapshotInfo) health.TableLag {
	l := health.TableLag{Head: health.Head{ID: head.ID, SequenceNumber: head.SequenceNumber, TimestampMs: head.TimestampMs}, Pending: len(pending)}
	if len(pending) > 0 {
		l.OldestMs = pending[0].TimestampMs
		// pending is the follower's own list, oldest first, which it
		// only reslices: kept while the table is behind, not once it
		// caught up.
		l.After = func(seq int64, done bool) (int, int64) {
			i := sort.Search(len(pending), func(i int) bool {
				s := pending[i].SequenceNumber
				return s > seq || !done && s == seq
			})
			if i == len(pending) {
				return 0, 0
			}
			return len(pending) - i, pending[i].TimestampMs
		}
	}
	return l
}
