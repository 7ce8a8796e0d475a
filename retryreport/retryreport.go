// Package retryreport carries, in a sink's Write context, the report of
// the failed attempts the sink retries by itself (WithRetryReport): the
// pipeline passes it, so that an ongoing failure that Write does not
// return is seen.
package retryreport

import "context"

type retryReportKey struct{}

// WithRetryReport returns a context under which a sink reports the failed
// attempts it retries by itself (a webhook's backoff, a Kafka client's
// reconnects): Write does not return them, and without a report an
// ongoing failure would be invisible. The pipeline passes such a context
// to Sink.Write, as httptrace passes its hooks.
func WithRetryReport(ctx context.Context, report func(error)) context.Context {
	return context.WithValue(ctx, retryReportKey{}, report)
}

// RetryReport returns the report function of ctx, or nil. A sink that
// sees failures outside the Write call (in a client's connection hooks)
// keeps it while the Write is in progress.
func RetryReport(ctx context.Context) func(error) {
	f, _ := ctx.Value(retryReportKey{}).(func(error))
	return f
}

// ReportRetry reports a failed attempt that the sink retries, if ctx
// asks for reports.
func ReportRetry(ctx context.Context, err error) {
	if f := RetryReport(ctx); f != nil {
		f(err)
	}
}
