package source

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolBoundAndOrder: no more tasks run at once than the limit, even
// when two fan-outs share the pool, and the error is the one a loop would
// return: the lowest index that failed, not the first to finish.
func TestPoolBoundAndOrder(t *testing.T) {
	p := newIOPool(3)
	var running, peak atomic.Int64
	task := func(fail map[int]time.Duration) func(int) error {
		return func(i int) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			if d, ok := fail[i]; ok {
				time.Sleep(d)
				return fmt.Errorf("task %d", i)
			}
			time.Sleep(time.Millisecond)
			return nil
		}
	}
	done := make(chan error, 2)
	go func() { done <- p.each(context.Background(), 40, task(nil)) }()
	go func() { done <- p.each(context.Background(), 40, task(nil)) }()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got := peak.Load(); got > 3 || got < 2 {
		t.Fatalf("peak %d tasks at once, want 2..3 with a limit of 3", got)
	}
	// Task 2 fails late, task 4 early: a loop would have stopped at 2.
	err := p.each(context.Background(), 10, task(map[int]time.Duration{2: 30 * time.Millisecond, 4: 0}))
	if err == nil || err.Error() != "task 2" {
		t.Fatalf("error %v, want task 2's", err)
	}
	// One slot: a plain loop in the caller.
	seq := newIOPool(1)
	var order []int
	_ = seq.each(context.Background(), 5, func(i int) error { order = append(order, i); return nil })
	if fmt.Sprint(order) != "[0 1 2 3 4]" {
		t.Fatalf("order %v", order)
	}
}

// TestPoolPanicAndCancel: a task's panic is raised in the caller, and a
// cancelled context stops the launching.
func TestPoolPanicAndCancel(t *testing.T) {
	p := newIOPool(4)
	func() {
		defer func() {
			if v := recover(); v != "boom 1" {
				t.Fatalf("recovered %v, want boom 1", v)
			}
		}()
		_ = p.each(context.Background(), 8, func(i int) error {
			if i == 1 || i == 3 {
				panic(fmt.Sprint("boom ", i))
			}
			return nil
		})
		t.Fatal("no panic")
	}()
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int64
	err := p.each(ctx, 1000, func(i int) error {
		if started.Add(1) == 2 {
			cancel()
		}
		time.Sleep(time.Millisecond)
		return nil
	})
	if !errors.Is(err, context.Canceled) || started.Load() > 100 {
		t.Fatalf("error %v after %d tasks, want context.Canceled soon", err, started.Load())
	}
	if len(p.slots) != 0 {
		t.Fatalf("%d slots still held", len(p.slots))
	}
}
