package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
)

func resetCommand(e *cli) *cobra.Command {
	var (
		f       configFlags
		table   string
		all     bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "reset -c FILE (--table NS.NAME | --all) [flags]",
		Short: "forget a table's checkpoint, or every table's, and its retention hold",
		Long: `Forget the checkpoint of a table, or of every table of the pipeline (under exactly-once delivery,
the Kafka checkpoint records too), and remove its retention hold, so that the configured start
applies again at the next run. The daemon must be stopped.`,
		Example: `  icecdc reset -c icecdc.yaml --table shop.orders
  icecdc reset -c icecdc.yaml --all`,
		Args:                  noArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.load()
			if err != nil {
				return err
			}
			return cmdReset(cmd.Context(), cfg, table, all, timeout, e.stdout)
		},
	}
	f.register(cmd, overrideState)
	fl := cmd.Flags()
	fl.StringVar(&table, "table", "", "the table to forget, as configured (namespace.table)")
	fl.BoolVar(&all, "all", false, "forget every table of the pipeline")
	fl.DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for Kafka under exactly-once delivery")
	groupFlags(fl, "Reset", "table", "all", "timeout")
	return cmd
}

// cmdReset forgets the checkpoint of a table, or of every table of the
// pipeline, so that their start positions apply again (after a rollback,
// an expiry or a re-created table). Under exactly-once delivery the
// Kafka checkpoint topic is the position of record, so its records are
// deleted too, before the state file's: when Kafka cannot be reached,
// nothing changes, and a reset that failed half way can be run again.
func cmdReset(ctx context.Context, cfg *Config, table string, all bool, timeout time.Duration, out io.Writer) error {
	if (table == "") == !all {
		return errors.New("reset: give --table NAME or --all")
	}
	// The state file is opened first: its lock stops a reset while a
	// daemon runs on it, before anything is deleted.
	var store *state.Store
	if _, err := os.Stat(cfg.State.Path); !errors.Is(err, fs.ErrNotExist) {
		if store, err = state.Open(cfg.State.Path, state.Options{Pipeline: cfg.Name}); err != nil {
			return err
		}
		defer store.Close()
	}
	// The retention holds go first: a catalog that cannot be reached
	// leaves everything as it was, and the reset can be run again.
	released, err := releaseHolds(ctx, cfg, table)
	if err != nil {
		return fmt.Errorf("reset %s: %w (the checkpoints were left as they are: run reset again once the catalog answers)", cfg.Name, err)
	}
	for _, t := range released {
		fmt.Fprintf(out, "reset %s/%s: removed its retention hold %s\n", cfg.Name, t, cdc.HoldRef(cfg.Name))
	}
	var inKafka []string
	if exactlyOnce(cfg) {
		kctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if inKafka, err = forgetInKafka(kctx, cfg, table); err != nil {
			return fmt.Errorf("reset %s: %w (the state file was left as it is: run reset again once Kafka answers)", cfg.Name, err)
		}
		for _, t := range inKafka {
			fmt.Fprintf(out, "reset %s/%s: deleted its checkpoint record in kafka topic %s\n", cfg.Name, t, checkpointTopic(cfg))
		}
	}
	var inFile []string
	if store != nil {
		if all {
			inFile, err = store.ResetAll(cfg.Name)
		} else if err = store.Reset(cfg.Name, table); err == nil {
			inFile = []string{table}
		}
		if err != nil && (!errors.Is(err, state.ErrNotFound) || len(inKafka) == 0) {
			return err
		}
	} else if len(inKafka) == 0 {
		return fmt.Errorf("reset %s: %w: state %s does not exist", cfg.Name, state.ErrNotFound, cfg.State.Path)
	}
	for _, t := range sortedUnion(inFile, inKafka) {
		if start, ok := startOf(cfg, t); ok {
			fmt.Fprintf(out, "reset %s/%s: its start position (%s) applies at the next run\n", cfg.Name, t, start)
		} else {
			fmt.Fprintf(out, "reset %s/%s: forgotten (the table is not in the configuration)\n", cfg.Name, t)
		}
	}
	return nil
}

