package main

import (
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// TestConfigMetricsPerTable: metrics.per_table defaults to the essential
// set, takes full, and refuses anything else with a line naming the key.
func TestConfigMetricsPerTable(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	c, err := parseConfig([]byte(goodConfig), secret)
	if err != nil {
		t.Fatal(err)
	}
	if c.Metrics.PerTable != cdc.PerTableEssential {
		t.Fatalf("metrics.per_table %q, want the default %q", c.Metrics.PerTable, cdc.PerTableEssential)
	}
	if c, err = parseConfig([]byte(goodConfig+"metrics: {per_table: full}\n"), secret); err != nil || c.Metrics.PerTable != cdc.PerTableFull {
		t.Fatalf("metrics.per_table full: %v, %v", c, err)
	}
	_, err = parseConfig([]byte(goodConfig+"metrics: {per_table: some}\n"), secret)
	if err == nil || !strings.Contains(err.Error(), `config: metrics.per_table: "some": want essential or full`) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("metrics.per_table some: error %v, want one line naming the key", err)
	}
}
