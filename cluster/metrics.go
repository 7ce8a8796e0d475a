package cluster

import "github.com/prometheus/client_golang/prometheus"

// Metrics are cluster mode's Prometheus series.
type Metrics struct {
	Owned      *prometheus.GaugeVec   // 1 while this member follows the table
	Tables     prometheus.Gauge       // tables this member follows
	Generation prometheus.Gauge       // the group generation this member is in
	Rebalances *prometheus.CounterVec // rebalance callbacks, by kind: assigned, revoked, lost
	Moves      *prometheus.CounterVec // tables taken or given up, by direction: acquired, released, lost
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Owned:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "icecdc_cluster_table_owned", Help: "1 while this member follows the table, 0 after it gave it up."}, []string{"table"}),
		Tables:     prometheus.NewGauge(prometheus.GaugeOpts{Name: "icecdc_cluster_tables_owned", Help: "Tables this member follows."}),
		Generation: prometheus.NewGauge(prometheus.GaugeOpts{Name: "icecdc_cluster_generation", Help: "The consumer group generation this member is in."}),
		Rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_cluster_rebalances_total", Help: "Rebalance callbacks, by kind (assigned, revoked, lost)."}, []string{"kind"}),
		Moves:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "icecdc_cluster_table_moves_total", Help: "Tables taken over or given up, by direction (acquired, released, lost)."}, []string{"direction"}),
	}
	if reg != nil {
		reg.MustRegister(m.Owned, m.Tables, m.Generation, m.Rebalances, m.Moves)
	}
	return m
}
