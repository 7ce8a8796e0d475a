package source

import (
	"context"
	"io"
	"sync"

	iceio "github.com/apache/iceberg-go/io"
)

// A streamed commit scans its files one after the other, in the order
// docs/contract.md fixes for its events, and a scan that needs the file's bytes
// costs a round trip. When the footers are already known (a table followed
// commit after commit keeps them) nothing else fetches the files first, so
// a MERGE over 200 files would wait 200 round trips in a row. readAhead
// fetches the files such a loop will scan, whole (those no larger than
// wholeRead, which a scan reads whole anyway), io.concurrency at a time
// (slots of the table's IO pool) and at most aheadBudget bytes ahead of
// the loop, into the footer cache, where the scan finds them (footerIO).
// A fetch that fails is forgotten: the scan reads the file itself and
// meets the error where the file is.
const aheadBudget = defaultWholeBudget / 2

type readAhead struct {
	done   []chan struct{}
	sizes  []int64
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	cond  *sync.Cond
	next  int   // the index the loop scans next
	ahead int64 // bytes fetched or in flight at or past next
}

// readAhead starts fetching files for a loop that scans them in order. The
// loop calls wait(i) before it scans files[i], and stop when it ends.
func (t *fileReader) readAhead(ctx context.Context, fs iceio.IO, files []dataFileMeta) *readAhead {
	ctx, cancel := context.WithCancel(ctx)
	ra := &readAhead{done: make([]chan struct{}, len(files)), sizes: make([]int64, len(files)), cancel: cancel}
	ra.cond = sync.NewCond(&ra.mu)
	for i := range ra.done {
		ra.done[i] = make(chan struct{})
	}
	fio, ok := fs.(*footerIO)
	if !ok || cap(t.pool.slots) == 1 || len(files) < 2 {
		for _, d := range ra.done {
			close(d)
		}
		return ra
	}
	ra.wg.Add(1)
	go func() {
		defer ra.wg.Done()
		var fetches sync.WaitGroup
		defer fetches.Wait()
		for i, m := range files {
			size := m.file.FileSizeBytes()
			if size <= 0 || size > wholeRead || fio.cache.holdsWhole(m.path(), size) {
				close(ra.done[i])
				continue
			}
			ra.mu.Lock()
			for i > ra.next && ra.ahead+size > aheadBudget && ctx.Err() == nil {
				ra.cond.Wait()
			}
			ra.ahead += size
			ra.sizes[i] = size
			ra.mu.Unlock()
			select {
			case t.pool.slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				for _, d := range ra.done[i:] {
					close(d)
				}
				return
			}
			fetches.Add(1)
			go func() {
				defer fetches.Done()
				defer close(ra.done[i])
				defer func() { <-t.pool.slots }()
				defer func() { _ = recover() }() // the scan meets the file's error itself
				fetchWhole(fio, m.path(), size)
			}()
		}
	}()
	return ra
}

// fetchWhole reads the file of size bytes whole into the footer cache.
func fetchWhole(fio *footerIO, name string, size int64) {
	f, err := fio.inner.Open(name)
	if err != nil {
		return
	}
	defer f.Close()
	buf := make([]byte, size)
	if _, err := io.ReadFull(f, buf); err != nil {
		return
	}
	fio.cache.put(name, &footer{size: size, data: buf})
}

// wait returns once files[i] is fetched (or will not be), and lets the
// fetches move past the files before it. The fetches may always start the
// file the loop waits for, so a wait never waits on a fetch the budget
// holds back.
func (ra *readAhead) wait(ctx context.Context, i int) {
	if i >= len(ra.done) {
		return
	}
	ra.mu.Lock()
	for ; ra.next < i; ra.next++ {
		ra.ahead -= ra.sizes[ra.next]
	}
	ra.mu.Unlock()
	ra.cond.Broadcast()
	select {
	case <-ra.done[i]:
	case <-ctx.Done():
	}
}

// stop ends the fetches and waits for those in flight.
func (ra *readAhead) stop() {
	ra.cancel()
	ra.mu.Lock()
	ra.next = len(ra.done)
	ra.mu.Unlock()
	ra.cond.Broadcast()
	ra.wg.Wait()
}
