package kafka

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestForget deletes checkpoint records as `icecdc reset` does under
// exactly-once: one table, then every table of the pipeline. Restore
// then finds none (a tombstone is no checkpoint), other tables and
// pipelines keep theirs, a daemon still running is fenced, and a table
// delivered again from its start position is restored at its new,
// earlier position.
func TestForget(t *testing.T) {
	ctx := testContext(t)
	c := newCluster(t)
	cfg := testConfig(c)
	cfg.Delivery = ExactlyOnce
	running := exactlyOnce(t, c, cfg)
	otherCfg := cfg
	otherCfg.Pipeline = "other-pipeline"
	other := exactlyOnce(t, c, otherCfg)
	orders, returns := sinktest.NewStream("shop", "orders"), sinktest.NewStream("shop", "returns")
	write := func(s *ExactlyOnceSink, bs ...*cdc.Batch) {
		t.Helper()
		for _, b := range bs {
			if err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	first := orders.Snapshot(30, 0)[0]
	write(running, first, orders.Snapshot(30, 0)[0], returns.Snapshot(20, 0)[0])
	write(other, orders.Snapshot(10, 0)[0])
	wantOther := restoredAs(t, ctx, other, "other-pipeline", orders.Table)
	wantReturns := restored(t, ctx, running, returns.Table)

	reset := exactlyOnce(t, c, cfg) // what `icecdc reset` makes
	got, err := reset.Forget(ctx, "shop-cdc", []string{"shop.orders", "shop.nope"})
	if err != nil || !reflect.DeepEqual(got, []string{"shop.orders"}) {
		t.Fatalf("Forget shop.orders = %v, %v", got, err)
	}
	if cp, ok, err := reset.Restore(ctx, "shop-cdc", orders.Table); err != nil || ok {
		t.Fatalf("Restore after Forget = %s, %v, %v; want no checkpoint", cp, ok, err)
	}
	if got := restored(t, ctx, reset, returns.Table); got != wantReturns {
		t.Fatalf("returns restored %s, want %s", got, wantReturns)
	}
	if got := restoredAs(t, ctx, reset, "other-pipeline", orders.Table); got != wantOther {
		t.Fatalf("the other pipeline's orders restored %s, want %s", got, wantOther)
	}
	if err := running.Write(ctx, orders.Snapshot(5, 0)[0]); !errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write of the daemon running during Forget: %v, want it fenced (cdc.ErrPermanent)", err)
	}
	if got, err := reset.Forget(ctx, "shop-cdc", []string{"shop.orders"}); err != nil || len(got) != 0 {
		t.Fatalf("Forget again = %v, %v; want nothing left to forget", got, err)
	}

	got, err = reset.Forget(ctx, "shop-cdc", nil)
	if err != nil || !reflect.DeepEqual(got, []string{"shop.returns"}) {
		t.Fatalf("Forget all = %v, %v", got, err)
	}
	if err := reset.Close(ctx); err != nil {
		t.Fatal(err)
	}
	c.Compact()
	restarted := exactlyOnce(t, c, cfg)
	for _, table := range []cdc.TableInfo{orders.Table, returns.Table} {
		if cp, ok, err := restarted.Restore(ctx, "shop-cdc", table); err != nil || ok {
			t.Fatalf("Restore %s after Forget all and compaction = %s, %v, %v", table.Name, cp, ok, err)
		}
	}
	// The table starts over: its first snapshot again, earlier than the
	// forgotten checkpoint.
	write(restarted, first)
	if got := restored(t, ctx, restarted, orders.Table); got != first.Checkpoint {
		t.Fatalf("after starting over, orders restored %s, want %s", got, first.Checkpoint)
	}
	if got := restoredAs(t, ctx, restarted, "other-pipeline", orders.Table); got != wantOther {
		t.Fatalf("the other pipeline's orders restored %s, want %s", got, wantOther)
	}
}

func restoredAs(t *testing.T, ctx context.Context, s *ExactlyOnceSink, pipeline string, table cdc.TableInfo) cdc.Checkpoint {
	t.Helper()
	cp, ok, err := s.Restore(ctx, pipeline, table)
	if err != nil || !ok {
		t.Fatalf("Restore %s of %s: %v, %v", table.Name, pipeline, ok, err)
	}
	return cp
}

// With no broker to reach, Forget fails when its context ends.
func TestForgetUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := Config{
		Brokers: []string{addr}, Pipeline: "shop-cdc", Delivery: ExactlyOnce,
		Logger:     slog.New(slog.DiscardHandler),
		clientOpts: []kgo.Opt{kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })},
	}
	s := newSink(t, cfg).(*ExactlyOnceSink)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	got, err := s.Forget(ctx, "shop-cdc", nil)
	if err == nil || got != nil {
		t.Fatalf("Forget with no broker = %v, %v", got, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Forget took %s to fail", d)
	}
	t.Log(err)
}
