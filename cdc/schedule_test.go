package cdc_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/snapreq"
)

// watchedSource is a scripted source whose catalog watches it (wake is
// its wake-up channel) and that counts its Idle calls.
type watchedSource struct {
	*cdctest.Source
	wake    chan struct{}
	covered bool
	idles   atomic.Int64
}

func (s *watchedSource) Changes() (<-chan struct{}, bool) { return s.wake, s.covered }
func (s *watchedSource) Idle()                            { s.idles.Add(1) }

func runScheduled(t *testing.T, f *fast, src cdc.Source, poll, maxPoll, idleAfter time.Duration) (stop func()) {
	t.Helper()
	_, stop = runScheduledPipeline(t, f, src, poll, maxPoll, idleAfter)
	return stop
}

// runScheduledPipeline is runScheduled, also returning the pipeline.
func runScheduledPipeline(t *testing.T, f *fast, src cdc.Source, poll, maxPoll, idleAfter time.Duration) (*cdc.Pipeline, func()) {
	t.Helper()
	p := scheduledPipeline(f, src, poll, maxPoll, idleAfter)
	return p, startPipeline(t, p)
}

// scheduledPipeline is a pipeline of src alone, on the schedule given.
func scheduledPipeline(f *fast, src cdc.Source, poll, maxPoll, idleAfter time.Duration) *cdc.Pipeline {
	return &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Encoder: newEncoder("p"), Sink: f.sink, Store: f.store, Poll: poll, MaxPoll: maxPoll, IdleAfter: idleAfter,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond}
}

// startPipeline runs p until the returned stop is called.
func startPipeline(t *testing.T, p *cdc.Pipeline) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}
}

// waitFor waits until cond holds; the deadline is a hang guard only.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for guard := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(guard) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

// TestWatchedTableWaitsForWakeUp: a table its catalog watches is not
// polled while idle (its max interval is an hour), and a wake-up gets a
// new commit delivered.
func TestWatchedTableWaitsForWakeUp(t *testing.T) {
	f := newFast(t)
	src := &watchedSource{Source: f.src, wake: make(chan struct{}, 1), covered: true}
	src.Append(cdctest.Inserts(1, 1)...)
	stop := runScheduled(t, f, src, time.Millisecond, time.Hour, time.Hour)
	defer stop()
	waitFor(t, "first commit delivered", func() bool { return len(f.sink.IDs()) == 1 })
	refreshes := src.Calls("Refresh")
	time.Sleep(50 * time.Millisecond) // fifty poll intervals, none of which may poll
	if n := src.Calls("Refresh") - refreshes; n != 0 {
		t.Fatalf("a watched idle table was refreshed %d times without a wake-up", n)
	}
	src.Append(cdctest.Inserts(2, 1)...)
	src.wake <- struct{}{}
	waitFor(t, "woken commit delivered", func() bool { return len(f.sink.IDs()) == 2 })
}

// TestSnapshotRequestWakesIdleTable: an on-demand snapshot of a watched
// table that idles (its max interval an hour) starts at once, not at the
// table's next poll an hour away.
func TestSnapshotRequestWakesIdleTable(t *testing.T) {
	f := newFast(t)
	src := &watchedSource{Source: f.src, wake: make(chan struct{}, 1), covered: true}
	src.Append(cdctest.Inserts(1, 3)...)
	p, stop := runScheduledPipeline(t, f, src, time.Millisecond, time.Hour, time.Hour)
	defer stop()
	waitFor(t, "first commit delivered", func() bool { return len(f.sink.IDs()) == 3 })
	time.Sleep(20 * time.Millisecond) // the follower is idle now
	// The deadline is a hang guard only.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := p.Snapshot(ctx, "shop.orders", snapreq.SnapshotRequest{ID: "s1"}); err != nil {
		t.Fatalf("snapshot of an idle table: %v", err)
	}
	waitFor(t, "the snapshot's rows delivered", func() bool { return len(f.sink.IDs()) == 6 })
}

