package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// demoStep is one commit of the bookshop story.
type demoStep struct {
	what string
	do   func(context.Context, *table.Table) (*table.Table, error)
}

var bookshopOrder = scenario.Order

// bookshopStory is the demo's history of the orders table.
func bookshopStory() []demoStep {
	id := func(v int64) iceberg.BooleanExpression { return iceberg.EqualTo(iceberg.Reference("order_id"), v) }
	return []demoStep{
		{"insert orders 1-5", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, t, []map[string]any{
				bookshopOrder(1, "ada", "new", 12.5), bookshopOrder(2, "bob", "new", 30),
				bookshopOrder(3, "cy", "new", 7.25), bookshopOrder(4, "dee", "new", 19.99),
				bookshopOrder(5, "eve", "new", 42),
			})
		}},
		{"merge-on-read delete of order 2", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Delete(ctx, t, id(2))
		}},
		{"update order 1 to shipped", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Update(ctx, t, id(1), func(r map[string]any) map[string]any { r["status"] = "shipped"; return r })
		}},
		{"insert order 6", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, t, []map[string]any{bookshopOrder(6, "fay", "new", 5)})
		}},
		{"compaction", scenario.Compact},
		{"delete order 3 inside the compacted file", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Delete(ctx, t, id(3))
		}},
	}
}

// buildBookshop writes the demo table into dir and returns where it is.
func buildBookshop(ctx context.Context, dir string) (source.Options, []string, error) {
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return source.Options{}, nil, err
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"bookshop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		return source.Options{}, nil, err
	}
	var whats []string
	for _, s := range bookshopStory() {
		if tbl, err = s.do(ctx, tbl); err != nil {
			return source.Options{}, nil, fmt.Errorf("demo: %s: %w", s.what, err)
		}
		whats = append(whats, s.what)
	}
	return source.Options{
		CatalogType: "sql", CatalogName: scenario.CatalogName, CatalogURI: env.CatalogURI,
		Warehouse: env.Warehouse, Table: "bookshop.orders",
	}, whats, nil
}

func cmdDemo(ctx context.Context, args []string, stdout io.Writer, log *slog.Logger) error {
	fl := flag.NewFlagSet("demo", flag.ContinueOnError)
	dir := fl.String("dir", "", "directory for the demo catalog and warehouse (default: a temporary one, removed afterwards)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "icecdc-demo-")
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(tmp)
		*dir = tmp
	}
	opts, whats, err := buildBookshop(ctx, *dir)
	if err != nil {
		return err
	}
	src, err := source.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer src.Close()
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	fmt.Fprintf(w, "# icecdc demo: table bookshop.orders in %s, events as debezium-json\n", *dir)
	enc := &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "demo", Version: version}}
	i := 0
	var buf []byte
	return cdc.Changes(ctx, src, 0, 0, log, func(c *cdc.Commit) error {
		if err := c.Materialize(ctx); err != nil {
			return err
		}
		what := ""
		if i < len(whats) {
			what = whats[i]
		}
		i++
		fmt.Fprintf(w, "# snapshot %d  seq %d  %s (%s): %d events\n", c.Snapshot.ID, c.Snapshot.SequenceNumber, c.Snapshot.Operation, what, len(c.Events))
		now := time.Now().UnixMilli()
		for k := range c.Events {
			var err error
			if buf, err = enc.AppendValue(buf[:0], c, &c.Events[k], now); err != nil {
				return err
			}
			w.Write(append(buf, '\n'))
		}
		return nil
	})
}
