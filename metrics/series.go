package metrics

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// seriesVec is a family of gauges or counters whose series are a float
// each (seriesValue), kept by client_golang's MetricVec. Its own gauges
// and counters keep, per series, their label pairs as protobuf messages
// and a self-collector: 10,000 tables' four series were 16 MiB of the
// heap of a daemon that had nothing to do. A seriesValue makes its label
// pairs when a scrape asks for them.
type seriesVec struct {
	*prometheus.MetricVec
}

func newSeriesVec(name, help string, vt prometheus.ValueType, labels []string) *seriesVec {
	desc := prometheus.NewDesc(name, help, labels, nil)
	return &seriesVec{prometheus.NewMetricVec(desc, func(lvs ...string) prometheus.Metric {
		return &seriesValue{desc: desc, vt: vt, lvs: lvs}
	})}
}

// WithLabelValues is the series of lvs, made if it is new. Label values
// client_golang refuses (not UTF-8) get a series that is not served,
// where its own vecs would panic.
func (v *seriesVec) WithLabelValues(lvs ...string) *seriesValue {
	m, err := v.GetMetricWithLabelValues(lvs...)
	if err != nil {
		return &seriesValue{}
	}
	return m.(*seriesValue)
}

// seriesValue is one series of a seriesVec: a prometheus.Gauge and a
// prometheus.Counter.
type seriesValue struct {
	bits atomic.Uint64 // math.Float64bits of the value
	desc *prometheus.Desc
	vt   prometheus.ValueType
	lvs  []string // the MetricVec's own copy
}

func (s *seriesValue) value() float64 { return math.Float64frombits(s.bits.Load()) }

func (s *seriesValue) Set(v float64) { s.bits.Store(math.Float64bits(v)) }

func (s *seriesValue) Add(v float64) {
	for {
		old := s.bits.Load()
		if s.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (s *seriesValue) Inc()              { s.Add(1) }
func (s *seriesValue) Dec()              { s.Add(-1) }
func (s *seriesValue) Sub(v float64)     { s.Add(-v) }
func (s *seriesValue) SetToCurrentTime() { s.Set(float64(time.Now().UnixNano()) / 1e9) }

func (s *seriesValue) Desc() *prometheus.Desc { return s.desc }

func (s *seriesValue) Write(m *dto.Metric) error {
	c, err := prometheus.NewConstMetric(s.desc, s.vt, s.value(), s.lvs...)
	if err != nil {
		return err
	}
	return c.Write(m)
}

func (s *seriesValue) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }
func (s *seriesValue) Collect(ch chan<- prometheus.Metric) { ch <- s }