// forgetInKafka deletes the table's checkpoint record, or with table ""
// every one of the pipeline, from the checkpoint topic, and returns the
// tables it deleted records of.
func forgetInKafka(ctx context.Context, cfg *Config, table string) ([]string, error) {
	kc := cfg.Sink.Kafka
	kc.Pipeline = cfg.Name
	kc.Logger = slog.New(slog.DiscardHandler)
	sink, err := kafka.New(kc)
	if err != nil {
		return nil, err
	}
	defer sink.Close(context.WithoutCancel(ctx))
	var tables []string // nil: all
	if table != "" {
		key, err := checkpointName(ctx, cfg, table)
		if err != nil {
			return nil, err
		}
		tables = []string{key}
	}
	forgot, err := sink.(*kafka.ExactlyOnceSink).Forget(ctx, cfg.Name, tables)
	if err != nil {
		return nil, err
	}
	if table != "" && len(forgot) > 0 {
		forgot = []string{table} // as configured, like the state file names it
	}
	return forgot, nil
}

// checkpointName is the table's name in its Kafka checkpoint key: the
// name as configured for a catalog table, and for a table followed from a
// metadata file the identifier the loaded file gives it.
func checkpointName(ctx context.Context, cfg *Config, table string) (string, error) {
	for _, t := range cfg.Tables {
		if t.Name != table || t.Metadata == "" {
			continue
		}
		src, err := source.New(source.Options{Table: t.Name, MetadataPath: t.Metadata, Props: cfg.Catalog.Properties})
		if err != nil {
			return "", err
		}
		defer src.Close()
		if _, err := src.Refresh(ctx); err != nil {
			return "", fmt.Errorf("table %s: the checkpoint key needs the table's metadata: %w", table, err)
		}
		info := src.Info()
		return info.Namespace + "." + info.Name, nil
	}
	return table, nil
}

func checkpointTopic(cfg *Config) string {
	if t := cfg.Sink.Kafka.CheckpointTopic; t != "" {
		return t
	}
	return kafka.DefaultCheckpointTopic
}

func sortedUnion(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// startOf is the configured start of a table, named as configured or
// found through a namespace.* entry.
func startOf(cfg *Config, table string) (string, bool) {
	i := slices.IndexFunc(cfg.Tables, func(t TableConfig) bool { return t.Name == table })
	if i < 0 {
		i = slices.IndexFunc(cfg.Tables, func(t TableConfig) bool {
			ns, ok := strings.CutSuffix(t.Name, ".*")
			rest, in := strings.CutPrefix(table, ns+".")
			return ok && in && !strings.Contains(rest, ".")
		})
	}
	if i < 0 {
		return "", false
	}
	if s := cfg.Tables[i].Start; s != "" {
		return s, true
	}
	return "latest", true
}

// releaseHolds removes the pipeline's retention ref from the table (""
// : every table) where the configuration holds it, and returns the
// tables it was removed from.
func releaseHolds(ctx context.Context, cfg *Config, only string) ([]string, error) {
	base := source.Options{
		CatalogName: cfg.Catalog.Name, CatalogType: cfg.Catalog.Type, CatalogURI: cfg.Catalog.URI,
		Warehouse: cfg.Catalog.Warehouse, Props: cfg.Catalog.Properties, Log: slog.New(slog.DiscardHandler),
		MaxResponseBytes: int64(cfg.Catalog.MaxResponseBytes),
	}
	var released []string
	for _, t := range cfg.Tables {
		if !t.Hold {
			continue
		}
		names := []string{t.Name}
		if ns, ok := strings.CutSuffix(t.Name, ".*"); ok {
			if only != "" && !strings.HasPrefix(only, ns+".") {
				continue
			}
			var err error
			if names, err = source.ListTables(ctx, base, ns); err != nil {
				return released, fmt.Errorf("remove retention holds of %s: %w", t.Name, err)
			}
		}
		for _, name := range names {
			if only != "" && name != only {
				continue
			}
			ok, err := releaseHold(ctx, base, t.Branch, name, cdc.HoldRef(cfg.Name))
			if err != nil {
				return released, err
			}
			if ok {
				released = append(released, name)
			}
		}
	}
	return released, nil
}

func releaseHold(ctx context.Context, o source.Options, branch, name, ref string) (bool, error) {
	o.Table, o.Branch = name, branch
	src, err := source.Open(ctx, o)
	if err != nil {
		return false, fmt.Errorf("remove retention hold %s: %w", ref, err)
	}
	defer src.Close()
	if _, ok := src.HasRef(ref); !ok {
		return false, nil
	}
	return true, src.Release(ctx, ref)
}
