package cdc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/netchange"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
	"github.com/icecdc/icecdc/subscribe"
)

func (h *harness) mutate(fn func(context.Context, *table.Table) (*table.Table, error)) {
	h.t.Helper()
	tbl, err := fn(h.ctx, h.tbl)
	if err != nil {
		h.t.Fatal(err)
	}
	h.tbl = tbl
}

func orderIn(ids ...int64) iceberg.BooleanExpression {
	return iceberg.IsIn(iceberg.Reference("order_id"), ids...)
}

// replayed decodes the delivered events and replays them the way a
// consumer does, one snapshot's run of events at a time.
func (h *harness) replayed() (replay.State, []replay.Event) {
	h.t.Helper()
	f, err := os.Open(h.out)
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	var all []replay.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		d.UseNumber()
		var ev replay.Event
		if err := d.Decode(&ev); err != nil {
			h.t.Fatal(err)
		}
		all = append(all, ev)
	}
	s := replay.State{}
	for lo := 0; lo < len(all); {
		hi := lo + 1
		for hi < len(all) && all[hi].Source.SnapshotID == all[lo].Source.SnapshotID {
			hi++
		}
		if err := s.Apply(all[lo:hi]); err != nil {
			h.t.Fatalf("replay of the delivered events: %v", err)
		}
		lo = hi
	}
	return s, all
}

// A daemon with net: true delivers the net changes of its backlog; a
// crash inside a range resumes that very range after the confirmed
// chunks even though the head moved on, and the consumer ends with the
// table's rows.
// newNet is the pipeline's reducer of net changes, as cmd/icecdc's.
func newNet() cdc.NetChanges { return netchange.New() }

func TestPipelineNetResumesInsideARange(t *testing.T) {
	h := newHarness(t)
	h.spec = func(s *cdc.TableSpec) { s.Net = true }
	h.append(1, 6)
	h.mutate(func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, orderIn(1, 2), func(r map[string]any) map[string]any { r["amount"] = 99.0; return r })
	})
	h.mutate(func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, orderIn(2, 3))
	})
	h.append(7, 8)
	rangeEnd := h.tbl.CurrentSnapshot().SequenceNumber

	h.run("earliest", 2, 1) // one chunk of 2 confirmed, then a crash
	store, err := state.Open(h.state, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cp, _, err := store.Load(h.ctx, "p", "shop.orders")
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !cp.Net || cp.Done || cp.NetFrom != 0 || cp.Seq != rangeEnd || cp.Next != 2 {
		t.Fatalf("checkpoint inside the range: %+v", cp)
	}

	// The head moves on before the restart.
	h.mutate(func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, orderIn(7), func(r map[string]any) map[string]any { r["status"] = "paid"; return r })
	})
	h.append(9, 9)
	h.run("earliest", 2, 0)

	got, evs := h.replayed()
	live, err := replay.Live(h.ctx, h.tbl, h.tbl.CurrentSnapshot().SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if d := replay.Diff(got, live); d != "" {
		t.Fatalf("the consumer's rows differ from the table's:\n%s", d)
	}
	// Range 1 (rows 1..8, net): c 1, 4, 5, 6, 7, 8 (2 and 3 were deleted
	// inside it, 1's update folds into its insert). Range 2: u 7, c 9.
	// (By order_id.)
	var ids []string
	for _, ev := range evs {
		img := ev.After
		if img == nil {
			img = ev.Before
		}
		ids = append(ids, fmt.Sprint(ev.Op, img["order_id"]))
	}
	want := []string{"c1", "c4", "c5", "c6", "c7", "c8", "u7", "c9"}
	slices.Sort(ids[:6])
	if !slices.Equal(ids, want) {
		t.Fatalf("delivered %v, want %v ", ids, want)
	}
	for _, ev := range evs[:6] {
		if ev.Source.Seq > rangeEnd {
			t.Fatalf("an event of the first range names sequence number %d, past its end %d", ev.Source.Seq, rangeEnd)
		}
	}
}

// NetMaxRows cuts the backlog into ranges that hold at most that many
// rows; a snapshot larger than that alone is delivered as it is. The
// consumer still ends with the table's rows.
func TestPipelineNetBoundedRanges(t *testing.T) {
	h := newHarness(t)
	h.spec = func(s *cdc.TableSpec) { s.Net, s.NetMaxRows = true, 3 }
	h.append(1, 2)
	h.mutate(func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, orderIn(1), func(r map[string]any) map[string]any { r["amount"] = 5.0; return r })
	})
	h.append(3, 7) // 5 rows: more than the bound alone
	h.mutate(func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, orderIn(3))
	})
	h.run("earliest", 100, 0)
	got, evs := h.replayed()
	live, err := replay.Live(h.ctx, h.tbl, h.tbl.CurrentSnapshot().SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if d := replay.Diff(got, live); d != "" {
		t.Fatalf("the consumer's rows differ from the table's:\n%s", d)
	}
	// Ranges: {1, 2} (2 rows: c1 folded with its update, c2), {3} alone
	// (5 inserts), {4} (d 3).
	var ops []string
	for _, ev := range evs {
		ops = append(ops, ev.Op)
	}
	if want := []string{"c", "c", "c", "c", "c", "c", "c", "d"}; !slices.Equal(ops, want) {
		t.Fatalf("delivered ops %v, want %v", ops, want)
	}
}

// A subscription to a column the table does not have stops the table at
// start with one line naming the table and the column.
func TestPipelineUnknownSubscribedColumn(t *testing.T) {
	h := newHarness(t)
	h.append(1, 2)
	src, err := source.New(source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: "shop.orders"})
	if err != nil {
		t.Fatal(err)
	}
	store, fs := h.storeAndFile()
	st, _ := cdc.ParseStart("earliest")
	p := &cdc.Pipeline{Name: "p", Sink: fs, Store: store, Encoder: newEncoder("p"), Poll: 20 * time.Millisecond,
		Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: st, Policies: []cdc.Policy{subscribe.Columns{"status", "colour"}}}}}
	err = p.Run(h.ctx)
	want := `table shop.orders: columns: unknown column "colour" (the table's columns: order_id, customer, status, amount)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if _, found, _ := store.Load(h.ctx, "p", "shop.orders"); found {
		t.Fatal("a checkpoint was stored for a table that never started")
	}
}
