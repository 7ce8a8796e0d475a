package cdc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/metrics"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// runOpts configure runWith.
type runOpts struct {
	start  string
	hold   bool
	policy cdc.HistoryLossPolicy
	chunk  int
	// blocked, while true, makes every sink write fail (a transient
	// error): the daemon sees new commits but cannot deliver them.
	blocked *atomic.Bool
	// stuck, while true, makes every sink write wait (as a webhook or
	// Kafka sink retrying inside Write does) until it is false or the
	// run ends; writing counts the writes that waited.
	stuck   *atomic.Bool
	writing *atomic.Int32
	// until stops the run when it returns true (checked every 20 ms);
	// nil: when the checkpoint is a whole commit at the head.
	until func(store *state.Store) bool
	// during runs beside the pipeline once it is ready.
	during func(ctx context.Context, p *cdc.Pipeline)
	// stopAfter cancels the run after that many confirmed batches.
	stopAfter int
	// catalogURI is the daemon's catalog (default: the harness's).
	catalogURI string
	// holdInterval is the pipeline's HoldInterval (default 10ms).
	holdInterval time.Duration
	// metrics and progress, when set, are the pipeline's.
	metrics  *metrics.Metrics
	progress *cdc.Progress
}

// runWith runs a one-table pipeline over the harness's table and returns
// Run's error (a table that stopped on its own), or nil once until holds.
func (h *harness) runWith(o runOpts) error {
	h.t.Helper()
	st, err := cdc.ParseStart(o.start)
	if err != nil {
		h.t.Fatal(err)
	}
	uri := o.catalogURI
	if uri == "" {
		uri = h.env.CatalogURI
	}
	if o.holdInterval == 0 {
		o.holdInterval = 10 * time.Millisecond
	}
	src, err := source.New(source.Options{CatalogURI: uri, Warehouse: h.env.Warehouse, Table: "shop.orders", MaxHeldRows: h.held})
	if err != nil {
		h.t.Fatal(err)
	}
	store, err := state.Open(h.state, state.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer store.Close()
	fs, err := file.Open(h.out)
	if err != nil {
		h.t.Fatal(err)
	}
	defer fs.Close(h.ctx)
	ctx, cancel := context.WithTimeout(h.ctx, 60*time.Second)
	defer cancel()
	sink := &gateSink{countingSink: countingSink{Sink: fs, stopAfter: o.stopAfter, cancel: cancel}, blocked: o.blocked, stuck: o.stuck, writing: o.writing}
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: st, Hold: o.hold}}, Encoder: newEncoder("p"),
		Sink: sink, Store: store, Poll: 20 * time.Millisecond, ChunkSize: o.chunk, RetryInitial: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		OnHistoryLoss: o.policy, HoldInterval: o.holdInterval, Metrics: o.metrics, Progress: o.progress, Ready: make(chan struct{})}
	until := o.until
	if until == nil {
		head := h.tbl.CurrentSnapshot().SequenceNumber
		until = func(store *state.Store) bool {
			cp, ok, _ := store.Load(ctx, "p", "shop.orders")
			return ok && cp.Done && !cp.Initial && cp.Seq >= head
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-p.Ready:
		case <-ctx.Done():
			return
		}
		if o.during != nil {
			o.during(ctx, p)
		}
		for ctx.Err() == nil && !until(store) {
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
	}()
	err = p.Run(ctx)
	cancel()
	<-done
	if err == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		h.t.Fatal("the run did not reach its end within 60s")
	}
	return err
}

type gateSink struct {
	countingSink
	blocked *atomic.Bool
	stuck   *atomic.Bool
	writing *atomic.Int32
}

