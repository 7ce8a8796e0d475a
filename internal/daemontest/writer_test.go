package daemontest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// largeKinds are the writer's large commits, in turn. With the crash
// tests' chunk of 100, 1,200 rows make a dozen chunks; the daemon delivers
// those in a few milliseconds, so the largest commits, of hundreds of
// chunks, are what gives random kills a fair chance to land in the middle
// of a snapshot.
var largeKinds = []struct {
	op   string
	rows int
}{
	{"append", 1200}, {"update", 400}, {"append", 40000}, {"delete", 300},
	{"update", 8000}, {"append", 40000}, {"delete", 2500},
}

// writer commits a seeded random sequence of changes to one orders table:
// appends, merge-on-read deletes, updates that keep row ids, an append
// with a delete in one commit, and compactions. It tracks the live order
// ids itself, so its choices depend only on the seed.
type writer struct {
	env   *scenario.Env
	tbl   *table.Table
	rng   *rand.Rand
	live  []int64 // live order ids, ascending
	next  int64   // next order id
	log   []string
	large int // large commits made
}

// newWriter creates the table ident (format v3, merge-on-read).
func newWriter(ctx context.Context, env *scenario.Env, ident string, seed uint64) (*writer, error) {
	tbl, err := env.CreateTable(ctx, catalog.ToIdentifier(ident), scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		return nil, err
	}
	return &writer{env: env, tbl: tbl, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), next: 1}, nil
}

func (w *writer) rows(n int, status string) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		id := w.next
		w.next++
		out[i] = scenario.Order(id, fmt.Sprintf("c%d", id%97), status, float64(id%1000)+0.25)
		w.live = append(w.live, id)
	}
	return out
}

// pick returns n distinct live ids (fewer if fewer are live), ascending.
func (w *writer) pick(n int) []int64 {
	n = min(n, len(w.live))
	idx := w.rng.Perm(len(w.live))[:n]
	out := make([]int64, n)
	for i, k := range idx {
		out[i] = w.live[k]
	}
	slices.Sort(out)
	return out
}

// span returns up to n consecutive live ids from a random place.
func (w *writer) span(n int) []int64 {
	n = min(n, len(w.live))
	at := w.rng.IntN(len(w.live) - n + 1)
	return slices.Clone(w.live[at : at+n])
}

func (w *writer) forget(ids []int64) {
	w.live = slices.DeleteFunc(w.live, func(id int64) bool { _, ok := slices.BinarySearch(ids, id); return ok })
}

func in(ids []int64) iceberg.BooleanExpression {
	return iceberg.IsIn(iceberg.Reference("order_id"), ids...)
}

// step makes commit i (from 0) and returns what it did. Commits at
// forceLarge positions are large; the first is always an append.
func (w *writer) step(ctx context.Context, i int, forceLarge bool) (string, error) {
	var (
		next *table.Table
		err  error
		desc string
	)
	op := w.rng.IntN(100)
	switch {
	case i == 0 || len(w.live) < 20:
		op = 0
	case forceLarge:
		op = -1
	}
	switch {
	case op < 0: // large: many rows in one commit, in turn of kind
		k := largeKinds[w.large%len(largeKinds)]
		w.large++
		switch k.op {
		case "append":
			next, err = scenario.Append(ctx, w.tbl, w.rows(k.rows, "new"))
			desc = fmt.Sprintf("append %d", k.rows)
		case "update":
			ids := w.span(k.rows)
			next, err = scenario.Update(ctx, w.tbl, in(ids), bump(i))
			desc = fmt.Sprintf("update %d", len(ids))
		case "delete":
			ids := w.span(k.rows)
			next, err = scenario.Delete(ctx, w.tbl, in(ids))
			w.forget(ids)
			desc = fmt.Sprintf("delete %d", len(ids))
		}
	case op < 45:
		n := 1 + w.rng.IntN(50)
		next, err = scenario.Append(ctx, w.tbl, w.rows(n, "new"))
		desc = fmt.Sprintf("append %d", n)
	case op < 65:
		ids := w.pick(1 + w.rng.IntN(10))
		next, err = scenario.Delete(ctx, w.tbl, in(ids))
		w.forget(ids)
		desc = fmt.Sprintf("delete %d", len(ids))
	case op < 87:
		ids := w.pick(1 + w.rng.IntN(10))
		next, err = scenario.Update(ctx, w.tbl, in(ids), bump(i))
		desc = fmt.Sprintf("update %d", len(ids))
	case op < 93:
		ids := w.pick(1 + w.rng.IntN(5))
		w.forget(ids)
		rows := w.rows(1+w.rng.IntN(20), "merged")
		next, err = scenario.AppendAndDelete(ctx, w.tbl, rows, in(ids))
		desc = fmt.Sprintf("append %d + delete %d", len(rows), len(ids))
	default:
		next, err = scenario.Compact(ctx, w.tbl)
		desc = "compact"
	}
	if errors.Is(err, scenario.ErrNoCommit) {
		// Nothing to compact: append instead, so that every step commits.
		n := 1 + w.rng.IntN(50)
		next, err = scenario.Append(ctx, w.tbl, w.rows(n, "new"))
		desc = fmt.Sprintf("append %d", n)
	}
	if err != nil {
		return desc, fmt.Errorf("commit %d (%s): %w", i, desc, err)
	}
	w.tbl = next
	s := next.CurrentSnapshot()
	desc = fmt.Sprintf("seq %d: %s", s.SequenceNumber, desc)
	w.log = append(w.log, desc)
	return desc, nil
}

// bump is an update: a new status and amount, the same order id.
func bump(i int) func(map[string]any) map[string]any {
	return func(r map[string]any) map[string]any {
		r["status"] = fmt.Sprintf("updated-%d", i)
		if a, ok := r["amount"].(float64); ok {
			r["amount"] = a + 1
		}
		return r
	}
}
