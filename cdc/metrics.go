package cdc

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pipeline's Prometheus series. Everything that repeats
// is a metric, not a log line.
type Metrics struct {
	Events          *prometheus.CounterVec   // events published, by table and op
	Anomalies       *prometheus.CounterVec   // lineage anomalies, by table and kind
	SnapshotsBehind *prometheus.GaugeVec     // snapshots on the branch not yet delivered
	SecondsBehind   *prometheus.GaugeVec     // age of the oldest commit not yet delivered
	CheckpointSeq   *prometheus.GaugeVec     // sequence number of the table's checkpoint
	SinkErrors      *prometheus.CounterVec   // failed sink writes, by table and class
	Retries         *prometheus.CounterVec   // pipeline retries after a transient error
	SinkRetries     *prometheus.CounterVec   // retried sink requests, by sink and reason (webhook: HTTP status)
	TableUp         *prometheus.GaugeVec     // 1 while a table is followed, 0 once stopped by an error
	PollDuration    *prometheus.HistogramVec // metadata refresh and snapshot listing
	CommitDuration  *prometheus.HistogramVec // computing and delivering one snapshot
	DeliveryLatency *prometheus.HistogramVec // from commit time to sink confirmation
	Resyncs         *prometheus.CounterVec   // re-reads of the head after lost history (on_history_loss: resync)
	HoldAge         *prometheus.GaugeVec     // age of the oldest snapshot the retention hold keeps
	Snapshots       *prometheus.CounterVec   // on-demand snapshots started
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	t := []string{"table"}
	m := &Metrics{
		Events:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_events_published_total", Help: "Events confirmed by the sink."}, []string{"table", "op"}),
		Anomalies:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_lineage_anomalies_total", Help: "Rows breaking the lineage rules (no event emitted)."}, []string{"table", "kind"}),
		SnapshotsBehind: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icecdc_snapshots_behind", Help: "Snapshots on the branch not yet delivered."}, t),
		SecondsBehind:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icecdc_seconds_behind", Help: "Seconds since the oldest undelivered commit (0 when caught up)."}, t),
		CheckpointSeq:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icecdc_checkpoint_sequence_number", Help: "Sequence number of the table's checkpoint."}, t),
		SinkErrors:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_sink_errors_total", Help: "Failed sink writes."}, []string{"table", "class"}),
		Retries:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_retries_total", Help: "Retries after transient errors."}, t),
		SinkRetries:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_sink_retries_total", Help: "Sink requests retried inside the sink (webhook: by HTTP status, 0 for network errors)."}, []string{"sink", "reason"}),
		TableUp:         prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icecdc_table_up", Help: "1 while the table is followed, 0 once it stopped on an error."}, t),
		PollDuration:    prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "icecdc_poll_duration_seconds", Help: "Metadata refresh and snapshot listing.", Buckets: prometheus.DefBuckets}, t),
		CommitDuration:  prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "icecdc_commit_duration_seconds", Help: "Computing and delivering one snapshot.", Buckets: prometheus.DefBuckets}, t),
		DeliveryLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "icecdc_delivery_latency_seconds", Help: "From commit time to sink confirmation.", Buckets: []float64{.1, .25, .5, .75, 1, 1.25, 1.5, 2, 3, 5, 10, 30, 60}}, t),
		Resyncs:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_resyncs_total", Help: "Re-reads of the head after the table's history from the checkpoint was lost (on_history_loss: resync)."}, t),
		HoldAge:         prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icecdc_hold_age_seconds", Help: "Age of the oldest snapshot the table's retention hold keeps from expiry (hold: true)."}, t),
		Snapshots:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_snapshots_total", Help: "On-demand snapshots (icecdc snapshot) started."}, t),
	}
	if reg != nil {
		reg.MustRegister(m.Events, m.Anomalies, m.SnapshotsBehind, m.SecondsBehind, m.CheckpointSeq,
			m.SinkErrors, m.Retries, m.SinkRetries, m.TableUp, m.PollDuration, m.CommitDuration, m.DeliveryLatency,
			m.Resyncs, m.HoldAge, m.Snapshots)
	}
	return m
}