func (s *gateSink) Write(ctx context.Context, b *cdc.Batch) error {
	if s.blocked != nil && s.blocked.Load() {
		return errors.New("sink unavailable (test)")
	}
	if s.stuck != nil && s.stuck.Load() {
		s.writing.Add(1)
		for s.stuck.Load() {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	return s.countingSink.Write(ctx, b)
}

// consumed is one event as a consumer reads it from the file.
type consumed struct {
	replay.Event
	Source struct {
		Snapshot string `json:"snapshot"`
		Resync   bool   `json:"resync"`
		Seq      int64  `json:"sequence_number"`
		ID       int64  `json:"snapshot_id"`
		RowID    int64  `json:"row_id"`
	} `json:"source"`
}

func (h *harness) consumed() []consumed {
	h.t.Helper()
	f, err := os.Open(h.out)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	var out []consumed
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var c consumed
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			h.t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber() // as replay.Live normalises values
		if err := d.Decode(&c.Event); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// replayConsumer applies the stream as a consumer keyed by _row_id does:
// a commit's events by replay.State.Apply (which checks every before
// image), 'r' rows as upserts, and a resync read as a new start (its
// first row clears the state). After each commit and each whole read it
// calls check with the snapshot the state must equal.
func replayConsumer(t *testing.T, evs []consumed, check func(st replay.State, snapshotID, seq int64, what string)) {
	t.Helper()
	st := replay.State{}
	for i := 0; i < len(evs); {
		j := i + 1
		for j < len(evs) && evs[j].Source.Seq == evs[i].Source.Seq && (evs[j].Op == "r") == (evs[i].Op == "r") && !(evs[i].Op == "r" && evs[j-1].Source.Snapshot == "last") {
			j++
		}
		group := evs[i:j]
		if group[0].Op == "r" {
			if group[0].Source.Resync {
				st = replay.State{}
			}
			for _, e := range group {
				if e.Source.Resync != group[0].Source.Resync {
					t.Fatalf("event %d: a read mixes resync and plain rows", i)
				}
				st[e.Source.RowID] = e.After
			}
			what := "on-demand snapshot"
			if group[0].Source.Resync {
				what = "resync read"
			}
			check(st, group[0].Source.ID, group[0].Source.Seq, what)
		} else {
			plain := make([]replay.Event, len(group))
			for k, e := range group {
				plain[k] = e.Event
			}
			if err := st.Apply(plain); err != nil {
				t.Fatalf("commit seq %d: %v", group[0].Source.Seq, err)
			}
			check(st, group[0].Source.ID, group[0].Source.Seq, "commit")
		}
		i = j
	}
}

// randomCommits makes n commits of random kinds (append, merge-on-read
// delete, update keeping row ids) on the harness's table; live holds the
// order ids present.
func (h *harness) randomCommits(rng *rand.Rand, live *[]int64, n int) {
	h.t.Helper()
	for range n {
		if len(*live) < 3 || rng.IntN(3) == 0 {
			from := int64(1)
			if len(*live) > 0 {
				from = slices.Max(*live) + 1
			}
			to := from + rng.Int64N(3)
			h.append(from, to)
			for id := from; id <= to; id++ {
				*live = append(*live, id)
			}
			continue
		}
		k := rng.IntN(len(*live))
		id := (*live)[k]
		var (
			tbl *table.Table
			err error
		)
		if rng.IntN(2) == 0 {
			tbl, err = scenario.Delete(h.ctx, h.tbl, iceberg.EqualTo(iceberg.Reference("order_id"), id))
			*live = slices.Delete(*live, k, k+1)
		} else {
			tbl, err = scenario.Update(h.ctx, h.tbl, iceberg.EqualTo(iceberg.Reference("order_id"), id), func(r map[string]any) map[string]any {
				r["status"] = fmt.Sprint("s", rng.IntN(100))
				return r
			})
		}
		if err != nil {
			h.t.Fatal(err)
		}
		h.tbl = tbl
	}
}

// expireAll expires as `CALL system.expire_snapshots(older_than =>
// now(), retain_last => 1)` does, deleting the files no retained
// snapshot needs.
func (h *harness) expireAll() {
	h.t.Helper()
	tbl, err := h.env.LoadTable(h.ctx, table.Identifier{"shop", "orders"})
	if err != nil {
		h.t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(1)); err != nil {
		h.t.Fatal(err)
	}
	if h.tbl, err = tx.Commit(h.ctx); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) checkLive(t *testing.T) func(st replay.State, snapshotID, seq int64, what string) {
	return func(st replay.State, snapshotID, seq int64, what string) {
		t.Helper()
		if h.tbl.SnapshotByID(snapshotID) == nil {
			return // expired: nothing to compare with
		}
		want, err := replay.Live(h.ctx, h.tbl, snapshotID)
		if err != nil {
			t.Fatal(err)
		}
		if d := replay.Diff(st, want); d != "" {
			t.Fatalf("after the %s of sequence number %d the consumer's state differs from the table's: %s", what, seq, d)
		}
	}
}

// TestPipelineResyncOnHistoryLoss: snapshots after the checkpoint are
// expired while the daemon is away. With the default policy the table
// stops with the history-loss error and delivers nothing; with
// on_history_loss: resync it re-emits the head as 'r' events marked
// source.resync, and a consumer replaying the stream holds the table's
// rows at the resync and at every later snapshot.
func TestPipelineResyncOnHistoryLoss(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			h := newHarness(t)
			var next []int64
			h.randomCommits(rng, &next, 4)
			if err := h.runWith(runOpts{start: "earliest", chunk: 3}); err != nil {
				t.Fatal(err)
			}
			h.randomCommits(rng, &next, 5)
			h.expireAll()
			before := len(h.consumed())
			err := h.runWith(runOpts{start: "earliest", chunk: 3})
			if !errors.Is(err, cdc.ErrHistory) || !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), "icecdc reset") {
				t.Fatalf("default policy on expired history: %v", err)
			}
			if n := len(h.consumed()); n != before {
				t.Fatalf("the stopped table delivered %d events", n-before)
			}
			// With resync, stopped once inside the read: it resumes by index.
			if err := h.runWith(runOpts{start: "earliest", chunk: 2, policy: cdc.ResyncOnHistoryLoss, stopAfter: 1}); err != nil {
				t.Fatal(err)
			}
			if err := h.runWith(runOpts{start: "earliest", chunk: 2, policy: cdc.ResyncOnHistoryLoss}); err != nil {
				t.Fatal(err)
			}
			h.randomCommits(rng, &next, 4)
			if err := h.runWith(runOpts{start: "earliest", chunk: 2, policy: cdc.ResyncOnHistoryLoss}); err != nil {
				t.Fatal(err)
			}
			evs := h.consumed()
			resync := 0
			for _, e := range evs[before:] {
				if e.Source.Resync {
					resync++
					if e.Op != "r" {
						t.Fatalf("a %s event marked resync", e.Op)
					}
				}
			}
			if resync == 0 {
				t.Fatal("no resync read delivered")
			}
			replayConsumer(t, evs, h.checkLive(t))
			last := evs[len(evs)-1]
			if last.Source.Seq != h.tbl.CurrentSnapshot().SequenceNumber || last.Op == "r" {
				t.Fatalf("the stream did not go on after the resync: last event %+v", last.Source)
			}
		})
	}
}

