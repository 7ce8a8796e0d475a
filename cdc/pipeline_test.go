package cdc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

type delivered struct {
	Op     string `json:"op"`
	Source struct {
		Snapshot string `json:"snapshot"`
		Seq      int64  `json:"sequence_number"`
		RowID    int64  `json:"row_id"`
		Index    int    `json:"event_index"`
	} `json:"source"`
}

// harness is a real table, a real bbolt store and a file sink.
type harness struct {
	t     *testing.T
	ctx   context.Context
	env   *scenario.Env
	tbl   *table.Table
	dir   string
	out   string
	state string
	held  int // MaxHeldRows of the source
	// failAt makes the sink fail its failAt-th Write once; attempts is
	// the first event index of every Write of the last run.
	failAt   int
	attempts []int
	spec     func(*cdc.TableSpec)
}

// newEncoder is the encoder of the pipeline tests: debezium-json, with
// source.name the pipeline's name.
func newEncoder(pipeline string) cdc.Encoder {
	return &debezium.JSON{Envelope: debezium.Envelope{Pipeline: pipeline}}
}

// TestPipelineNeedsEncoder checks that a pipeline without an encoder
// refuses to run instead of choosing a format itself.
func TestPipelineNeedsEncoder(t *testing.T) {
	h := newHarness(t)
	h.append(1, 3)
	src, err := source.Open(h.ctx, source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: "shop.orders"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	store, fs := h.storeAndFile()
	p := &cdc.Pipeline{Name: "p", Store: store, Sink: fs, Once: true,
		Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}}}
	if err := p.Run(h.ctx); err == nil || err.Error() != "pipeline p: no encoder" {
		t.Fatalf("Run without an encoder: %v, want pipeline p: no encoder", err)
	}
}

func newHarness(t *testing.T) *harness {
	ctx := context.Background()
	dir := t.TempDir()
	env, err := scenario.NewEnv(ctx, filepath.Join(dir, "wh"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, ctx: ctx, env: env, tbl: tbl, dir: dir, out: filepath.Join(dir, "events.jsonl"), state: filepath.Join(dir, "state.db")}
}

func (h *harness) append(from, to int64) {
	h.t.Helper()
	var rows []map[string]any
	for i := from; i <= to; i++ {
		rows = append(rows, scenario.Order(i, "c", "new", float64(i)))
	}
	tbl, err := scenario.Append(h.ctx, h.tbl, rows)
	if err != nil {
		h.t.Fatal(err)
	}
	h.tbl = tbl
}

// runUntil runs the pipeline until the table's checkpoint reaches the head
// (or stopAfter confirmed batches when > 0), then stops it.
func (h *harness) run(start string, chunk int, stopAfter int) {
	h.t.Helper()
	st, err := cdc.ParseStart(start)
	if err != nil {
		h.t.Fatal(err)
	}
	src, err := source.Open(h.ctx, source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: "shop.orders", MaxHeldRows: h.held})
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
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	sink := &countingSink{Sink: fs, stopAfter: stopAfter, cancel: cancel, failAt: h.failAt}
	defer func() { h.attempts = sink.attempts }()
	spec := cdc.TableSpec{Name: "shop.orders", Source: src, Start: st}
	if h.spec != nil {
		h.spec(&spec)
	}
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{spec}, Encoder: newEncoder("p"),
		Sink: sink, Store: store, Poll: 20 * time.Millisecond, ChunkSize: chunk, RetryInitial: 10 * time.Millisecond, NewNet: newNet}
	head := h.tbl.CurrentSnapshot().SequenceNumber
	go func() {
		for ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			if cp, ok, _ := store.Load(ctx, "p", "shop.orders"); ok && cp.Done && !cp.Initial && cp.Seq >= head && stopAfter == 0 {
				cancel()
			}
		}
	}()
	if err := p.Run(ctx); err != nil {
		h.t.Fatal(err)
	}
	fs.Close(h.ctx)
}

type countingSink struct {
	cdc.Sink
	n, stopAfter int
	cancel       func()
	// failAt fails the Write with that number (from 1) once; attempts
	// records the first event index of every Write.
	failAt   int
	writes   int
	attempts []int
}

