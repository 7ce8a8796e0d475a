package cdc_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// TestLogAnomaliesNotPaired: a commit too large to pair by key says so in
// one warning that names the table, the snapshot and what it counts, not
// as a lineage anomaly (its events were emitted).
func TestLogAnomaliesNotPaired(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	c := &cdc.Commit{Table: cdc.TableInfo{Namespace: "shop", Name: "orders"}, Snapshot: cdc.SnapshotInfo{ID: 7, SequenceNumber: 3},
		Anomalies: []cdc.Anomaly{
			{Kind: cdc.NotPaired, Position: -1, RowID: -1, Detail: "2 deletes and 2 inserts, more rows than max_held_rows (3)"},
			{Kind: "duplicate-added-row-id", File: "f.parquet", Position: 4, RowID: 9},
		}}
	cdc.LogAnomalies(log, c)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	for _, want := range []string{"not paired by key", "table=shop.orders", "snapshot_id=7", "kind=not-paired-by-key", "2 deletes and 2 inserts"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("not-paired line %q lacks %q", lines[0], want)
		}
	}
	if strings.Contains(lines[0], "no event emitted") || !strings.Contains(lines[1], "no event emitted") {
		t.Errorf("lines:\n%s", buf.String())
	}
}
