package scenario

import (
	"runtime"
	"sync"
	"time"
)

// HeapPeak samples the live heap every millisecond, after a GC, until
// stop is called; stop returns the highest sample above the heap at the
// start (peak), and the highest sample itself (top). For benchmarks'
// peak-heap metrics.
func HeapPeak() (stop func() (peak, top uint64)) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	var high uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			high = max(high, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		wg.Wait()
		if high < base {
			return 0, high
		}
		return high - base, high
	}
}