// TestPipelineHoldKeepsUndelivered: the daemon sees commits it cannot
// deliver (its sink is down); the snapshots are expired as Spark's
// expire_snapshots(older_than => now(), retain_last => 1) does, deleting
// unreferenced files. With hold: true every change is still delivered
// exactly afterwards (replay at every snapshot); without it the table
// stops with the history-loss error. reset removes the hold (cmd tests).
func TestPipelineHoldKeepsUndelivered(t *testing.T) {
	for _, hold := range []bool{true, false} {
		t.Run(fmt.Sprint("hold=", hold), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 7))
			h := newHarness(t)
			var next []int64
			h.randomCommits(rng, &next, 3)
			if err := h.runWith(runOpts{start: "earliest", hold: hold}); err != nil {
				t.Fatal(err)
			}
			delivered := h.tbl.CurrentSnapshot().SequenceNumber
			h.randomCommits(rng, &next, 5)
			head := h.tbl.CurrentSnapshot().SnapshotID
			var blocked atomic.Bool
			blocked.Store(true)
			// The daemon polls, fails to deliver, and (with the hold)
			// moves the hold to the head it saw.
			err := h.runWith(runOpts{start: "earliest", hold: hold, blocked: &blocked, until: func(*state.Store) bool {
				if !hold {
					time.Sleep(300 * time.Millisecond)
					return true
				}
				tbl, err := h.env.LoadTable(h.ctx, table.Identifier{"shop", "orders"})
				if err != nil {
					return false
				}
				for name, ref := range tbl.Metadata().Refs() {
					if name == cdc.HoldRef("p") && ref.SnapshotID == head {
						return true
					}
				}
				return false
			}})
			if err != nil {
				t.Fatal(err)
			}
			if cp, _ := h.checkpoint(); cp.Seq != delivered {
				t.Fatalf("checkpoint moved while the sink was down: %v", cp)
			}
			h.expireAll()
			kept := len(h.tbl.Metadata().Snapshots())
			err = h.runWith(runOpts{start: "earliest", hold: hold})
			if !hold {
				if !errors.Is(err, cdc.ErrHistory) {
					t.Fatalf("without hold after expiry: %v, want the history-loss error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("with hold after expiry (%d snapshots kept): %v", kept, err)
			}
			if kept < 6 {
				t.Fatalf("expiry kept %d snapshots, want the 5 undelivered and the checkpoint's", kept)
			}
			replayConsumer(t, h.consumed(), h.checkLive(t))
			evs := h.consumed()
			if evs[len(evs)-1].Source.Seq != h.tbl.CurrentSnapshot().SequenceNumber {
				t.Fatal("not every commit was delivered")
			}
			// Release (what reset runs) removes the branch.
			src, err := source.Open(h.ctx, source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: "shop.orders"})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if _, ok := src.HasRef(cdc.HoldRef("p")); !ok {
				t.Fatal("no hold ref on the table")
			}
			if err := src.Release(h.ctx, cdc.HoldRef("p")); err != nil {
				t.Fatal(err)
			}
			if _, err := src.Refresh(h.ctx); err != nil {
				t.Fatal(err)
			}
			if id, ok := src.HasRef(cdc.HoldRef("p")); ok {
				t.Fatalf("the hold is still there after Release, at snapshot %d", id)
			}
		})
	}
}