// TestIdleTableBacksOff: a table nothing watches, unchanged, is polled
// less and less often, up to the max interval: over half a second at a
// 1ms floor and a 64ms max, the waits (1, 2, 4 … 64ms, then 64ms each)
// leave room for about 15 polls, where polling at the floor would make
// hundreds. A commit is still delivered, and the source is told to idle
// once it has not changed for IdleAfter.
func TestIdleTableBacksOff(t *testing.T) {
	f := newFast(t)
	src := &watchedSource{Source: f.src}
	src.Append(cdctest.Inserts(1, 1)...)
	stop := runScheduled(t, f, src, time.Millisecond, 64*time.Millisecond, 100*time.Millisecond)
	defer stop()
	waitFor(t, "first commit delivered", func() bool { return len(f.sink.IDs()) == 1 })
	refreshes := src.Calls("Refresh")
	time.Sleep(500 * time.Millisecond) // the window counted; nothing is asserted about time
	if n := src.Calls("Refresh") - refreshes; n > 25 {
		t.Fatalf("an idle table was refreshed %d times in half a second: its polls did not back off", n)
	}
	waitFor(t, "idle", func() bool { return src.idles.Load() == 1 })
	src.Append(cdctest.Inserts(2, 1)...)
	waitFor(t, "commit after idling delivered", func() bool { return len(f.sink.IDs()) == 2 })
	waitFor(t, "idle again", func() bool { return src.idles.Load() == 2 })
}

// TestCoveredTableIsNotReloaded: a table its catalog covers is not
// refreshed at its max interval (here 1ms) while the catalog reports no
// change: over fifty max intervals it is not refreshed once, and is still
// told to idle. Once the catalog no longer covers it (a failed check), it
// polls on its own again; the safety reload is an hour away.
func TestCoveredTableIsNotReloaded(t *testing.T) {
	f := newFast(t)
	src := &coverSource{watchedSource: watchedSource{Source: f.src, wake: make(chan struct{}, 1)}}
	src.cover.Store(true)
	src.Append(cdctest.Inserts(1, 1)...)
	p := scheduledPipeline(f, src, time.Millisecond, time.Millisecond, 5*time.Millisecond)
	p.WatchedReload = time.Hour
	defer startPipeline(t, p)()
	waitFor(t, "first commit delivered", func() bool { return len(f.sink.IDs()) == 1 })
	refreshes := src.Calls("Refresh")
	time.Sleep(50 * time.Millisecond) // fifty max intervals, none of which may reload
	if n := src.Calls("Refresh") - refreshes; n != 0 {
		t.Fatalf("a covered unchanged table was refreshed %d times at its max interval", n)
	}
	waitFor(t, "told to idle", func() bool { return src.idles.Load() == 1 })
	src.cover.Store(false)
	waitFor(t, "uncovered table polls on its own", func() bool { return src.Calls("Refresh") > refreshes+2 })
}

// coverSource is a watchedSource whose coverage a test switches.
type coverSource struct {
	watchedSource
	cover atomic.Bool
}

func (s *coverSource) Changes() (<-chan struct{}, bool) { return s.wake, s.cover.Load() }

// TestCoveredTableSafetyReload: a covered table is still reloaded on its
// own now and then (WatchedReload, 5ms here), in case a wake-up was lost.
func TestCoveredTableSafetyReload(t *testing.T) {
	f := newFast(t)
	src := &watchedSource{Source: f.src, wake: make(chan struct{}, 1), covered: true}
	src.Append(cdctest.Inserts(1, 1)...)
	p := scheduledPipeline(f, src, time.Millisecond, time.Millisecond, 0)
	p.WatchedReload = 5 * time.Millisecond
	defer startPipeline(t, p)()
	waitFor(t, "first commit delivered", func() bool { return len(f.sink.IDs()) == 1 })
	refreshes := src.Calls("Refresh")
	src.Append(cdctest.Inserts(2, 1)...) // no wake-up: only the safety reload finds it
	waitFor(t, "commit found by the safety reload", func() bool { return len(f.sink.IDs()) == 2 })
	if src.Calls("Refresh") == refreshes {
		t.Fatal("delivered without a refresh")
	}
}

