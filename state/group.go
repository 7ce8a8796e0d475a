package state

import (
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// maxGroup is the most saves one transaction takes (bbolt's
// DefaultMaxBatchSize).
const maxGroup = 1000

// group commits the saves that arrive together in one fsynced
// transaction: a save that finds no transaction being committed commits
// at once, alone; the saves that arrive while one is being committed wait
// for it and then share the next. So a lone table's checkpoint costs one
// transaction and no wait (bbolt's DB.Batch waits MaxBatchDelay for
// company first: with 2 ms, a table delivering 500 batches a second
// spent most of its time waiting), while thousands of tables saving at
// once still share a few transactions.
type group struct {
	mu      sync.Mutex
	queue   []*groupCall
	running bool // a leader is committing the queue
}

type groupCall struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// errAlone marks the call whose failure aborted a group's transaction: it
// runs again in a transaction of its own, as the others do without it.
var errAlone = errors.New("state: a save of the group failed")

// run runs fn in a writable transaction shared with the saves waiting at
// the same time, and returns once that transaction is durable (or failed).
// fn may run more than once, each time in a transaction of its own.
func (g *group) run(db *bolt.DB, fn func(*bolt.Tx) error) error {
	c := &groupCall{fn: fn, done: make(chan error, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, c)
	if g.running {
		g.mu.Unlock()
		return <-c.done
	}
	g.running = true
	g.mu.Unlock()
	g.lead(db)
	return <-c.done
}

// lead commits the queue, a group at a time, until it is empty.
func (g *group) lead(db *bolt.DB) {
	for {
		g.mu.Lock()
		if len(g.queue) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		n := min(len(g.queue), maxGroup)
		calls := g.queue[:n:n]
		g.queue = g.queue[n:]
		if len(g.queue) == 0 {
			g.queue = nil
		}
		g.mu.Unlock()
		commit(db, calls)
	}
}

// commit runs calls in one transaction. When one fails, the transaction
// is rolled back, that call runs again alone (its error is its own) and
// the others again together.
func commit(db *bolt.DB, calls []*groupCall) {
	for len(calls) > 0 {
		failed := -1
		var ferr error
		err := db.Update(func(tx *bolt.Tx) error {
			for i, c := range calls {
				if ferr = safely(c.fn, tx); ferr != nil {
					failed = i
					return errAlone
				}
			}
			return nil
		})
		if failed < 0 {
			for _, c := range calls {
				c.done <- err
			}
			return
		}
		c := calls[failed]
		if len(calls) == 1 {
			c.done <- ferr // it ran alone: the error is its own
			return
		}
		c.done <- db.Update(func(tx *bolt.Tx) error { return safely(c.fn, tx) })
		calls = append(calls[:failed:failed], calls[failed+1:]...)
	}
}

// safely runs fn, turning a panic into an error, so that one save's bug
// cannot leave the others of its group waiting forever.
func safely(fn func(*bolt.Tx) error, tx *bolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("state: panic in a save: %v", p)
		}
	}()
	return fn(tx)
}
