package cdc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// runStopping runs a one-table pipeline that must stop on its own (a
// permanent or history error) and returns that error.
func (h *harness) runStopping(o source.Options, start string) error {
	h.t.Helper()
	st, err := cdc.ParseStart(start)
	if err != nil {
		h.t.Fatal(err)
	}
	src, err := source.New(o)
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
	ctx, cancel := context.WithTimeout(h.ctx, 20*time.Second)
	defer cancel()
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: st}}, Encoder: newEncoder("p"),
		Sink: fs, Store: store, Poll: 20 * time.Millisecond, RetryInitial: 10 * time.Millisecond}
	err = p.Run(ctx)
	if ctx.Err() != nil {
		h.t.Fatalf("start %s: the table did not stop within 20s (retried as transient?)", start)
	}
	return err
}

func (h *harness) catalogOptions() source.Options {
	return source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: "shop.orders"}
}

func (h *harness) checkpoint() (cdc.Checkpoint, bool) {
	h.t.Helper()
	store, err := state.Open(h.state, state.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer store.Close()
	cp, ok, err := store.Load(h.ctx, "p", "shop.orders")
	if err != nil {
		h.t.Fatal(err)
	}
	return cp, ok
}

// TestPipelineRefusesImpossibleStarts: a start position the table cannot
// honour stops the table with an error naming it, and is never saved as
// the checkpoint (which would skip or lose commits for good).
func TestPipelineRefusesImpossibleStarts(t *testing.T) {
	h := newHarness(t)
	h.append(1, 2)
	h.append(3, 4)
	h.append(5, 6)
	for _, c := range []struct {
		start string
		want  []string
		kind  error
	}{
		{"sequence:999999", []string{"sequence:999999", "past the branch head", "sequence number 3"}, cdc.ErrPermanent},
		{"sequence:4", []string{"sequence:4", "past the branch head"}, cdc.ErrPermanent},
		{"snapshot:12345", []string{"snapshot:12345", "no such snapshot"}, cdc.ErrPermanent},
	} {
		err := h.runStopping(h.catalogOptions(), c.start)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Fatalf("start %s: %v, want it to say %q", c.start, err, w)
			}
		}
		if !errors.Is(err, c.kind) {
			t.Fatalf("start %s: %v is not %v", c.start, err, c.kind)
		}
		if cp, ok := h.checkpoint(); ok {
			t.Fatalf("start %s was saved as checkpoint %v", c.start, cp)
		}
	}
	// sequence:3 is the head: valid, nothing to deliver yet.
	h.run("sequence:3", 100, 0)
	if cp, ok := h.checkpoint(); !ok || cp.Seq != 3 {
		t.Fatalf("sequence:3: checkpoint %v %v", cp, ok)
	}
}

// TestPipelineEarliestOnExpiredHistory: earliest is the retained history
// (as Kafka's earliest offset); an explicit position inside the expired
// part stops the table and says what to choose, never retrying forever
// nor starting in the middle.
func TestPipelineEarliestOnExpiredHistory(t *testing.T) {
	h := newHarness(t)
	for i := int64(1); i <= 4; i++ {
		h.append(i, i)
	}
	h.expire(2)
	for _, start := range []string{"sequence:1", "timestamp:2000-01-01T00:00:00Z"} {
		err := h.runStopping(h.catalogOptions(), start)
		if !errors.Is(err, cdc.ErrHistory) || !strings.Contains(err.Error(), "expired") || !strings.Contains(err.Error(), "earliest") {
			t.Fatalf("start %s on expired history: %v", start, err)
		}
		if _, ok := h.checkpoint(); ok {
			t.Fatalf("start %s was saved", start)
		}
	}
	h.run("earliest", 100, 0)
	if evs := h.events(); len(evs) != 2 || evs[0].Source.Seq != 3 || evs[1].Source.Seq != 4 {
		t.Fatalf("earliest on expired history: %+v", evs)
	}
}

// TestPipelineEarliestFromADeletingSnapshot: when the oldest retained
// snapshot deletes rows, its events are computed without its expired
// parent, so earliest delivers them too.
func TestPipelineEarliestFromADeletingSnapshot(t *testing.T) {
	h := newHarness(t)
	h.append(1, 3)
	h.append(4, 6)
	tbl, err := scenario.Delete(h.ctx, h.tbl, iceberg.EqualTo(iceberg.Reference("order_id"), int64(2)))
	if err != nil {
		t.Fatal(err)
	}
	h.tbl = tbl
	h.append(7, 7)
	h.expire(2)
	h.run("earliest", 100, 0)
	evs := h.events()
	if len(evs) != 2 || evs[0].Op != "d" || evs[0].Source.RowID != 1 || evs[0].Source.Seq != 3 || evs[1].Op != "c" || evs[1].Source.Seq != 4 {
		t.Fatalf("earliest from a deleting snapshot: %+v", evs)
	}
}

