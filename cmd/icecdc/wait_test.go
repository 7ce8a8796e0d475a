package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// A namespace.* pattern that matches no table yet (the namespace does not
// even exist) waits, saying so in the log, and returns once a table is
// created; a stop while waiting returns the context's error.
func TestWaitForPatterns(t *testing.T) {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if _, err := env.CreateTable(ctx, table.Identifier{"other", "t"}, scenario.OrdersSchema(), nil, 3, nil); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{
		Catalog: CatalogConfig{Name: scenario.CatalogName, Type: "sql", URI: env.CatalogURI, Warehouse: env.Warehouse},
		Tables:  []TableConfig{{Name: "other.*"}, {Name: "shop.*"}},
	}
	cfg.Poll.Interval = 20 * time.Millisecond
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))

	done := make(chan error, 1)
	go func() { done <- waitForPatterns(ctx, cfg, log) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "no table matches yet") {
		if time.Now().After(deadline) {
			t.Fatalf("no waiting message; log:\n%s", buf.String())
		}
		select {
		case err := <-done:
			t.Fatalf("returned before shop had a table: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !strings.Contains(buf.String(), `"patterns":"shop.*"`) {
		t.Errorf("the message should name only the pattern that matches nothing; log:\n%s", buf.String())
	}
	if _, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, scenario.OrdersSchema(), nil, 3, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waitForPatterns: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting 10s after shop.orders was created")
	}
	if !strings.Contains(buf.String(), "tables found") {
		t.Errorf("no 'tables found' message; log:\n%s", buf.String())
	}

	cfg.Tables = []TableConfig{{Name: "empty.*"}}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := waitForPatterns(cctx, cfg, log); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a stopped wait returned %v, want the context's error", err)
	}
}
