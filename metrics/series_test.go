package metrics

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// TestSeriesVecServesWhatClientGolangWould applies the same operations to
// a seriesVec and to client_golang's vecs, and compares what the two
// registries serve: values, labels, types and help, after deletions too.
func TestSeriesVecServesWhatClientGolangWould(t *testing.T) {
	ours, theirs := prometheus.NewPedanticRegistry(), prometheus.NewPedanticRegistry()
	gauge := newSeriesVec("t_lag", "Lag.", prometheus.GaugeValue, []string{"table"})
	counter := newSeriesVec("t_events_total", "Events.", prometheus.CounterValue, []string{"table", "op"})
	ours.MustRegister(gauge, counter)
	pg := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "t_lag", Help: "Lag."}, []string{"table"})
	pc := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t_events_total", Help: "Events."}, []string{"table", "op"})
	theirs.MustRegister(pg, pc)

	r := rand.New(rand.NewPCG(1, 2))
	tables := []string{"a.x", "a.y", "b.z", "ü.名"}
	ops := []string{"c", "u", "d"}
	for range 500 {
		tb := tables[r.IntN(len(tables))]
		op := ops[r.IntN(len(ops))]
		v := float64(r.IntN(100)) / 4
		switch r.IntN(5) {
		case 0:
			gauge.WithLabelValues(tb).Set(v)
			pg.WithLabelValues(tb).Set(v)
		case 1:
			gauge.WithLabelValues(tb).Sub(v)
			pg.WithLabelValues(tb).Sub(v)
		case 2, 3:
			counter.WithLabelValues(tb, op).Add(v)
			pc.WithLabelValues(tb, op).Add(v)
		case 4:
			if r.IntN(10) == 0 {
				n := gauge.DeletePartialMatch(prometheus.Labels{"table": tb}) + counter.DeletePartialMatch(prometheus.Labels{"table": tb})
				m := pg.DeletePartialMatch(prometheus.Labels{"table": tb}) + pc.DeletePartialMatch(prometheus.Labels{"table": tb})
				if n != m {
					t.Fatalf("deleted %d series of %s, client_golang %d", n, tb, m)
				}
			}
		}
	}
	if got, want := exposition(t, ours), exposition(t, theirs); got != want {
		t.Fatalf("served:\n%s\nclient_golang serves:\n%s", got, want)
	}
}

// TestSeriesValueAddsConcurrently: no Add is lost to another's.
func TestSeriesValueAddsConcurrently(t *testing.T) {
	v := newSeriesVec("t_total", "T.", prometheus.CounterValue, []string{"table"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				v.WithLabelValues("a").Inc()
			}
		})
	}
	wg.Wait()
	if got := v.WithLabelValues("a").value(); got != 8000 {
		t.Fatalf("8 goroutines' 1,000 increments made %v", got)
	}
}

func exposition(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			t.Fatal(err)
		}
	}
	if b.Len() == 0 {
		t.Fatal("nothing served")
	}
	fmt.Fprintln(&b)
	return b.String()
}

// TestSeriesVecRefusesBadLabelsWithoutPanic: a table name that is not
// UTF-8 (a hostile catalog's) gets a series that is not served, where
// client_golang's vecs panic, and the other series are still served.
func TestSeriesVecRefusesBadLabelsWithoutPanic(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	v := newSeriesVec("t_lag", "Lag.", prometheus.GaugeValue, []string{"table"})
	reg.MustRegister(v)
	v.WithLabelValues("ok.table").Set(2)
	v.WithLabelValues("bad.\xff").Set(3)
	got := exposition(t, reg)
	if want := "t_lag{table=\"ok.table\"} 2\n"; !bytes.Contains([]byte(got), []byte(want)) {
		t.Fatalf("served:\n%s\nwant a line %q", got, want)
	}
	if bytes.Contains([]byte(got), []byte("bad.")) {
		t.Fatalf("served a series for a label that is not UTF-8:\n%s", got)
	}
}