// TestPipelineHoldMovesDuringStuckWrite: the sink retries inside its
// Write, as a webhook or Kafka sink whose receiver is down does, so the
// table never gets back to loading its metadata; the commits made
// meanwhile must still be held (the hold follows the catalog's head during
// the write), survive expiry as Spark's expire_snapshots(older_than =>
// now(), retain_last => 1) does it, and be delivered exactly afterwards.
func TestPipelineHoldMovesDuringStuckWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 7))
	h := newHarness(t)
	// The test commits while the hold commits: its catalog waits for the
	// SQLite lock, as every process on the file must.
	props := h.env.CatalogProperties()
	cat, err := catalog.Load(h.ctx, scenario.CatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	h.env.Catalog = cat
	if h.tbl, err = h.env.LoadTable(h.ctx, table.Identifier{"shop", "orders"}); err != nil {
		t.Fatal(err)
	}
	var live []int64
	h.randomCommits(rng, &live, 3)
	if err := h.runWith(runOpts{start: "earliest", hold: true}); err != nil {
		t.Fatal(err)
	}
	var stuck atomic.Bool
	var writing atomic.Int32
	stuck.Store(true)
	var head int64
	err = h.runWith(runOpts{start: "earliest", hold: true, stuck: &stuck, writing: &writing,
		during: func(ctx context.Context, p *cdc.Pipeline) {
			h.commitRetrying(rng, &live, 1) // the write of this one gets stuck
			for writing.Load() == 0 && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			h.commitRetrying(rng, &live, 4) // made while the write waits
			head = h.tbl.CurrentSnapshot().SnapshotID
		},
		until: func(*state.Store) bool {
			tbl, err := h.env.LoadTable(h.ctx, table.Identifier{"shop", "orders"})
			if err != nil {
				return false
			}
			for name, ref := range tbl.Metadata().Refs() {
				if name == cdc.HoldRef("p") && ref.SnapshotID == head {
					return true
				}
			}
			return false
		}})
	if err != nil {
		t.Fatal(err)
	}
	if n := writing.Load(); n != 1 {
		t.Fatalf("%d writes got stuck, want the one the hold had to move during", n)
	}
	h.expireAll()
	if kept := len(h.tbl.Metadata().Snapshots()); kept != 6 {
		t.Fatalf("expiry kept %d snapshots, want the checkpoint's and the 5 after it", kept)
	}
	if err := h.runWith(runOpts{start: "earliest", hold: true}); err != nil {
		t.Fatal(err)
	}
	evs := h.consumed()
	replayConsumer(t, evs, h.checkLive(t))
	if evs[len(evs)-1].Source.Seq != h.tbl.CurrentSnapshot().SequenceNumber {
		t.Fatal("not every commit was delivered")
	}
}