func (h *harness) expire(retain int) {
	h.t.Helper()
	tx := h.tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(retain), table.WithPostCommit(false)); err != nil {
		h.t.Fatal(err)
	}
	tbl, err := tx.Commit(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	h.tbl = tbl
}

// TestPipelineMiddleExpiryIsHistoryLoss: when a snapshot between the
// checkpoint and the head was expired, the table stops saying so (not
// "rolled back"), and delivers nothing past the gap.
func TestPipelineMiddleExpiryIsHistoryLoss(t *testing.T) {
	h := newHarness(t)
	h.append(1, 1)
	h.append(2, 2)
	h.run("earliest", 100, 0) // checkpoint at sequence number 2
	for i := int64(3); i <= 5; i++ {
		h.append(i, i)
	}
	// A metadata file without the snapshot of sequence number 3.
	edited := h.editMetadata(func(m map[string]any) {
		var kept []any
		for _, s := range m["snapshots"].([]any) {
			if s.(map[string]any)["sequence-number"].(json.Number).String() != "3" {
				kept = append(kept, s)
			}
		}
		m["snapshots"] = kept
	})
	before := len(h.events())
	err := h.runStopping(source.Options{MetadataPath: edited}, "earliest")
	if !errors.Is(err, cdc.ErrHistory) || !strings.Contains(err.Error(), "was expired") || strings.Contains(err.Error(), "rolled back") ||
		!strings.Contains(err.Error(), "icecdc reset") {
		t.Fatalf("middle expiry: %v", err)
	}
	if n := len(h.events()); n != before {
		t.Fatalf("%d events delivered past the gap", n-before)
	}
	if cp, _ := h.checkpoint(); cp.Seq != 2 {
		t.Fatalf("checkpoint moved to %v", cp)
	}
}

// editMetadata writes a copy of the table's current metadata file, changed
// by edit (numbers as json.Number), beside it and returns its path.
func (h *harness) editMetadata(edit func(m map[string]any)) string {
	h.t.Helper()
	meta := strings.TrimPrefix(h.tbl.MetadataLocation(), "file://")
	raw, err := os.ReadFile(meta)
	if err != nil {
		h.t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		h.t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	edited := filepath.Join(filepath.Dir(meta), "99999-edited.metadata.json")
	if err := os.WriteFile(edited, out, 0o644); err != nil {
		h.t.Fatal(err)
	}
	return edited
}

// TestPipelineEarliestRefusesAWrongParent: a parent-snapshot-id that
// points nowhere looks like an expired parent, but when every sequence
// number below the snapshot is a snapshot the metadata still lists,
// nothing was expired: earliest must not start after the break (which
// skipped the listed snapshots' commits with exit 0 and a WARN); the table
// stops naming the snapshot and its parent pointer. A real expiry is
// TestPipelineEarliestOnExpiredHistory.
func TestPipelineEarliestRefusesAWrongParent(t *testing.T) {
	h := newHarness(t)
	for i := int64(1); i <= 3; i++ {
		h.append(i, i)
	}
	for _, c := range []struct {
		name   string
		seq    string // the snapshot whose parent is bent
		parent string
	}{
		{"unknown parent id", "3", "4242424242"},
		{"parent -1", "2", "-1"},
		{"parent 2^63-1", "3", "9223372036854775807"},
	} {
		os.Remove(h.state)
		os.Remove(h.out)
		var id string
		edited := h.editMetadata(func(m map[string]any) {
			for _, s := range m["snapshots"].([]any) {
				if s := s.(map[string]any); s["sequence-number"].(json.Number).String() == c.seq {
					s["parent-snapshot-id"], id = json.Number(c.parent), s["snapshot-id"].(json.Number).String()
				}
			}
		})
		err := h.runStopping(source.Options{MetadataPath: edited}, "earliest")
		if !errors.Is(err, cdc.ErrPermanent) {
			t.Fatalf("%s: %v, want a permanent error", c.name, err)
		}
		for _, w := range []string{"snapshot " + id, "parent-snapshot-id " + c.parent, "parent pointer is wrong"} {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%s: %v, want it to say %q", c.name, err, w)
			}
		}
		if n := len(h.events()); n != 0 {
			t.Fatalf("%s: %d events delivered", c.name, n)
		}
	}
}
