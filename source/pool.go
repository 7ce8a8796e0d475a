package source

import (
	"context"
	"sync"
	"sync/atomic"
)

// defaultIOConcurrency is Options.IOConcurrency when unset.
const defaultIOConcurrency = 16

// ioPool bounds the reads a Table has in flight (docs/contract.md, step 7). A commit is
// computed in flat phases — fetch every manifest, then every footer and
// vector, then every data file — and each phase fans out through each.
// Only the goroutine computing the commit starts tasks, and it holds no
// slot while it waits for one; a task holds one slot and never asks for
// another (tasks are leaf reads, they do not call each). So the slots in
// use never exceed the limit, and no task waits on a slot held by a task
// waiting on it: the pool cannot deadlock.
type ioPool struct {
	slots chan struct{}
}

func newIOPool(n int) *ioPool {
	if n <= 0 {
		n = defaultIOConcurrency
	}
	return &ioPool{slots: make(chan struct{}, n)}
}

// each runs task(i) for i in [0, n), at most the pool's limit at a time,
// and returns what a loop over i would: the error of the lowest i that
// failed. Tasks start in order of i and none starts after a failure, so
// every task below the first failure ran. A task's panic is raised again
// in the caller (where Commit turns it into an error), in the same order.
// The order of results is the caller's business: tasks write to their own
// index, never append to shared state.
func (p *ioPool) each(ctx context.Context, n int, task func(i int) error) error {
	if n == 0 {
		return nil
	}
	if cap(p.slots) == 1 || n == 1 {
		for i := 0; i < n; i++ {
			if err := p.one(ctx, i, task); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		wg     sync.WaitGroup
		failed atomic.Bool
		errs   = make([]error, n)
		panics = make([]any, n)
		ctxErr error
	)
launch:
	for i := 0; i < n && !failed.Load(); i++ {
		select {
		case p.slots <- struct{}{}:
		case <-ctx.Done():
			ctxErr = ctx.Err()
			break launch
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-p.slots }()
			defer func() {
				if v := recover(); v != nil {
					panics[i] = v
					failed.Store(true)
				}
			}()
			if err := task(i); err != nil {
				errs[i] = err
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			return errs[i]
		}
		if panics[i] != nil {
			panic(panics[i])
		}
	}
	return ctxErr
}

// one runs task(i) in the caller's goroutine, holding a slot.
func (p *ioPool) one(ctx context.Context, i int, task func(int) error) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-p.slots }()
	return task(i)
}