// RetainsNoBatch: the file sink underneath keeps nothing of a batch.
func (s *countingSink) RetainsNoBatch() {}

func (s *countingSink) Write(ctx context.Context, b *cdc.Batch) error {
	s.writes++
	s.attempts = append(s.attempts, b.Checkpoint.Next-len(b.Messages))
	if s.writes == s.failAt {
		return errors.New("the destination is away for a moment")
	}
	if err := s.Sink.Write(ctx, b); err != nil {
		return err
	}
	s.n++
	if s.stopAfter > 0 && s.n >= s.stopAfter {
		s.cancel()
	}
	return nil
}

func (h *harness) events() []delivered {
	h.t.Helper()
	f, err := os.Open(h.out)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	var out []delivered
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d delivered
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

func TestPipelineInitialThenStream(t *testing.T) {
	t.Run("held", func(t *testing.T) { initialThenStream(t, 0) })
	t.Run("streamed", func(t *testing.T) { initialThenStream(t, 1) })
}

func initialThenStream(t *testing.T, held int) {
	h := newHarness(t)
	h.held = held
	h.append(1, 5)
	tbl, err := scenario.Delete(h.ctx, h.tbl, iceberg.EqualTo(iceberg.Reference("order_id"), int64(2)))
	if err != nil {
		t.Fatal(err)
	}
	h.tbl = tbl
	h.run("initial", 2, 0)
	evs := h.events()
	if len(evs) != 4 {
		t.Fatalf("initial read: %d events, want the 4 live rows", len(evs))
	}
	for i, e := range evs {
		wantMarker := "true"
		if i == len(evs)-1 {
			wantMarker = "last"
		}
		if e.Op != "r" || e.Source.Snapshot != wantMarker {
			t.Fatalf("event %d: op %s snapshot %q", i, e.Op, e.Source.Snapshot)
		}
	}
	h.append(6, 7)
	h.run("initial", 2, 0) // the checkpoint wins over the start position now
	evs = h.events()
	if len(evs) != 6 || evs[4].Op != "c" || evs[5].Op != "c" || evs[5].Source.Snapshot != "false" {
		t.Fatalf("after the initial read: %+v", evs)
	}
}

func TestPipelineResumesInsideASnapshot(t *testing.T) {
	t.Run("held", func(t *testing.T) { resumeInsideASnapshot(t, 0) })
	t.Run("streamed", func(t *testing.T) { resumeInsideASnapshot(t, 1) })
}

func resumeInsideASnapshot(t *testing.T, held int) {
	h := newHarness(t)
	h.held = held
	h.append(1, 10)
	h.run("earliest", 3, 2) // stop after two confirmed chunks: 6 of 10 events
	if n := len(h.events()); n != 6 {
		t.Fatalf("%d events after two chunks, want 6", n)
	}
	h.run("earliest", 3, 0)
	evs := h.events()
	if len(evs) != 10 {
		t.Fatalf("%d events after resuming, want 10 (no duplicate, none lost)", len(evs))
	}
	for i, e := range evs {
		if e.Source.Index != i || e.Source.RowID != int64(i) {
			t.Fatalf("event %d: index %d row %d", i, e.Source.Index, e.Source.RowID)
		}
	}
}

// TestPipelineSinkFailureStopsTheChunksAfterIt: the next chunk is read and
// encoded while one is written, but when that write fails, the chunk
// encoded ahead is dropped: the retry starts at the failed chunk, from the
// checkpoint, and every event arrives once, in order.
func TestPipelineSinkFailureStopsTheChunksAfterIt(t *testing.T) {
	for _, held := range []int{0, 1} {
		h := newHarness(t)
		h.held = held
		h.append(1, 10)
		h.failAt = 2
		h.run("earliest", 3, 0)
		if got := fmt.Sprint(h.attempts); got != "[0 3 3 6 9]" {
			t.Fatalf("held %d: writes started at events %s, want [0 3 3 6 9]", held, got)
		}
		evs := h.events()
		if len(evs) != 10 {
			t.Fatalf("held %d: %d events, want 10", held, len(evs))
		}
		for i, e := range evs {
			if e.Source.Index != i {
				t.Fatalf("held %d: event %d has index %d", held, i, e.Source.Index)
			}
		}
	}
}

func TestPipelineStartPositions(t *testing.T) {
	h := newHarness(t)
	h.append(1, 2)
	h.append(3, 4)
	h.append(5, 6)
	h.run("sequence:2", 100, 0)
	evs := h.events()
	if len(evs) != 2 || evs[0].Source.Seq != 3 {
		t.Fatalf("sequence:2 must start after seq 2: %+v", evs)
	}
	h2 := newHarness(t)
	h2.append(1, 2)
	h2.run("latest", 100, 0)
	h2.append(3, 3)
	h2.run("latest", 100, 0)
	if evs := h2.events(); len(evs) != 1 || evs[0].Source.RowID != 2 {
		t.Fatalf("latest must skip existing history: %+v", evs)
	}
}

// A v2 table keeps being retried, shown as failing, and a table the
// catalog does not know stops (a name to correct), while the other table
// of the pipeline delivers; once the v2 table is upgraded to v3 it is
// followed.
func TestPipelineTableIsolation(t *testing.T) {
	h := newHarness(t)
	h.append(1, 3)
	v2, err := h.env.CreateTable(h.ctx, table.Identifier{"shop", "old"}, scenario.OrdersSchema(), nil, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v2, err = scenario.Append(h.ctx, v2, []map[string]any{scenario.Order(1, "a", "new", 1)}); err != nil {
		t.Fatal(err)
	}
	open := func(name string) cdc.Source {
		src, err := source.New(source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: name})
		if err != nil {
			t.Fatal(err)
		}
		return src
	}
	store, fs := h.storeAndFile()
	earliest, _ := cdc.ParseStart("earliest")
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	tracker := &health.Health{}
	p := &cdc.Pipeline{Name: "p", Sink: fs, Store: store, Encoder: newEncoder("p"), Poll: 20 * time.Millisecond, RetryInitial: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		Health: tracker,
		Tables: []cdc.TableSpec{
			{Name: "shop.missing", Source: open("shop.missing"), Start: earliest},
			{Name: "shop.old", Source: open("shop.old"), Start: earliest},
			{Name: "shop.orders", Source: open("shop.orders"), Start: earliest},
		}}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if cp, ok, _ := store.Load(ctx, "p", "shop.orders"); ok && cp.Seq == 1 && cp.Done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("shop.orders was not delivered while another table failed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(h.events()); n != 3 {
		t.Fatalf("%d events of shop.orders, want 3", n)
	}
	states := map[string]health.TableHealth{}
	for _, th := range tracker.Tables() {
		states[th.Table] = th
	}
	if s := states["shop.old"]; s.State != health.StateFailing || !strings.Contains(s.LastError, "format version 2") {
		t.Fatalf("the v2 table must be failing with a clear error: %+v", s)
	}
	if s := states["shop.missing"]; s.State != health.StateStopped || s.Component != health.InSource || !strings.HasPrefix(s.LastError, "table shop.missing does not exist in sql catalog") {
		t.Fatalf("a table the catalog does not know is stopped in the source: %+v", s)
	}
	if s := states["shop.orders"]; s.State != health.StateOK {
		t.Fatalf("shop.orders: %+v", s)
	}

	// Committed through a catalog handle that waits for the pipeline's
	// readers' locks instead of failing with SQLITE_BUSY.
	props := h.env.CatalogProperties()
	cat, err := catalog.Load(h.ctx, scenario.CatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	defer cat.(catalog.Closer).Close()
	if v2, err = cat.LoadTable(h.ctx, v2.Identifier()); err != nil {
		t.Fatal(err)
	}
	v3, err := scenario.UpgradeToV3(h.ctx, v2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Append(h.ctx, v3, []map[string]any{scenario.Order(2, "b", "new", 2)}); err != nil {
		t.Fatal(err)
	}
	for {
		cp, ok, _ := store.Load(ctx, "p", "shop.old")
		if ok && cp.Done && cp.Seq >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shop.old was not followed after its upgrade to v3: %+v", tracker.Tables())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err == nil || !strings.HasPrefix(err.Error(), "table shop.missing does not exist") || strings.Contains(err.Error(), "format version") {
		t.Fatalf("only the missing table may stop: %v", err)
	}
}
