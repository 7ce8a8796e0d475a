package health

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrThrottled marks a catalog that refused a call because it is called
// too often (HTTP 429, Glue's ThrottlingException, SQLITE_BUSY): not the
// table's fault, so it slows the whole schedule down instead of failing
// the table.
var ErrThrottled = errors.New("catalog throttled")

// Throttled marks err as a throttled catalog call; its text is err's.
func Throttled(err error) error {
	if err == nil {
		return nil
	}
	return &throttledError{err}
}

type throttledError struct{ err error }

func (e *throttledError) Error() string        { return e.err.Error() }
func (e *throttledError) Unwrap() error        { return e.err }
func (e *throttledError) Is(target error) bool { return target == ErrThrottled }

// IsThrottled reports whether err is a throttled catalog call.
func IsThrottled(err error) bool { return errors.Is(err, ErrThrottled) }

// throttleState is the backoff a throttling catalog imposes on every
// table of a Health (in cluster mode, on every pipeline of a member).
type throttleState struct {
	mu    sync.Mutex
	delay time.Duration // 0: not throttled
	last  time.Time     // the last throttled call
	since time.Time
	err   string
	n     int
}

// Throttle records a throttled catalog call: the schedule's delay doubles
// from floor up to ceil. The first one of a spell is logged.
func (h *Health) Throttle(err error, floor, ceil time.Duration) {
	t := &h.throttle
	now := h.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	t.err = err.Error()
	if t.delay == 0 {
		t.delay, t.since = floor, now
		h.log().Warn("catalog throttled; slowing every table's polls down", "delay", t.delay.String(), "err", err)
	} else if now.Sub(t.last) >= t.delay/2 {
		// Many tables meet one spell at once: the delay doubles per
		// spell, not per table.
		t.delay = min(2*t.delay, max(ceil, floor))
	}
	t.last = now
}

// ThrottleDelay is the least wait before a catalog call while the catalog
// throttles; 0 when it does not. A spell ends after twice its delay
// without a throttled call.
func (h *Health) ThrottleDelay() time.Duration {
	t := &h.throttle
	now := h.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.delay > 0 && now.Sub(t.last) > 2*t.delay {
		h.log().Info(fmt.Sprintf("catalog no longer throttled after %d throttled calls over %s", t.n, t.last.Sub(t.since).Round(time.Millisecond)))
		t.delay, t.n, t.err = 0, 0, ""
	}
	return t.delay
}

// throttleProblem is the /readyz line of a throttling catalog, "" when it
// does not.
func (h *Health) throttleProblem() string {
	if h.ThrottleDelay() == 0 {
		return ""
	}
	t := &h.throttle
	t.mu.Lock()
	defer t.mu.Unlock()
	return fmt.Sprintf("catalog: throttled since %s (%d calls refused), polls slowed to every %s: %s",
		t.since.UTC().Format(time.RFC3339), t.n, t.delay, t.err)
}

// Checked records that a table's metadata was checked now: by its own
// Refresh, or, when watched, by its catalog's bulk check (CatalogChecked).
func (h *Health) Checked(table string, watched bool) {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.table(table)
	f.checked, f.watched = now, watched
}

// CatalogChecked records a successful bulk check of the catalog, which
// checks every watched table at once.
func (h *Health) CatalogChecked() {
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.catalogChecked = now
}
