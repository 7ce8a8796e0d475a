package cdc_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/state"
)

// faultyStore is the real state store whose Save fails while failing
// is set, as a full disk makes it; armed sets failing at the first
// checkpoint of a batch.
type faultyStore struct {
	cdc.Store
	armed, failing atomic.Bool
	fails          atomic.Int64
}

func (s *faultyStore) Save(ctx context.Context, pipeline, table string, cp cdc.Checkpoint) error {
	if cp.Next > 0 && s.armed.CompareAndSwap(true, false) {
		s.failing.Store(true)
	}
	if s.failing.Load() {
		s.fails.Add(1)
		return errors.New("write state.db: no space left on device")
	}
	return s.Store.Save(ctx, pipeline, table, cp)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStateWriteFault: a checkpoint that cannot be stored is a fault of
// the state (component "state", logged as "state failing"), not of the
// source; it is retried in place, so the batch the sink confirmed is
// not written again however long the state fails; once it can be
// stored, the table goes on and every row is delivered once. On main
// it was "source failing", and each retry wrote the batch again.
func TestStateWriteFault(t *testing.T) {
	real, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	store := &faultyStore{Store: real}
	store.armed.Store(true)
	src := cdctest.New(cdctest.Info("shop", "orders"))
	head := src.Append(cdctest.Inserts(1, 100)...)
	sink := &cdctest.Sink{}
	logs := &lockedBuffer{}
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Encoder: newEncoder("p"), Sink: sink, Store: store, Poll: time.Millisecond, ChunkSize: 10,
		RetryInitial: time.Millisecond, RetryMax: time.Millisecond, Log: slog.New(slog.NewTextHandler(logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}()
	waitFor(t, "20 failed saves", func() bool { return store.fails.Load() >= 20 })
	if n := sink.Writes(); n != 1 {
		t.Errorf("%d writes while the state failed, want 1 (the confirmed batch is not written again)", n)
	}
	var h health.TableHealth
	for _, x := range p.Health.Tables() {
		if x.Table == "shop.orders" {
			h = x
		}
	}
	if h.State != health.StateFailing || h.Component != health.InState || !strings.Contains(h.LastError, "no space left") {
		t.Errorf("health while the state fails: %+v, want failing in %q", h, health.InState)
	}
	if l := logs.String(); !strings.Contains(l, `msg="state failing; retrying"`) || strings.Contains(l, "source failing") {
		t.Errorf("log while the state fails:\n%s", l)
	}
	store.failing.Store(false)
	waitFor(t, "caught up", func() bool {
		cp, ok, _ := real.Load(context.Background(), "p", "shop.orders")
		return ok && cp.Done && cp.SnapshotID == head.ID
	})
	if ids := sink.IDs(); len(ids) != 100 {
		t.Errorf("%d events delivered, want the 100 rows once each", len(ids))
	}
	if l := logs.String(); !strings.Contains(l, "state recovered") {
		t.Errorf("no line saying the state recovered:\n%s", l)
	}
}
