package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestRunWaitsForTables: a shop.* pattern whose namespace does not exist
// yet keeps the daemon up, serving /healthz, listing again every poll
// interval with one warning, and follows the table once it is created.
func TestRunWaitsForTables(t *testing.T) {
	dir := t.TempDir()
	env, err := scenario.NewEnv(context.Background(), filepath.Join(dir, "lake"))
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	listen := freeAddr(t)
	events := filepath.Join(dir, "events.jsonl")
	cfg := filepath.Join(dir, "icecdc.yaml")
	body := fmt.Sprintf(`name: waiting
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: shop.*, start: earliest}]
poll: {interval: 20ms}
sink: {type: file, file: {path: '%s'}}
state: {path: '%s'}
http: {listen: '%s'}
`, scenario.CatalogName, env.CatalogURI, env.Warehouse, events, filepath.Join(dir, "state.db"), listen)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "the warning", func() bool { return len(d.logLines("no table to follow yet; listing again every poll interval")) > 0 })
	resp, err := http.Get("http://" + listen + "/healthz")
	if err != nil {
		t.Fatalf("/healthz while waiting: %v", err)
	}
	resp.Body.Close()
	writeBookshopIn(t, env.Catalog) // shop.orders
	d.waitFor(t, "every event", func() bool {
		b, _ := os.ReadFile(events)
		return len(parseLines(t, string(b))) >= len(bookshopEvents)
	})
	d.stop(t)
	b, _ := os.ReadFile(events)
	if got, want := summaries(t, string(b)), strings.Join(bookshopEvents, "\n"); got != want {
		t.Fatalf("delivered:\n%s\nwant:\n%s", got, want)
	}
	warned := d.logLines("no table to follow yet; listing again every poll interval")
	if len(warned) != 1 || warned[0]["pattern"] != "shop.*" || len(d.logLines("still no table to follow")) != 0 {
		t.Fatalf("waiting logged %d times (once, then every %s); logs:\n%s", len(warned), waitLogInterval, d.logs.String())
	}
	if len(d.logLines("tables found; following them")) != 1 || len(d.logLines("icecdc started")) != 1 {
		t.Fatalf("logs:\n%s", d.logs.String())
	}
	t.Logf("waited with: %v", warned[0]["err"])
}
