package cdc_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/metrics"
	"github.com/icecdc/icecdc/sinks/file"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

// maxSeriesPerTable is the bound of issue 22 on the series a table adds
// by default; cluster mode adds one of its own (icecdc_cluster_table_owned),
// so the pipeline's share is one less.
const maxSeriesPerTable = 10

// TestMetricsSeriesPerTable runs a pipeline of several real tables
// through every kind of event (an initial read, then inserts, updates and
// deletes), a sink that fails each table's first write and retention
// holds, and counts the series /metrics would serve per table, from the
// registry's Gather: the essential set (the default) stays within the
// bound and keeps per table only the families a user alerts on, with the
// rest summed over the pipeline; the full set keeps every family per
// table.
func TestMetricsSeriesPerTable(t *testing.T) {
	const nTables = 3
	essential := seriesPerTable(t, nTables, metrics.NewMetrics)
	full := seriesPerTable(t, nTables, metrics.NewFullMetrics)

	wantEssential := []string{"icecdc_events_published_total", "icecdc_hold_age_seconds", "icecdc_retries_total",
		"icecdc_seconds_behind", "icecdc_snapshots_behind", "icecdc_table_up"}
	for name, fams := range essential.perTable {
		n := 0
		for _, k := range fams {
			n += k
		}
		if n > maxSeriesPerTable-1 {
			t.Errorf("essential: %s has %d series (%v), want at most %d (%d with cluster mode's own)", name, n, fams, maxSeriesPerTable-1, maxSeriesPerTable)
		}
		if got := slices.Sorted(maps.Keys(fams)); !slices.Equal(got, wantEssential) {
			t.Errorf("essential: %s has series of %v, want %v", name, got, wantEssential)
		}
		if k := fams["icecdc_events_published_total"]; k != 4 {
			t.Errorf("essential: %s has %d icecdc_events_published_total series, want one per op (r, c, u, d)", name, k)
		}
	}
	if len(essential.perTable) != nTables {
		t.Fatalf("essential: series for %d tables, want %d", len(essential.perTable), nTables)
	}
	// The families outside the set are there, once for the pipeline.
	for _, fam := range []string{"icecdc_poll_duration_seconds", "icecdc_commit_duration_seconds", "icecdc_delivery_latency_seconds", "icecdc_sink_errors_total"} {
		if essential.pipeline[fam] == 0 {
			t.Errorf("essential: no %s of the pipeline (without a table label); have %v", fam, essential.pipeline)
		}
	}
	if got := essential.values[`icecdc_sink_errors_total{class="transient"}`]; got != nTables {
		t.Errorf("essential: icecdc_sink_errors_total{class=\"transient\"} is %v, want %d (each table's first write failed)", got, nTables)
	}
	if got := essential.values["icecdc_commit_duration_seconds_count"]; got != full.values["icecdc_commit_duration_seconds_count"] || got == 0 {
		t.Errorf("essential: icecdc_commit_duration_seconds counts %v commits, full set %v over its tables; want the same, not 0", got, full.values["icecdc_commit_duration_seconds_count"])
	}

	for name, fams := range full.perTable {
		for _, fam := range []string{"icecdc_checkpoint_sequence_number", "icecdc_poll_duration_seconds", "icecdc_commit_duration_seconds",
			"icecdc_delivery_latency_seconds", "icecdc_sink_errors_total"} {
			if fams[fam] == 0 {
				t.Errorf("full: %s has no %s series", name, fam)
			}
		}
		t.Logf("%s: %d series in the essential set, %d in the full set", name, sum(essential.perTable[name]), sum(fams))
	}
}

// scrape is what a registry gathered: series per table and family, series
// of the pipeline (no table label) per family, and values by family and
// labels other than the table's, summed over tables (counts and sums of
// histograms as name_count and name_sum).
type scrape struct {
	perTable map[string]map[string]int
	pipeline map[string]int
	values   map[string]float64
}

