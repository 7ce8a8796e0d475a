package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pipeline's Prometheus series. Everything that repeats
// is a metric, not a log line.
//
// A family observed per table keeps its table label only where the set
// chosen says so: the essential set (NewMetrics, the default) keeps per
// table the series a user alerts on (lag, events, retries, up, the
// hold's age) and sums the rest over the pipeline's tables, so that a
// daemon following thousands of tables does not serve dozens of series
// for each; the full set (NewFullMetrics) keeps every family per table.
type Metrics struct {
	Events          *CounterVec            // events published, by table and op
	Anomalies       *CounterVec            // lineage anomalies, by table and kind
	SnapshotsBehind *GaugeVec              // snapshots on the branch not yet delivered
	SecondsBehind   *GaugeVec              // age of the oldest commit not yet delivered
	CheckpointSeq   *GaugeVec              // sequence number of the table's checkpoint (full set only)
	SinkErrors      *CounterVec            // failed sink writes, by table and class
	Retries         *CounterVec            // pipeline retries after a transient error
	SinkRetries     *prometheus.CounterVec // retried sink requests or items, by sink and reason (HTTP status)
	TableUp         *GaugeVec              // 1 while a table is followed, 0 once stopped by an error
	PollDuration    *HistogramVec          // metadata refresh and snapshot listing
	CommitDuration  *HistogramVec          // computing and delivering one snapshot
	DeliveryLatency *HistogramVec          // from commit time to sink confirmation
	Resyncs         *CounterVec            // re-reads of the head after lost history (on_history_loss: resync)
	HoldAge         *GaugeVec              // age of the oldest snapshot the retention hold keeps
	Snapshots       *CounterVec            // on-demand snapshots started
	SnapshotPaused  *GaugeVec              // 1 while the table's on-demand snapshot is paused
}

// The sets of per-table series (configuration metrics.per_table).
const (
	PerTableEssential = "essential"
	PerTableFull      = "full"
)

// NewMetrics creates the essential set of series and registers them with
// reg (nil: not registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics { return newMetrics(reg, false) }

// NewFullMetrics is NewMetrics with every family per table.
func NewFullMetrics(reg prometheus.Registerer) *Metrics { return newMetrics(reg, true) }

// NewMetricsPerTable is NewMetrics or NewFullMetrics, as set names it
// (PerTableEssential or PerTableFull).
func NewMetricsPerTable(reg prometheus.Registerer, set string) *Metrics {
	return newMetrics(reg, set == PerTableFull)
}

func newMetrics(reg prometheus.Registerer, full bool) *Metrics {
	// Whether a family is one a user alerts on per table, and so keeps
	// its table label in either set.
	const alerted, summed = true, false
	counter := func(perTable bool, o prometheus.CounterOpts, labels ...string) *CounterVec {
		v := &CounterVec{table: perTable || full}
		v.vec = newSeriesVec(o.Name, o.Help, prometheus.CounterValue, withTable(v.table, labels))
		return v
	}
	gauge := func(perTable bool, o prometheus.GaugeOpts) *GaugeVec {
		return &GaugeVec{vec: newSeriesVec(o.Name, o.Help, prometheus.GaugeValue, []string{"table"}), table: perTable || full}
	}
	histogram := func(o prometheus.HistogramOpts) *HistogramVec {
		v := &HistogramVec{table: full}
		v.vec = prometheus.NewHistogramVec(o, withTable(v.table, nil))
		return v
	}
	m := &Metrics{
		Events:          counter(alerted, prometheus.CounterOpts{Name: "icecdc_events_published_total", Help: "Events confirmed by the sink."}, "op"),
		Anomalies:       counter(summed, prometheus.CounterOpts{Name: "icecdc_lineage_anomalies_total", Help: "Rows breaking the lineage rules (no event emitted), and commits whose deletes and inserts were too many to pair by key (kind not-paired-by-key)."}, "kind"),
		SnapshotsBehind: gauge(alerted, prometheus.GaugeOpts{Name: "icecdc_snapshots_behind", Help: "Snapshots on the branch not yet delivered."}),
		SecondsBehind:   gauge(alerted, prometheus.GaugeOpts{Name: "icecdc_seconds_behind", Help: "Seconds since the oldest undelivered commit (0 when caught up)."}),
		CheckpointSeq:   gauge(summed, prometheus.GaugeOpts{Name: "icecdc_checkpoint_sequence_number", Help: "Sequence number of the table's checkpoint."}),
		SinkErrors:      counter(summed, prometheus.CounterOpts{Name: "icecdc_sink_errors_total", Help: "Failed sink writes."}, "class"),
		Retries:         counter(alerted, prometheus.CounterOpts{Name: "icecdc_retries_total", Help: "Retries after transient errors."}),
		SinkRetries:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_sink_retries_total", Help: "Sink requests (webhook) and bulk items (opensearch) retried inside the sink, by HTTP status (0 for network errors)."}, []string{"sink", "reason"}),
		TableUp:         gauge(alerted, prometheus.GaugeOpts{Name: "icecdc_table_up", Help: "1 while the table is followed, 0 once it stopped on an error."}),
		PollDuration:    histogram(prometheus.HistogramOpts{Name: "icecdc_poll_duration_seconds", Help: "Metadata refresh and snapshot listing.", Buckets: prometheus.DefBuckets}),
		CommitDuration:  histogram(prometheus.HistogramOpts{Name: "icecdc_commit_duration_seconds", Help: "Computing and delivering one snapshot.", Buckets: prometheus.DefBuckets}),
		DeliveryLatency: histogram(prometheus.HistogramOpts{Name: "icecdc_delivery_latency_seconds", Help: "From commit time to sink confirmation.", Buckets: []float64{.1, .25, .5, .75, 1, 1.25, 1.5, 2, 3, 5, 10, 30, 60}}),
		Resyncs:         counter(summed, prometheus.CounterOpts{Name: "icecdc_resyncs_total", Help: "Re-reads of the head after the table's history from the checkpoint was lost (on_history_loss: resync)."}),
		HoldAge:         gauge(alerted, prometheus.GaugeOpts{Name: "icecdc_hold_age_seconds", Help: "Age of the oldest snapshot the table's retention hold keeps from expiry (hold: true)."}),
		Snapshots:       counter(summed, prometheus.CounterOpts{Name: "icecdc_snapshots_total", Help: "On-demand snapshots (icecdc snapshot) started."}),
		SnapshotPaused:  gauge(alerted, prometheus.GaugeOpts{Name: "icecdc_snapshot_paused", Help: "1 while the table's on-demand snapshot is paused (pause-snapshot): its stream waits; 0 once resumed or stopped."}),
	}
	if reg != nil {
		reg.MustRegister(m.Events.vec, m.Anomalies.vec, m.SnapshotsBehind.vec, m.SecondsBehind.vec,
			m.SinkErrors.vec, m.Retries.vec, m.SinkRetries, m.TableUp.vec, m.PollDuration.vec, m.CommitDuration.vec, m.DeliveryLatency.vec,
			m.Resyncs.vec, m.HoldAge.vec, m.Snapshots.vec, m.SnapshotPaused.vec)
		if m.CheckpointSeq.table {
			reg.MustRegister(m.CheckpointSeq.vec)
		}
	}
	return m
}

