package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/source"
)

func cmdChanges(ctx context.Context, args []string, stdout io.Writer, log *slog.Logger) error {
	fl := flag.NewFlagSet("changes", flag.ContinueOnError)
	var o source.Options
	props := propsFlag{}
	fl.StringVar(&o.MetadataPath, "metadata", "", "load the table from this metadata.json file")
	fl.StringVar(&o.CatalogType, "catalog-type", "sql", "catalog type: "+strings.Join(source.CatalogTypes, " | "))
	fl.StringVar(&o.CatalogName, "catalog-name", "local", "the catalog's own name")
	fl.StringVar(&o.CatalogURI, "catalog-uri", "", "catalog URI (sql: file:PATH of the SQLite file)")
	fl.StringVar(&o.Warehouse, "warehouse", "", "warehouse location")
	fl.StringVar(&o.Table, "table", "", "table as NAMESPACE.NAME (with --metadata: the name events carry; default from the table location, <namespace>.db/<name>)")
	fl.StringVar(&o.Branch, "branch", "main", "branch to follow")
	fl.Var(props, "catalog-prop", "catalog property key=value (repeatable)")
	fl.Var((*listFlag)(&o.AllowedLocations), "allowed-location", "read the table's files only from this location prefix (repeatable; default the table location and warehouse)")
	var maxMemory byteSize
	fl.Var(&maxMemory, "max-memory", "memory budget of one commit's events; past a quarter of it, before images of updates are spilled to a temporary file (bytes, or e.g. 256MiB)")
	from := fl.Int64("from-seq", 0, "start after this sequence number (exclusive)")
	to := fl.Int64("to-seq", 0, "stop at this sequence number (inclusive; 0 = head)")
	format := fl.String("format", "debezium-json", "event format: debezium-json")
	pipeline := fl.String("name", "icecdc", "pipeline name for source.name")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("changes: unexpected argument %q", fl.Arg(0))
	}
	if *format != "debezium-json" {
		return fmt.Errorf("changes: --format %q: only debezium-json is supported", *format)
	}
	if *from < 0 || *to < 0 || (*to > 0 && *to <= *from) {
		return fmt.Errorf("changes: bad range --from-seq %d --to-seq %d", *from, *to)
	}
	o.Props = props
	o.MaxMemory = int64(maxMemory)
	// One table, one commit at a time: the budget is the process's too,
	// so that the garbage collector works to stay within it rather than
	// let the heap double (GOMEMLIMIT, when set, wins).
	if os.Getenv("GOMEMLIMIT") == "" {
		limit := int64(maxMemory)
		if limit == 0 {
			limit = source.DefaultMaxMemory
		}
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(max(limit, 64<<20)))
	}
	if o.MetadataPath == "" {
		if err := source.CheckCatalogType(o.CatalogType); err != nil {
			return fmt.Errorf("changes: --catalog-type %w", err)
		}
	}
	if err := source.CheckProps(props); err != nil {
		return fmt.Errorf("changes: --catalog-prop %w", err)
	}
	src, err := source.Open(ctx, o)
	if err != nil {
		return err
	}
	defer src.Close()
	// A range past the head prints nothing and would look like "no
	// changes": refuse it, as Snapshots refuses a range whose history
	// was expired.
	head, ok := src.Head()
	for _, b := range []struct {
		flag string
		seq  int64
	}{{"--from-seq", *from}, {"--to-seq", *to}} {
		switch {
		case b.seq == 0:
		case !ok:
			return fmt.Errorf("changes: %s %d: the table has no snapshot yet", b.flag, b.seq)
		case b.seq > head.SequenceNumber:
			return fmt.Errorf("changes: %s %d is past the branch head (snapshot %d, sequence number %d)", b.flag, b.seq, head.ID, head.SequenceNumber)
		}
	}
	w := bufio.NewWriterSize(stdout, 1<<16)
	enc := &cdc.DebeziumJSON{Envelope: cdc.Envelope{Pipeline: *pipeline, Version: version}}
	var buf []byte
	err = cdc.Changes(ctx, src, *from, *to, log, func(c *cdc.Commit) error {
		now := time.Now().UnixMilli()
		return c.EachBatch(ctx, 0, func(evs []cdc.Event) error {
			for i := range evs {
				buf, err = enc.AppendValue(buf[:0], c, &evs[i], now)
				if err != nil {
					return fmt.Errorf("encode event %s: %w", cdc.EventID(c.Table.UUID, c.Snapshot.SequenceNumber, evs[i].RowID, evs[i].Op), err)
				}
				buf = append(buf, '\n')
				if _, err := w.Write(buf); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if errors.Is(err, cdc.ErrHistory) {
		if snaps, whole, rerr := src.Retained(ctx); rerr == nil && !whole && len(snaps) > 0 && snaps[0].SequenceNumber-1 > *from {
			err = fmt.Errorf("%w; --from-seq %d prints the retained history", err, snaps[0].SequenceNumber-1)
		}
	}
	return err
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}
