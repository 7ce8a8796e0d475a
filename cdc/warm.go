package cdc

import (
	"container/list"
	"sync"
)

// warmSet bounds the tables whose sources keep what their last reads
// left (caches, file indexes, loaded metadata: see Idler) to the
// Pipeline.Warm that changed most recently. A table that changes enters
// it; the one that changed longest ago then leaves it and is told to idle
// at once, rather than after IdleAfter: when thousands of tables deliver
// a backlog each (a daemon's first start on a whole catalog), the memory
// they keep follows the bound, not the tables, and a table that changes
// often stays warm.
type warmSet struct {
	mu   sync.Mutex
	list list.List // of *follower, the most recent change first
}

// warmEntry is a follower's place in the set.
type warmEntry struct {
	elem *list.Element
	// cool receives a value when the table left the set; cooled says,
	// under warmSet.mu, that it has not entered it again since.
	cool   chan struct{}
	cooled bool
}

// touch records that f changed: f is the most recent, and the table that
// changed longest ago leaves the set if it is full.
func (w *warmSet) touch(f *follower) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := &f.warm
	e.cooled = false
	if e.elem != nil {
		w.list.MoveToFront(e.elem)
	} else {
		e.elem = w.list.PushFront(f)
	}
	for w.list.Len() > f.p.Warm {
		back := w.list.Back()
		g := w.list.Remove(back).(*follower)
		g.warm.elem, g.warm.cooled = nil, true
		select {
		case g.warm.cool <- struct{}{}:
		default:
		}
		if g.notified {
			g.poke()
		}
	}
}

// leave takes f out of the set (its table stopped).
func (w *warmSet) leave(f *follower) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if f.warm.elem != nil {
		w.list.Remove(f.warm.elem)
		f.warm.elem = nil
	}
}

// cooled reports whether f left the set and did not enter it again, and
// clears it: its follower then idles the table.
func (w *warmSet) cooled(f *follower) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := f.warm.cooled
	f.warm.cooled = false
	return c
}
