package cdc

import (
	"context"
	"sync"
	"time"
)

// ChangeNotifier is a Watched source that also calls a function when its
// catalog wakes it, so that its follower can wait for the wake-up without
// a goroutine of its own (see park). The function must not block; it is
// called with the catalog's locks held.
type ChangeNotifier interface {
	Watched
	NotifyChanges(func())
}

// parking is a follower's state while it waits without a goroutine: a
// wake-up (the catalog's, an on-demand snapshot's, the warm set's, the
// wait's next look, ctx ending) pokes it, and the first poke resumes the
// follower's loop on a new goroutine.
type parking struct {
	mu     sync.Mutex
	parked bool
	timer  *time.Timer
}

// parks reports whether the follower waits parked: its source calls back
// on the catalog's wake-ups and the catalog covers it. Any other wait
// (polling on its own, a retry's backoff) keeps its goroutine.
func (f *follower) parks() bool {
	return f.notified && f.iw.wake != nil && f.watched()
}

// park ends the follower's goroutine until the next poke; the resumed
// follower goes on with the wait (idling) where it was.
func (f *follower) park(ctx context.Context, d time.Duration) {
	pk := &f.pk
	pk.mu.Lock()
	pk.parked = true
	pk.timer = time.AfterFunc(max(d, 0), f.poke)
	pk.mu.Unlock()
	// ctx ending pokes every follower (Pipeline.Run), parked or not.
	// A wake-up that came before the follower parked poked nobody.
	if ctx.Err() != nil || len(f.iw.wake) > 0 || len(f.warm.cool) > 0 || len(f.p.requests.woken(f.spec.Name)) > 0 {
		f.poke()
	}
}

// poke resumes a parked follower, once.
func (f *follower) poke() {
	pk := &f.pk
	pk.mu.Lock()
	if !pk.parked {
		pk.mu.Unlock()
		return
	}
	pk.parked = false
	timer := pk.timer
	pk.timer = nil
	pk.mu.Unlock()
	timer.Stop()
	go f.resume()
}

// resume goes on with a parked follower's wait, then its loop.
func (f *follower) resume() {
	switch f.idling(f.ctx) {
	case waitStop:
		f.end(nil)
	case waitGo:
		f.loop()
	}
}
