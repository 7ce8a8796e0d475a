package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icecdc/icecdc/source"
)

// waitStillEvery is how often a daemon that is still waiting for a table
// to match a namespace.* pattern says so again.
var waitStillEvery = time.Minute

// waitForPatterns returns once every namespace.* pattern of the config
// matches at least one table. A pattern that matches nothing yet (the
// namespace is empty or does not exist: the tables are created after the
// daemon starts, as in the docker-compose demo) is listed again every
// poll interval, with a warning in the log, instead of the daemon exiting
// and being restarted in a loop. Any other catalog error is returned. It
// returns ctx's error when ctx ends first.
func waitForPatterns(ctx context.Context, cfg *Config, log *slog.Logger) error {
	var pending []string
	for _, t := range cfg.Tables {
		if ns, ok := strings.CutSuffix(t.Name, ".*"); ok && t.Metadata == "" {
			pending = append(pending, ns)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	o := source.Options{
		CatalogName: cfg.Catalog.Name, CatalogType: cfg.Catalog.Type, CatalogURI: cfg.Catalog.URI,
		Warehouse: cfg.Catalog.Warehouse, Props: cfg.Catalog.Properties, Log: log,
	}
	var cat catalog.Catalog
	defer func() {
		if c, ok := cat.(catalog.Closer); ok {
			c.Close()
		}
	}()
	var started, lastSaid time.Time
	for {
		if cat == nil {
			var err error
			if cat, err = source.OpenCatalog(ctx, o); err != nil {
				return err
			}
		}
		var empty []string
		for _, ns := range pending {
			n, err := countTables(ctx, cat, ns)
			if err != nil {
				return err
			}
			if n == 0 {
				empty = append(empty, ns)
			}
		}
		now := time.Now()
		switch {
		case len(empty) == 0:
			if !started.IsZero() {
				log.Info("tables found: starting", "patterns", patterns(pending), "waited", now.Sub(started).Round(time.Second).String())
			}
			return nil
		case started.IsZero():
			started, lastSaid = now, now
			log.Warn("no table matches yet: waiting for one to be created", "patterns", patterns(empty),
				"catalog", cfg.Catalog.Type, "every", cfg.Poll.Interval.String())
		case now.Sub(lastSaid) >= waitStillEvery:
			lastSaid = now
			log.Warn("still waiting for a table to match", "patterns", patterns(empty), "waited", now.Sub(started).Round(time.Second).String())
		}
		pending = empty
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.Poll.Interval):
		}
	}
}

// countTables counts the tables of namespace ns; a namespace that does not
// exist has none.
func countTables(ctx context.Context, cat catalog.Catalog, ns string) (int, error) {
	n := 0
	for _, err := range cat.ListTables(ctx, catalog.ToIdentifier(ns)) {
		if errors.Is(err, catalog.ErrNoSuchNamespace) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("list tables of namespace %s: %w", ns, err)
		}
		n++
	}
	return n, nil
}

func patterns(namespaces []string) string {
	out := make([]string, len(namespaces))
	for i, ns := range namespaces {
		out[i] = ns + ".*"
	}
	return strings.Join(out, ", ")
}
