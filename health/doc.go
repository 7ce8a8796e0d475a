// Package health follows each table's ongoing fault for the pipeline
// (Health): the first error of a fault is logged at WARN, then at most one
// line per interval sums it up while it lasts, and one INFO line says when
// it ended. The daemon's /readyz and /status read it, with each table's lag
// and when its metadata was last checked.
//
// A catalog that throttles (ErrThrottled, marked by Throttled) is not a
// table's fault: Health keeps one backoff for every table it follows, which
// the pipeline's polls wait out.
package health
