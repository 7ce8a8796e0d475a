// Package catalogwatch runs a catalog's change checks (WatchCatalog): one
// check, in a call or a few, of every watched table of the catalog, on a
// grid of the poll interval, waking the followers of the tables whose
// metadata location changed (cdc.Watched).
package catalogwatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/health"
)

// ChangeChecker checks, in one call or a few, every watched table of a
// catalog and wakes those whose metadata location changed.
type ChangeChecker interface {
	CheckChanges(ctx context.Context) error
}

// CheckFailer is a ChangeChecker told when a check failed (not
// throttled): its tables are then no longer covered, so that they poll on
// their own until a check succeeds again.
type CheckFailer interface {
	CheckFailed()
}

// WatchCatalog runs c's checks every interval, slowed down while the
// catalog throttles, until ctx ends. A failed check is logged (its first
// failure at WARN, then at DEBUG until one succeeds) and uncovers the
// tables it watches (CheckFailer): they are polled at their max interval
// meanwhile.
func WatchCatalog(ctx context.Context, c ChangeChecker, interval, maxInterval time.Duration, h *health.Health, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	failing := false
	// The checks start on a grid of interval, not interval after the last
	// check ended: a change waits for its check half an interval on
	// average, whatever a check takes. A check that took longer than
	// interval is followed by a whole one.
	next := time.Now()
	for {
		iv := max(interval, h.ThrottleDelay())
		next = next.Add(iv)
		wait := time.Until(next)
		if wait <= 0 {
			next, wait = time.Now().Add(iv), iv
		}
		if !cdc.Sleep(ctx, wait) {
			return
		}
		err := c.CheckChanges(ctx)
		if cf, ok := c.(CheckFailer); ok && err != nil && !health.IsThrottled(err) && ctx.Err() == nil {
			cf.CheckFailed()
		}
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			h.CatalogChecked()
			if failing {
				log.Info("catalog change check recovered")
			}
			failing = false
		case health.IsThrottled(err):
			h.Throttle(err, interval, maxInterval)
		case !failing:
			failing = true
			log.Warn("catalog change check failing; its tables are polled at poll.max_interval meanwhile", "err", err)
		default:
			log.Debug("catalog change check failing", "err", err)
		}
	}
}
