package cdc

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// seriesVec is a family of gauges or counters kept as one float per label
// values, which a scrape turns into constant metrics. A client_golang vec
// keeps, per series, its label pairs as protobuf messages, its values and
// a self-collector: 10,000 tables' four series were 16 MiB of the heap of
// a daemon that had nothing to do. Here a series is its value and its
// label values (the table's name is the follower's own string).
type seriesVec struct {
	desc *prometheus.Desc
	vt   prometheus.ValueType
	mu   sync.RWMutex
	m    map[string]*seriesValue // by label values, joined by labelSep
}

// labelSep joins label values into a key: Prometheus label values are
// UTF-8, so 0xff is in none.
const labelSep = "\xff"

func newSeriesVec(name, help string, vt prometheus.ValueType, labels []string) *seriesVec {
	return &seriesVec{desc: prometheus.NewDesc(name, help, labels, nil), vt: vt, m: map[string]*seriesValue{}}
}

// WithLabelValues is the series of lvs, made if it is new.
func (v *seriesVec) WithLabelValues(lvs ...string) *seriesValue {
	key := strings.Join(lvs, labelSep) // one value: no copy
	v.mu.RLock()
	s := v.m[key]
	v.mu.RUnlock()
	if s != nil {
		return s
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if s = v.m[key]; s == nil {
		s = &seriesValue{vec: v, lvs: append([]string(nil), lvs...)}
		v.m[key] = s
	}
	return s
}

// deleteFirst drops every series whose first label's value is
// table (the only partial match this package asks for), and says how many.
func (v *seriesVec) deleteFirst(table string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for k, s := range v.m {
		if s.lvs[0] == table {
			delete(v.m, k)
			n++
		}
	}
	return n
}

func (v *seriesVec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

func (v *seriesVec) Collect(ch chan<- prometheus.Metric) {
	v.mu.RLock()
	ms := make([]prometheus.Metric, 0, len(v.m))
	for _, s := range v.m {
		ms = append(ms, s.metric())
	}
	v.mu.RUnlock()
	// Sent outside the lock: a slow scrape does not hold up new series.
	for _, m := range ms {
		ch <- m
	}
}

// seriesValue is one series of a seriesVec. It is a prometheus.Gauge and
// a prometheus.Counter.
type seriesValue struct {
	bits atomic.Uint64 // math.Float64bits of the value
	vec  *seriesVec
	lvs  []string
}

func (s *seriesValue) value() float64 { return math.Float64frombits(s.bits.Load()) }

func (s *seriesValue) metric() prometheus.Metric {
	return prometheus.MustNewConstMetric(s.vec.desc, s.vec.vt, s.value(), s.lvs...)
}

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

func (s *seriesValue) Desc() *prometheus.Desc              { return s.vec.desc }
func (s *seriesValue) Write(m *dto.Metric) error           { return s.metric().Write(m) }
func (s *seriesValue) Describe(ch chan<- *prometheus.Desc) { ch <- s.vec.desc }
func (s *seriesValue) Collect(ch chan<- prometheus.Metric) { ch <- s.metric() }