// TestWarmBoundIdlesTablesThatChangedLongAgo: of tables that each
// delivered a commit, only the Warm that changed last keep what their
// reads left; the others are told to idle at once, not after IdleAfter
// (an hour here). A commit to an idled table is still delivered, and it
// is warm again: another leaves.
func TestWarmBoundIdlesTablesThatChangedLongAgo(t *testing.T) {
	f := newFast(t)
	const tables, warm = 6, 2
	var srcs []*watchedSource
	p := &cdc.Pipeline{Name: "p", Encoder: newEncoder("p"), Sink: f.sink, Store: f.store,
		Poll: time.Millisecond, MaxPoll: time.Hour, IdleAfter: time.Hour, Warm: warm, MaxActive: 1,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond}
	for i := range tables {
		name := fmt.Sprintf("t%d", i)
		src := &watchedSource{Source: cdctest.New(cdctest.Info("shop", name)), wake: make(chan struct{}, 1), covered: true}
		src.Append(cdctest.Inserts(10*i+1, 1)...)
		srcs = append(srcs, src)
		p.Tables = append(p.Tables, cdc.TableSpec{Name: "shop." + name, Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}})
	}
	stop := startPipeline(t, p)
	defer stop()
	idled := func() (n int) {
		for _, s := range srcs {
			n += int(s.idles.Load())
		}
		return n
	}
	waitFor(t, "every table's commit delivered", func() bool { return len(f.sink.IDs()) == tables })
	waitFor(t, "the tables beyond the bound idled", func() bool { return idled() >= tables-warm })
	time.Sleep(50 * time.Millisecond)
	if n := idled(); n != tables-warm {
		t.Fatalf("%d tables idled, want %d: only those beyond the bound of %d, none for IdleAfter", n, tables-warm, warm)
	}
	var cold *watchedSource
	for _, s := range srcs {
		if s.idles.Load() == 1 {
			cold = s
			break
		}
	}
	cold.Append(cdctest.Inserts(100, 1)...)
	cold.wake <- struct{}{}
	waitFor(t, "the idled table's new commit delivered", func() bool { return len(f.sink.IDs()) == tables+1 })
	waitFor(t, "another table idled for it", func() bool { return idled() == tables-warm+1 })
	time.Sleep(50 * time.Millisecond)
	if n := cold.idles.Load(); n != 1 {
		t.Fatalf("the table that just changed idled %d times, want 1 (it is warm again)", n)
	}
}

// notifySource is a watchedSource that calls back on its wake-ups
// (cdc.ChangeNotifier), as a table of a shared catalog does.
type notifySource struct {
	*watchedSource
	mu sync.Mutex
	fn func()
}

func (s *notifySource) NotifyChanges(fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fn = fn
}

// wakeUp is the catalog's wake-up: the channel's value and the call.
func (s *notifySource) wakeUp() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
	s.mu.Lock()
	fn := s.fn
	s.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// TestParkedTablesHoldNoGoroutine: covered tables whose source calls
// back on wake-ups wait without a goroutine each: 300 idle tables hold
// far fewer than 300 goroutines. A parked table still delivers a woken
// commit, serves an on-demand snapshot, and ends when the pipeline does.
func TestParkedTablesHoldNoGoroutine(t *testing.T) {
	f := newFast(t)
	const tables = 300
	var srcs []*notifySource
	p := &cdc.Pipeline{Name: "p", Encoder: newEncoder("p"), Sink: f.sink, Store: f.store,
		Poll: time.Millisecond, MaxPoll: time.Hour, IdleAfter: time.Hour, Warm: 4,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond}
	for i := range tables {
		name := fmt.Sprintf("t%d", i)
		src := &notifySource{watchedSource: &watchedSource{Source: cdctest.New(cdctest.Info("shop", name)), wake: make(chan struct{}, 1), covered: true}}
		src.Append(cdctest.Inserts(10*i+1, 1)...)
		srcs = append(srcs, src)
		p.Tables = append(p.Tables, cdc.TableSpec{Name: "shop." + name, Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}})
	}
	base := runtime.NumGoroutine()
	stop := startPipeline(t, p)
	waitFor(t, "every table's commit delivered", func() bool { return len(f.sink.IDs()) == tables })
	waitFor(t, "the tables parked", func() bool { return runtime.NumGoroutine()-base < tables/10 })
	idled := func() (n int) {
		for _, s := range srcs {
			n += int(s.idles.Load())
		}
		return n
	}
	waitFor(t, "all but the 4 warm tables idled", func() bool { return idled() == tables-4 })

	src := srcs[7]
	src.Append(cdctest.Inserts(9001, 1)...)
	src.wakeUp()
	waitFor(t, "the woken commit delivered", func() bool { return len(f.sink.IDs()) == tables+1 })

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard only
	defer cancel()
	if _, err := p.Snapshot(ctx, "shop.t3", snapreq.SnapshotRequest{ID: "s1"}); err != nil {
		t.Fatalf("snapshot of a parked table: %v", err)
	}
	waitFor(t, "the snapshot's row delivered", func() bool { return len(f.sink.IDs()) == tables+2 })
	stop() // returns only once every table's loop ended
	// Goroutines a loop started (a timer's, a watcher's) may still be on
	// their way out when stop returns; a leak never leaves.
	waitFor(t, "at most 5 goroutines left after the pipeline ended", func() bool { return runtime.NumGoroutine()-base <= 5 })
}
