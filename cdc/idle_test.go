package cdc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/source"
)

// countingSource counts the calls an idle poll must avoid.
type countingSource struct {
	cdc.Source
	refreshes, walks, closes atomic.Int64
}

func (s *countingSource) Refresh(ctx context.Context) (bool, error) {
	s.refreshes.Add(1)
	return s.Source.Refresh(ctx)
}

func (s *countingSource) Snapshots(ctx context.Context, after, to int64) ([]cdc.SnapshotInfo, error) {
	s.walks.Add(1)
	return s.Source.Snapshots(ctx, after, to)
}

func (s *countingSource) Close() error {
	s.closes.Add(1)
	return s.Source.Close()
}

// TestIdlePollSkipsWalk: while the table's metadata does not change, a
// poll is a Refresh and nothing else; a new commit is still delivered, and
// the source is closed when the pipeline stops.
func TestIdlePollSkipsWalk(t *testing.T) {
	h := newHarness(t)
	h.append(1, 3)
	src, err := source.New(source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: "shop.orders"})
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingSource{Source: src}
	store, fs := h.storeAndFile()
	earliest, _ := cdc.ParseStart("earliest")
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	p := &cdc.Pipeline{Name: "p", Sink: fs, Store: store, Encoder: newEncoder("p"), Poll: 10 * time.Millisecond,
		Tables: []cdc.TableSpec{{Name: "shop.orders", Source: cs, Start: earliest}}}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitFor := func(seq int64) {
		t.Helper()
		for {
			if cp, ok, _ := store.Load(ctx, "p", "shop.orders"); ok && cp.Done && cp.Seq == seq {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("sequence number %d was not delivered", seq)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor(1)
	walks, refreshes := cs.walks.Load(), cs.refreshes.Load()
	time.Sleep(300 * time.Millisecond)
	if n := cs.refreshes.Load() - refreshes; n < 5 {
		t.Fatalf("%d polls in 300ms at a 10ms interval", n)
	}
	if n := cs.walks.Load() - walks; n != 0 {
		t.Fatalf("%d snapshot walks while the metadata did not change, want none", n)
	}
	h.append(4, 5)
	waitFor(2)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(h.events()); n != 5 {
		t.Fatalf("%d events, want 5", n)
	}
	if n := cs.closes.Load(); n != 1 {
		t.Fatalf("source closed %d times, want once", n)
	}
}