// commitRetrying makes n commits like randomCommits, each tried again on
// the table's current metadata when another commit (the hold's) came
// first, as Spark and Iceberg Java do.
func (h *harness) commitRetrying(rng *rand.Rand, live *[]int64, n int) {
	h.t.Helper()
	for range n {
		kind := rng.IntN(3)
		if len(*live) < 3 {
			kind = 0
		}
		k := rng.IntN(len(*live) + 1)
		for attempt := 0; ; attempt++ {
			tbl, err := h.env.LoadTable(h.ctx, table.Identifier{"shop", "orders"})
			if err != nil {
				h.t.Fatal(err)
			}
			var next *table.Table
			switch kind {
			case 0:
				id := slices.Max(append([]int64{0}, *live...)) + 1
				next, err = scenario.Append(h.ctx, tbl, []map[string]any{scenario.Order(id, "c", "new", float64(id))})
				if err == nil {
					*live = append(*live, id)
				}
			case 1:
				k := k % len(*live)
				next, err = scenario.Delete(h.ctx, tbl, iceberg.EqualTo(iceberg.Reference("order_id"), (*live)[k]))
				if err == nil {
					*live = slices.Delete(*live, k, k+1)
				}
			default:
				next, err = scenario.Update(h.ctx, tbl, iceberg.EqualTo(iceberg.Reference("order_id"), (*live)[k%len(*live)]), func(r map[string]any) map[string]any {
					r["status"] = fmt.Sprint("s", attempt, k)
					return r
				})
			}
			if errors.Is(err, table.ErrCommitFailed) && attempt < 50 {
				continue
			}
			if err != nil {
				h.t.Fatal(err)
			}
			h.tbl = next
			break
		}
	}
}

