package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/metrics"
)

// TestConfigMetricsPerTable: metrics.per_table defaults to the essential
// set, takes full, and refuses anything else with a line naming the key.
func TestConfigMetricsPerTable(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	c, err := parseConfig([]byte(goodConfig), secret)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metrics.PerTable != metrics.PerTableEssential {
		t.Fatalf("metrics.per_table %q, want the default %q", c.Metrics.PerTable, metrics.PerTableEssential)
	}
	if c, err = parseConfig([]byte(goodConfig+"metrics: {per_table: full}\n"), secret); err != nil || c.Metrics.PerTable != metrics.PerTableFull {
		t.Fatalf("metrics.per_table full: %v, %v", c, err)
	}
	_, err = parseConfig([]byte(goodConfig+"metrics: {per_table: some}\n"), secret)
	if err == nil || !strings.Contains(err.Error(), `config: metrics.per_table: "some": want essential or full`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("metrics.per_table some: error %v, want one line naming the key", err)
	}
}

// TestDaemonMetricsPerTable: the daemon's /metrics serves, for a table,
// only the essential families by default, and every family with
// metrics.per_table: full.
func TestDaemonMetricsPerTable(t *testing.T) {
	essential := map[string]bool{"icecdc_events_published_total": true, "icecdc_snapshots_behind": true, "icecdc_seconds_behind": true,
		"icecdc_table_up": true, "icecdc_retries_total": true, "icecdc_hold_age_seconds": true}
	for _, set := range []string{"", metrics.PerTableFull} {
		t.Run(cmp.Or(set, "default"), func(t *testing.T) {
			dir := t.TempDir()
			listen := freeAddr(t)
			path := writeConfig(t, "p", bookshopCatalog(t), "{type: file, file: {path: "+filepath.Join(dir, "events.json")+"}}", filepath.Join(dir, "state.db"))
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, "http: {listen: %s}\n", listen)
			if set != "" {
				fmt.Fprintf(f, "metrics: {per_table: %s}\n", set)
			}
			f.Close()
			d := startDaemon(t, "-c", path)
			// The table's families, as /metrics names them.
			var fams map[string]int
			// The checkpoint's series is set once the batch is stored,
			// after the events were counted: with the full set, wait for
			// it too.
			d.waitFor(t, "the table's first commit delivered and checkpointed", func() bool {
				fams = map[string]int{}
				for line := range strings.Lines(daemonPage(listen, "/metrics")) {
					name, labels, ok := strings.Cut(line, "{")
					if !ok || strings.HasPrefix(line, "#") || !strings.Contains(labels, `table="bookshop.orders"`) {
						continue
					}
					for _, suffix := range []string{"_bucket", "_sum", "_count"} {
						if base, ok := strings.CutSuffix(name, suffix); ok && strings.HasSuffix(base, "_seconds") {
							name = base
						}
					}
					fams[name]++
				}
				var rows []tableStatus
				caughtUp := json.Unmarshal([]byte(daemonPage(listen, "/status")), &rows) == nil && len(rows) == 1 &&
					rows[0].Lag != nil && rows[0].Lag.SnapshotsBehind == 0 && rows[0].Checkpoint != nil && rows[0].Checkpoint.Seq > 0
				return caughtUp && fams["icecdc_events_published_total"] > 0 && (set != metrics.PerTableFull || fams["icecdc_checkpoint_sequence_number"] > 0)
			})
			d.stop(t)
			for name, n := range fams {
				if set == "" && !essential[name] {
					t.Errorf("the default set serves %d series of %s for the table, which is summed over the pipeline", n, name)
				}
			}
			if full := fams["icecdc_poll_duration_seconds"] > 0 && fams["icecdc_checkpoint_sequence_number"] > 0; full != (set == metrics.PerTableFull) {
				t.Errorf("metrics.per_table %q: the table's series are %v", set, fams)
			}
			if set == metrics.PerTableFull {
				checkDocumentedSeries(t, fams)
			}
		})
	}
}

// documentedSeries finds the number of series per table that
// configuration.md and operations.md give for metrics.per_table: full,
// for a table like the demo's (commits with inserts, updates and deletes,
// no hold, no sink error).
var documentedSeries = regexp.MustCompile(`(\d+) series per table for a table whose commits had inserts, updates and deletes`)

// checkDocumentedSeries holds the docs' count of a table's series with
// metrics.per_table: full to what /metrics served for the demo table.
func checkDocumentedSeries(t *testing.T, fams map[string]int) {
	t.Helper()
	n := 0
	for _, k := range fams {
		n += k
	}
	for _, doc := range []string{"../../docs/configuration.md", "../../docs/operations.md"} {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		m := documentedSeries.FindSubmatch(raw)
		if m == nil {
			t.Errorf("%s does not say how many series a table has with metrics.per_table: full (%q)", doc, documentedSeries)
			continue
		}
		if string(m[1]) != strconv.Itoa(n) {
			t.Errorf("%s says %s series per table with metrics.per_table: full; /metrics served %d for the demo table: %v", doc, m[1], n, fams)
		}
	}
}
