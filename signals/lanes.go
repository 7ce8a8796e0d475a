package signals

import "sync"

// lanes run each table's signal work in the order it was read, one
// piece at a time, and different tables' work side by side: a signal
// for a table waits for the table's earlier ones, never for another
// table's. A lane has a goroutine only while it has work, so 10,000
// quiet tables cost none.
type lanes struct {
	mu      sync.Mutex
	byTable map[string]*lane
	wg      sync.WaitGroup
}

type lane struct {
	queue []*laneWork
}

// laneWork is one signal's work on one table.
type laneWork struct {
	// queue, when set, is called with the lanes' lock held before run:
	// a request queued there is queued before a later stop is applied.
	queue func()
	run   func()
	// drop is called instead of run when a stop dropped the work.
	drop func()
}

// add queues w on table's lane.
func (l *lanes) add(table string, w *laneWork) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byTable == nil {
		l.byTable = map[string]*lane{}
	}
	ln := l.byTable[table]
	if ln != nil {
		ln.queue = append(ln.queue, w)
		return
	}
	ln = &lane{queue: []*laneWork{w}}
	l.byTable[table] = ln
	l.wg.Add(1)
	go l.drain(table, ln)
}

func (l *lanes) drain(table string, ln *lane) {
	defer l.wg.Done()
	for {
		l.mu.Lock()
		if len(ln.queue) == 0 {
			delete(l.byTable, table)
			l.mu.Unlock()
			return
		}
		w := ln.queue[0]
		ln.queue[0] = nil
		ln.queue = ln.queue[1:]
		if w.queue != nil {
			w.queue()
		}
		l.mu.Unlock()
		w.run()
	}
}

// remove removes the work queued on table's lane (executes not handed
// to the table yet) and returns it: a stop-snapshot read after them ends
// them before they start, and the caller calls their drop.
func (l *lanes) remove(table string) []*laneWork {
	l.mu.Lock()
	defer l.mu.Unlock()
	var removed []*laneWork
	if ln := l.byTable[table]; ln != nil {
		removed, ln.queue = ln.queue, nil
	}
	return removed
}

// wait returns once every lane is drained.
func (l *lanes) wait() { l.wg.Wait() }