// Forget drops every series of table: a cluster member calls it once it
// gave the table up, so that it serves series for the tables it owns
// only, not for every table that ever passed through it.
func (m *Metrics) Forget(table string) {
	l := prometheus.Labels{"table": table}
	for _, v := range []interface{ forget(prometheus.Labels) }{m.Events, m.Anomalies, m.SnapshotsBehind, m.SecondsBehind,
		m.CheckpointSeq, m.SinkErrors, m.Retries, m.TableUp, m.PollDuration, m.CommitDuration, m.DeliveryLatency,
		m.Resyncs, m.HoldAge, m.Snapshots, m.SnapshotPaused} {
		v.forget(l)
	}
}

func withTable(table bool, labels []string) []string {
	if table {
		return append([]string{"table"}, labels...)
	}
	return labels
}

// CounterVec is a counter family observed per table: with its table
// label, or summed over the pipeline's tables.
type CounterVec struct {
	vec   *seriesVec
	table bool
}

// WithLabelValues returns the table's counter of the other labels'
// values (the pipeline's, when the family is summed).
func (v *CounterVec) WithLabelValues(table string, lvs ...string) prometheus.Counter {
	if v.table {
		return v.vec.WithLabelValues(append([]string{table}, lvs...)...)
	}
	return v.vec.WithLabelValues(lvs...)
}

func (v *CounterVec) forget(l prometheus.Labels) {
	if v.table {
		v.vec.DeletePartialMatch(l)
	}
}

// HistogramVec is a histogram family observed per table: with its table
// label, or one histogram of the pipeline's tables.
type HistogramVec struct {
	vec   *prometheus.HistogramVec
	table bool
}

// WithLabelValues returns the table's histogram (the pipeline's, when
// the family is not per table).
func (v *HistogramVec) WithLabelValues(table string) prometheus.Observer {
	if v.table {
		return v.vec.WithLabelValues(table)
	}
	return v.vec.WithLabelValues()
}

func (v *HistogramVec) forget(l prometheus.Labels) {
	if v.table {
		v.vec.DeletePartialMatch(l)
	}
}

// GaugeVec is a gauge family per table. A gauge of one table has no sum
// over tables, so a family outside the set is not served at all.
type GaugeVec struct {
	vec   *seriesVec
	table bool
}

// WithLabelValues returns the table's gauge; outside the set, one that
// no registry collects.
func (v *GaugeVec) WithLabelValues(table string) prometheus.Gauge {
	if v.table {
		return v.vec.WithLabelValues(table)
	}
	return unserved
}

func (v *GaugeVec) forget(l prometheus.Labels) {
	if v.table {
		v.vec.DeletePartialMatch(l)
	}
}

// unserved is what the gauges outside the set set; no registry collects it.
var unserved = prometheus.NewGauge(prometheus.GaugeOpts{Name: "icecdc_unserved"})