func seriesPerTable(t *testing.T, nTables int, newMetrics func(prometheus.Registerer) *metrics.Metrics) scrape {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	env, err := scenario.NewEnv(ctx, filepath.Join(dir, "wh"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tables := make([]*table.Table, nTables)
	for i := range tables {
		tbl, err := env.CreateTable(ctx, table.Identifier{"shop", fmt.Sprintf("t%d", i)}, scenario.OrdersSchema(), nil, 3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tables[i], err = scenario.Append(ctx, tbl, []map[string]any{scenario.Order(1, "a", "new", 1), scenario.Order(2, "b", "new", 2)}); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	metrics := newMetrics(reg)
	store, err := state.Open(filepath.Join(dir, "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fs, err := file.Open(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close(ctx)
	sink := &failFirstSink{Sink: fs, failed: map[string]bool{}}
	// run follows every table once up to its head, from its checkpoint
	// or from start.
	run := func(start string) {
		t.Helper()
		st, err := cdc.ParseStart(start)
		if err != nil {
			t.Fatal(err)
		}
		var specs []cdc.TableSpec
		for _, tbl := range tables {
			name := tbl.Identifier()[0] + "." + tbl.Identifier()[1]
			src, err := source.New(source.Options{CatalogURI: env.CatalogURI, Warehouse: env.Warehouse, Table: name})
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, cdc.TableSpec{Name: name, Source: src, Start: st, Hold: true})
		}
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		p := &cdc.Pipeline{Name: "p", Tables: specs, Encoder: newEncoder("p"), Sink: sink, Store: store, Metrics: metrics, Once: true,
			Poll: 20 * time.Millisecond, RetryInitial: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, HoldInterval: time.Millisecond}
		if err := p.Run(rctx); err != nil {
			t.Fatal(err)
		}
	}
	run("initial")
	for i, tbl := range tables {
		if tbl, err = scenario.Append(ctx, tbl, []map[string]any{scenario.Order(3, "c", "new", 3)}); err != nil {
			t.Fatal(err)
		}
		if tbl, err = scenario.Update(ctx, tbl, iceberg.EqualTo(iceberg.Reference("order_id"), int64(1)), func(r map[string]any) map[string]any {
			r["status"] = "paid"
			return r
		}); err != nil {
			t.Fatal(err)
		}
		if tables[i], err = scenario.Delete(ctx, tbl, iceberg.EqualTo(iceberg.Reference("order_id"), int64(2))); err != nil {
			t.Fatal(err)
		}
	}
	run("initial")

	s := gatherSeries(t, reg)

	// A table given up (cluster mode) leaves no series; the others keep theirs.
	metrics.Forget("shop.t0")
	after := gatherSeries(t, reg)
	if fams := after.perTable["shop.t0"]; len(fams) > 0 {
		t.Errorf("after Forget(shop.t0) the registry still has its series %v", fams)
	}
	if !maps.Equal(after.perTable["shop.t1"], s.perTable["shop.t1"]) {
		t.Errorf("Forget(shop.t0) changed the series of shop.t1: %v, were %v", after.perTable["shop.t1"], s.perTable["shop.t1"])
	}
	return s
}

// gatherSeries counts the series reg serves (see scrape).
func gatherSeries(t *testing.T, reg *prometheus.Registry) scrape {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	s := scrape{perTable: map[string]map[string]int{}, pipeline: map[string]int{}, values: map[string]float64{}}
	for _, fam := range fams {
		for _, m := range fam.GetMetric() {
			n, key, table := 1, fam.GetName(), ""
			var others []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" {
					table = l.GetValue()
				} else {
					others = append(others, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
			}
			if len(others) > 0 {
				key += "{" + strings.Join(others, ",") + "}"
			}
			switch fam.GetType() {
			case dto.MetricType_COUNTER:
				s.values[key] += m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.values[key] += m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				// Every bucket, +Inf (not among Bucket), _sum and _count.
				n = len(m.GetHistogram().GetBucket()) + 3
				s.values[fam.GetName()+"_count"] += float64(m.GetHistogram().GetSampleCount())
				s.values[fam.GetName()+"_sum"] += m.GetHistogram().GetSampleSum()
			default:
				t.Fatalf("%s: a %v, which this count does not know", fam.GetName(), fam.GetType())
			}
			if table == "" {
				s.pipeline[fam.GetName()] += n
				continue
			}
			if s.perTable[table] == nil {
				s.perTable[table] = map[string]int{}
			}
			s.perTable[table][fam.GetName()] += n
		}
	}
	return s
}

// failFirstSink fails the first write of every table once, as a sink
// that is away for a moment does.
type failFirstSink struct {
	cdc.Sink
	mu     sync.Mutex
	failed map[string]bool
}

func (s *failFirstSink) RetainsNoBatch() {}

func (s *failFirstSink) Write(ctx context.Context, b *cdc.Batch) error {
	s.mu.Lock()
	first := !s.failed[b.Table.Name]
	s.failed[b.Table.Name] = true
	s.mu.Unlock()
	if first {
		return errors.New("the destination is away for a moment")
	}
	return s.Sink.Write(ctx, b)
}

func sum(m map[string]int) int {
	n := 0
	for _, k := range m {
		n += k
	}
	return n
}
