// Package metrics is the pipeline's Prometheus instrumentation (Metrics):
// the families it observes per table, with their table label or summed
// over the pipeline's tables as the set chosen says (metrics.per_table),
// and the light series behind them (a float each, its label pairs made
// when a scrape asks), which keep a daemon following thousands of tables
// small.
package metrics