// TestPipelineOnDemandSnapshot: a requested snapshot emits the rows of
// the checkpoint's snapshot as 'r' events between two commits, never
// inside one; it resumes by index after a stop inside the read; the
// stream goes on after it; a request for a table the pipeline does not
// follow fails naming it.
func TestPipelineOnDemandSnapshot(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 7))
	h := newHarness(t)
	var live []int64
	h.randomCommits(rng, &live, 5)
	if err := h.runWith(runOpts{start: "earliest", chunk: 2}); err != nil {
		t.Fatal(err)
	}
	before := len(h.consumed())
	headID := h.tbl.CurrentSnapshot().SnapshotID
	var got cdc.SnapshotInfo
	// Stopped after the first batch of the read: the request was taken
	// and checkpointed, so the next run resumes it.
	err := h.runWith(runOpts{start: "earliest", chunk: 2, stopAfter: 1, until: func(*state.Store) bool { return false },
		during: func(ctx context.Context, p *cdc.Pipeline) {
			if _, err := p.RequestSnapshot(ctx, "shop.nope"); !errors.Is(err, snapreq.ErrUnknownTable) || !strings.Contains(err.Error(), "shop.nope") {
				t.Errorf("unknown table: %v", err)
			}
			var err error
			if got, err = p.RequestSnapshot(ctx, "shop.orders"); err != nil {
				t.Errorf("request: %v", err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != headID {
		t.Fatalf("the read is of snapshot %d, want the checkpoint's %d", got.ID, headID)
	}
	h.randomCommits(rng, &live, 3)
	if err := h.runWith(runOpts{start: "earliest", chunk: 2}); err != nil {
		t.Fatal(err)
	}
	evs := h.consumed()
	var reads []consumed
	for i, e := range evs[before:] {
		if e.Op != "r" {
			continue
		}
		reads = append(reads, e)
		if e.Source.Seq != got.SequenceNumber || e.Source.Resync {
			t.Fatalf("read row %d: %+v", i, e.Source)
		}
	}
	want, err := replay.Live(h.ctx, h.tbl, headID)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= 2 {
		t.Fatalf("%d live rows: too few for the read to span batches", len(want))
	}
	if len(reads) != len(want) {
		t.Fatalf("%d rows read (resumed after a stop), want exactly the %d live rows", len(reads), len(want))
	}
	// The read sits whole between the commit it reads and the next one.
	first := before
	for evs[first].Op != "r" {
		first++
	}
	for k := first; k < first+len(reads); k++ {
		if evs[k].Op != "r" {
			t.Fatalf("event %d inside the read is a %s of sequence number %d", k, evs[k].Op, evs[k].Source.Seq)
		}
	}
	if first != before || evs[first+len(reads)].Source.Seq != got.SequenceNumber+1 {
		t.Fatalf("the read is not placed between commit %d and the next", got.SequenceNumber)
	}
	replayConsumer(t, evs, h.checkLive(t))
}

// refuse makes the catalog refuse the daemon's commits as a real
// deployment does, and returns the catalog URI the daemon must use and
// the function that gives the right back.
type refusal struct {
	name string
	// midRun: the refusal can start while the daemon runs (a move is
	// refused), not only before it starts (the placement is).
	midRun bool
	apply  func(t *testing.T, h *harness) (uri string, undo func())
}

// holdRefusals are the catalogs that refuse a ref commit: a read-only
// SQLite file (as root, whom file modes do not stop, the daemon opens it
// with mode=ro, as a read-only identity would), and a warehouse whose
// table metadata directory cannot be written (as root: an immutable
// directory, where the file system and capabilities allow one).
func holdRefusals() []refusal {
	return []refusal{{
		name: "sqlite-read-only",
		apply: func(t *testing.T, h *harness) (string, func()) {
			if os.Geteuid() == 0 {
				return h.env.CatalogURI + "?mode=ro", func() {}
			}
			path := strings.TrimPrefix(h.env.CatalogURI, "file:")
			if err := os.Chmod(path, 0o444); err != nil {
				t.Fatal(err)
			}
			return h.env.CatalogURI, func() {
				if err := os.Chmod(path, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		},
	}, {
		name:   "warehouse-read-only",
		midRun: true,
		apply: func(t *testing.T, h *harness) (string, func()) {
			dir := strings.TrimPrefix(h.tbl.Location(), "file://") + "/metadata"
			if os.Geteuid() != 0 {
				if err := os.Chmod(dir, 0o555); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Chmod(dir, 0o755) })
				return h.env.CatalogURI, func() {
					if err := os.Chmod(dir, 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
				t.Skipf("running as root, and the metadata directory cannot be made immutable (chattr +i: %v %s)", err, bytes.TrimSpace(out))
			}
			t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
			return h.env.CatalogURI, func() {
				if out, err := exec.Command("chattr", "-i", dir).CombinedOutput(); err != nil {
					t.Fatalf("chattr -i %s: %v %s", dir, err, out)
				}
			}
		},
	}}
}

// TestPipelineHoldRefused: the catalog refuses the hold's ref commit (a
// read-only SQLite file or warehouse). The table stops with one line
// naming the table and the ref, saying the hold could not be placed or
// moved and what to do; what it delivered before the stop is exact, the
// hold it had stays, and once the catalog accepts commits again a restart
// delivers the rest exactly.
func TestPipelineHoldRefused(t *testing.T) {
	for _, r := range holdRefusals() {
		t.Run(r.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(17, 7))
			h := newHarness(t)
			var live []int64
			h.randomCommits(rng, &live, 3)
			if err := h.runWith(runOpts{start: "earliest", hold: true}); err != nil {
				t.Fatal(err)
			}
			placed := h.tbl.CurrentSnapshot().SnapshotID
			before := len(h.consumed())
			h.randomCommits(rng, &live, 4)
			var first int64 // the first snapshot after the checkpoint
			for s := h.tbl.CurrentSnapshot(); s.SnapshotID != placed; s = h.tbl.SnapshotByID(*s.ParentSnapshotID) {
				first = s.SnapshotID
			}

			var (
				err  error
				verb = "placed"
				undo func()
			)
			if !r.midRun {
				// Refused from the start: the new process places its
				// hold before it delivers anything.
				var uri string
				uri, undo = r.apply(t, h)
				err = h.runWith(runOpts{start: "earliest", hold: true, catalogURI: uri, until: func(*state.Store) bool { return false }})
			} else {
				// Refused while the daemon runs: the hold is placed, the
				// first commit's write waits, the catalog turns read-only,
				// and the move after that commit is refused.
				verb = "moved"
				var stuck atomic.Bool
				var writing atomic.Int32
				stuck.Store(true)
				err = h.runWith(runOpts{start: "earliest", hold: true, stuck: &stuck, writing: &writing,
					until: func(*state.Store) bool { return false },
					during: func(ctx context.Context, p *cdc.Pipeline) {
						for writing.Load() == 0 && ctx.Err() == nil {
							time.Sleep(5 * time.Millisecond)
						}
						_, undo = r.apply(t, h)
						stuck.Store(false)
					}})
			}
			if undo == nil {
				t.Fatal("the run ended before the catalog was made read-only")
			}
			if !errors.Is(err, cdc.ErrPermanent) {
				t.Fatalf("run with a catalog refusing the hold: %v, want the table stopped", err)
			}
			msg := err.Error()
			t.Logf("%s", msg)
			if strings.Contains(msg, "\n") {
				t.Fatalf("the error spans lines:\n%s", msg)
			}
			for _, part := range []string{"table shop.orders", "retention hold icecdc-p could not be " + verb, "refused", "or set hold: false"} {
				if !strings.Contains(msg, part) {
					t.Fatalf("the error lacks %q: %s", part, msg)
				}
			}
			evs := h.consumed()
			cp, _ := h.checkpoint()
			if !r.midRun {
				if len(evs) != before || cp.SnapshotID != placed || !cp.Done {
					t.Fatalf("the refused table delivered %d events, checkpoint %v", len(evs)-before, cp)
				}
			} else if !cp.Done || cp.SnapshotID == placed || !h.isAfter(cp.SnapshotID, first) || len(evs) == before || evs[len(evs)-1].Source.ID != cp.SnapshotID {
				// The move is refused at the first hold_interval after the
				// catalog turned read-only: by then one commit, or more
				// on a slow machine, has been delivered; what was
				// delivered ends at the checkpoint, a whole commit at or
				// after the first one past the hold.
				t.Fatalf("checkpoint %v after %d events, want the commits delivered before the refused move (from snapshot %d on), ending at the checkpoint", cp, len(evs)-before, first)
			}
			replayConsumer(t, evs, h.checkLive(t))

			// The hold the table had is still on the table.
			tbl, lerr := h.env.LoadTable(h.ctx, table.Identifier{"shop", "orders"})
			if lerr != nil {
				t.Fatal(lerr)
			}
			want := placed // where the first run placed it
			if r.midRun {
				want = h.tbl.CurrentSnapshot().SnapshotID // placed at the head the second run loaded
			}
			var got int64
			for name, ref := range tbl.Metadata().Refs() {
				if name == cdc.HoldRef("p") {
					got = ref.SnapshotID
				}
			}
			if got != want {
				t.Fatalf("the hold is at snapshot %d, want %d", got, want)
			}

			undo()
			if err := h.runWith(runOpts{start: "earliest", hold: true}); err != nil {
				t.Fatalf("after the catalog accepts commits again: %v", err)
			}
			evs = h.consumed()
			replayConsumer(t, evs, h.checkLive(t))
			if last := evs[len(evs)-1].Source; last.Seq != h.tbl.CurrentSnapshot().SequenceNumber {
				t.Fatalf("the restart stopped at sequence number %d, want the head's %d", last.Seq, h.tbl.CurrentSnapshot().SequenceNumber)
			}
		})
	}
}

// TestPipelineHoldIntervalAndAge: with a long hold_interval, a run over
// many commits in many batches commits the hold once (its placement: one
// metadata file), never per batch or per commit; icecdc_hold_age_seconds,
// as a scrape of the registry shows it, is the age of the oldest snapshot
// held, and follows the checkpoint when the next run places the hold
// again.
func TestPipelineHoldIntervalAndAge(t *testing.T) {
	h := newHarness(t)
	metadataFiles := func() int {
		t.Helper()
		names, err := filepath.Glob(filepath.Join(strings.TrimPrefix(h.tbl.Location(), "file://"), "metadata", "*.metadata.json"))
		if err != nil {
			t.Fatal(err)
		}
		return len(names)
	}
	// run delivers the commits made since the last run, in batches of 2
	// events, and returns the metadata files it wrote and the hold age
	// scraped, with the bounds the age must lie within (seconds since
	// oldest, at the run's start and at its end).
	run := func(oldest *table.Snapshot) (files int, age, lo, hi float64) {
		t.Helper()
		reg := prometheus.NewRegistry()
		before := metadataFiles()
		start := time.Now()
		if err := h.runWith(runOpts{start: "earliest", hold: true, chunk: 2, holdInterval: time.Hour, metrics: metrics.NewMetrics(reg)}); err != nil {
			t.Fatal(err)
		}
		end := time.Now()
		rec := httptest.NewRecorder()
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		const series = `icecdc_hold_age_seconds{table="shop.orders"} `
		found := false
		for line := range strings.Lines(rec.Body.String()) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), series); ok {
				var err error
				if age, err = strconv.ParseFloat(v, 64); err != nil {
					t.Fatalf("%s: %v", line, err)
				}
				found = true
			}
		}
		if !found {
			t.Fatalf("no %s in the scrape:\n%s", series, rec.Body.String())
		}
		at := time.UnixMilli(oldest.TimestampMs)
		return metadataFiles() - before, age, start.Sub(at).Seconds() - 0.001, end.Sub(at).Seconds() + 0.001
	}
	commits := func(n int) {
		for range n {
			from := int64(1)
			if s := h.tbl.CurrentSnapshot(); s != nil {
				from = s.SequenceNumber*5 + 1
			}
			h.append(from, from+4)
			time.Sleep(20 * time.Millisecond) // distinct commit times
		}
	}

	commits(6)
	first := h.tbl.Metadata().Snapshots()[0]
	files, age, lo, hi := run(&first)
	if evs := len(h.consumed()); evs != 30 {
		t.Fatalf("%d events delivered, want the 30 rows appended", evs)
	}
	if files != 1 {
		t.Fatalf("a run over 6 commits in 15 batches with hold_interval 1h wrote %d metadata files, want 1 (the hold's placement)", files)
	}
	if age < lo || age > hi {
		t.Fatalf("icecdc_hold_age_seconds %.3f, want the age of the first snapshot during the run, %.3f to %.3f", age, lo, hi)
	}

	// The next run places the hold from its checkpoint, the head the
	// first run delivered: the age is that snapshot's.
	delivered := h.tbl.CurrentSnapshot()
	commits(4)
	files, age, lo, hi = run(delivered)
	if evs := len(h.consumed()); evs != 50 {
		t.Fatalf("%d events delivered, want the 50 rows appended", evs)
	}
	if files != 1 {
		t.Fatalf("a run over 4 commits in 10 batches with hold_interval 1h wrote %d metadata files, want 1 (the hold's placement)", files)
	}
	if age < lo || age > hi {
		t.Fatalf("icecdc_hold_age_seconds %.3f, want the age of the checkpoint's snapshot during the run, %.3f to %.3f", age, lo, hi)
	}
	tbl, err := h.env.LoadTable(h.ctx, table.Identifier{"shop", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	for name, ref := range tbl.Metadata().Refs() {
		if name == cdc.HoldRef("p") {
			if ref.SnapshotID != h.tbl.CurrentSnapshot().SnapshotID || ref.MinSnapshotsToKeep == nil || *ref.MinSnapshotsToKeep != 5 {
				t.Fatalf("hold at snapshot %d keeping %v snapshots, want the head keeping it and the 4 before it", ref.SnapshotID, ref.MinSnapshotsToKeep)
			}
			return
		}
	}
	t.Fatal("no hold on the table")
}

// isAfter reports whether snapshot id is first or a descendant of it on
// the table's main ancestry.
func (h *harness) isAfter(id, first int64) bool {
	for s := h.tbl.SnapshotByID(id); s != nil; {
		if s.SnapshotID == first {
			return true
		}
		if s.ParentSnapshotID == nil {
			return false
		}
		s = h.tbl.SnapshotByID(*s.ParentSnapshotID)
	}
	return false
}
