package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/avro"
	"golang.org/x/term"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/changes"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/registry"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/subscribe"
)

// changesFlags are the flags of changes.
type changesFlags struct {
	o                source.Options
	props            propsFlag
	maxMemory        byteSize
	from, to         int64
	format, pipeline string
	dbz              DebeziumConfig
	withKey, net     bool
	netMax           int
	columns          listFlag
	progress         string
	unwrap           bool
	unwrapOpts       unwrapFlag
	registryURL      string
	topic            string
	config           string
	// changed reports whether a flag was given (the command line wins
	// over --config).
	changed func(string) bool
}

func changesCommand(e *cli) *cobra.Command {
	f := &changesFlags{props: propsFlag{}, unwrapOpts: unwrapFlag{}}
	cmd := &cobra.Command{
		Use:   "changes (--metadata FILE | --catalog-uri URI --table NS.NAME) [flags]",
		Short: "print a table's change events, from a metadata file or a catalog",
		Long: `Print the change events of a table's commits as one JSON line each (or a table for a person
to read), oldest first, from a metadata.json file or from a catalog, then exit.`,
		Example: `  icecdc changes --metadata ./demo/warehouse/bookshop.db/orders/metadata/00006-*.metadata.json
  icecdc changes --catalog-uri file:./demo/catalog.db --warehouse file://$PWD/demo/warehouse --table bookshop.orders --format table
  icecdc changes --catalog-type rest --catalog-uri http://localhost:8181 --table shop.orders --from-seq 10 --net
  icecdc changes --metadata m.json --format debezium-connect-json --with-key | kcat -P -b localhost:9092 -t shop.orders -K '\t'`,
		Args:                  noArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.changed = cmd.Flags().Changed
			if f.changed("format") {
				if err := checkChoice(cmd, "format", f.format, formatDebeziumJSON, formatDebeziumConnect, formatDebeziumAvro, "table"); err != nil {
					return err
				}
			}
			if err := checkChoice(cmd, "progress", f.progress, "auto", "never"); err != nil {
				return err
			}
			return cmdChanges(cmd.Context(), f, e.stdout, e.stderr, e.log)
		},
	}
	fl := cmd.Flags()
	o := &f.o
	fl.StringVar(&o.MetadataPath, "metadata", "", "load the table from this metadata.json file")
	fl.StringVar(&o.CatalogType, "catalog-type", "sql", "catalog type: "+strings.Join(source.CatalogTypes, " | "))
	fl.StringVar(&o.CatalogName, "catalog-name", "local", "the catalog's own name")
	fl.StringVar(&o.CatalogURI, "catalog-uri", "", "catalog URI (sql: file:PATH of the SQLite file; hive: thrift://HOST:PORT of the metastore)")
	fl.StringVar(&o.Warehouse, "warehouse", "", "warehouse location")
	fl.StringVar(&o.Table, "table", "", "table as NAMESPACE.NAME (with --metadata: the name events carry; default from the table location, <namespace>.db/<name>)")
	fl.StringVar(&o.Branch, "branch", "main", "branch to follow")
	fl.Var(f.props, "catalog-prop", "catalog property key=value (repeatable)")
	fl.Var((*listFlag)(&o.AllowedLocations), "allowed-location", "read the table's files only from this location prefix (repeatable; default the table location and warehouse)")
	groupFlags(fl, "Table", "metadata", "catalog-type", "catalog-name", "catalog-uri", "warehouse", "table", "branch", "catalog-prop", "allowed-location")
	fl.Int64Var(&f.from, "from-seq", 0, "start after this sequence number (exclusive)")
	fl.Int64Var(&f.to, "to-seq", 0, "stop at this sequence number (inclusive; 0 = head)")
	fl.BoolVar(&f.net, "net", false, "one event per row for the whole range (its net changes)")
	fl.IntVar(&f.netMax, "net-max-rows", 100_000, "with --net: the most changed rows a range may hold in memory")
	fl.Var(&f.columns, "columns", "subscribe to these columns, comma separated: only updates that change one are printed, images projected to them and the key (repeatable)")
	groupFlags(fl, "Range", "from-seq", "to-seq", "net", "net-max-rows", "columns")
	fl.StringVar(&f.format, "format", formatDebeziumJSON, "event format: "+formatDebeziumJSON+" | "+formatDebeziumConnect+" | "+formatDebeziumAvro+
		" (printed as the JSON of the Avro records, read back from the registry; needs --schema-registry-url), or table for a person to read")
	fl.StringVar(&f.registryURL, "schema-registry-url", "", "debezium-avro: the schema registry's URL (Confluent's API); the schemas are registered there as the daemon registers them; ${NAME} in it is expanded")
	fl.StringVar(&f.topic, "topic", kafka.DefaultTopic, "debezium-avro: the topic template the subjects follow (<topic>-key, <topic>-value)")
	fl.BoolVar(&f.withKey, "with-key", false, "print each event's key, a tab, then its value (kcat -K '\\t' reads that)")
	fl.StringVar(&f.pipeline, "name", "icecdc", "pipeline name for source.name")
	fl.StringVar(&f.dbz.TopicPrefix, "topic-prefix", debezium.DefaultConnectPrefix, "debezium-connect-json: start of the schema names (Debezium's topic.prefix)")
	fl.StringVar(&f.dbz.TimePrecisionMode, "time-precision-mode", string(debezium.TimeAdaptive), "debezium-connect-json: Debezium's time.precision.mode: adaptive | adaptive_time_microseconds | connect | isostring")
	fl.StringVar(&f.dbz.DecimalHandlingMode, "decimal-handling-mode", string(debezium.DecimalPrecise), "debezium-connect-json: Debezium's decimal.handling.mode: precise | double | string")
	fl.StringVar(&f.dbz.VariantHandlingMode, "variant-handling-mode", string(debezium.VariantString), "debezium-json: variant.handling.mode: string (a JSON string holding the document) | json (the document inline)")
	fl.BoolVar(&f.unwrap, "unwrap", false, "print flattened records, as Debezium's ExtractNewRecordState (transforms.unwrap) makes them: one value per line, a tombstone as null")
	fl.Var(f.unwrapOpts, "unwrap-option", "with --unwrap: an ExtractNewRecordState option, e.g. delete.tombstone.handling.mode=rewrite or add.fields=op,source.ts_ms (repeatable)")
	fl.StringVarP(&f.config, "config", "c", "", "print what the daemon of this icecdc.yaml delivers: its format, debezium settings (column filters, masks, hashes, truncations, message.key.columns, skipped.operations), transforms, the table's key and columns, and its catalog unless a flag names one; flags given win")
	groupFlags(fl, "Output", "config", "format", "schema-registry-url", "topic", "with-key", "name", "topic-prefix", "time-precision-mode", "decimal-handling-mode", "variant-handling-mode", "unwrap", "unwrap-option")
	fl.Var(&f.maxMemory, "max-memory", "memory budget of one commit's events; past a quarter of it, before images of updates are spilled to a temporary file (bytes, or e.g. 256MiB)")
	fl.StringVar(&f.progress, "progress", "auto", "progress on stderr: auto (when stderr is a terminal) | never")
	groupFlags(fl, "Resources", "max-memory", "progress")
	return cmd
}

func cmdChanges(ctx context.Context, f *changesFlags, stdout, stderr io.Writer, log *slog.Logger) error {
	if f.changed == nil {
		f.changed = func(string) bool { return false }
	}
	cc, err := f.applyConfig(f.changed, log)
	if err != nil {
		return err
	}
	enc, avroOut, err := f.encoder(cc)
	if err != nil {
		return err
	}
	// A debezium-json value with its event id, as the stdout sink writes
	// it; debezium-connect-json and debezium-avro print the Kafka record
	// value, whose id is the record's header.
	pr := &changesPrinter{enc: enc, avroOut: avroOut, tombstones: cc.tombstones(enc), withKey: f.withKey,
		withID: !cdc.EncodingOf(enc).ValuePayload && avroOut == nil}
	pr.shaper, _ = enc.(cdc.RecordShaper)
	cols, err := f.checkRange()
	if err != nil {
		return err
	}
	o := f.o
	o.Props = f.props
	o.MaxMemory = int64(f.maxMemory)
	defer f.limitMemory()()
	src, err := openChanged(ctx, o)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := f.checkHead(src); err != nil {
		return err
	}
	if pr.shaping, pr.sub, err = shapeAndSubscribe(cc, src, cols); err != nil {
		return err
	}
	pr.w = bufio.NewWriterSize(stdout, 1<<16)
	if f.format == "table" {
		pr.tf = debezium.NewTableFormat(pr.w)
	}
	var prog *cdc.Progress
	if f.progress == "auto" {
		prog = cdc.NewProgress(terminal(stderr))
	}
	opts := changes.ChangesOptions{FromSeq: f.from, ToSeq: f.to, NetMaxRows: f.netMax, Log: log, Progress: prog, What: "changes"}
	if f.net {
		opts.NewNet = newNet
	}
	err = changes.ChangesOf(ctx, src, opts, func(c *cdc.Commit) error { return pr.commit(ctx, c) })
	if ferr := pr.w.Flush(); err == nil {
		err = ferr
	}
	return f.explain(ctx, src, err)
}

// encoder is the encoder of --format (nil for table), unwrapped with
// --unwrap, and as --config makes it; with debezium-avro, the printer
// that reads its records back.
func (f *changesFlags) encoder(cc *changesConfig) (enc cdc.Encoder, avroOut *avroPrinter, err error) {
	switch {
	case f.format == formatDebeziumAvro:
		if enc, avroOut, err = f.avroEncoder(cc); err != nil {
			return nil, nil, err
		}
	case f.format != "table":
		if enc, err = newEncoder(f.format, f.dbz, f.pipeline); err != nil {
			return nil, nil, fmt.Errorf("changes: %w; or table", err)
		}
	}
	if len(f.unwrapOpts) > 0 && !f.unwrap {
		return nil, nil, fmt.Errorf("changes: --unwrap-option: only with --unwrap")
	}
	if f.unwrap {
		if enc == nil {
			return nil, nil, fmt.Errorf("changes: --unwrap: format table has no flattened form (%s have)", strings.Join(unwrapFormats, ", "))
		}
		o, err := debezium.ParseUnwrapOptions(f.unwrapOpts)
		if err != nil {
			return nil, nil, fmt.Errorf("changes: --unwrap-option %w", err)
		}
		if len(o.AddHeaders) > 0 {
			return nil, nil, fmt.Errorf("changes: --unwrap-option add.headers: changes prints values, which have no headers")
		}
		if enc, err = debezium.NewUnwrap(enc, o); err != nil {
			return nil, nil, fmt.Errorf("changes: --unwrap-option %w", err)
		}
	}
	if enc, err = cc.encoder(enc); err != nil {
		return nil, nil, err
	}
	return enc, avroOut, nil
}

// avroEncoder is debezium-avro's encoder, registering its schemas in
// the registry of --schema-registry-url (or of --config), and the printer
// that reads its records back from there.
func (f *changesFlags) avroEncoder(cc *changesConfig) (cdc.Encoder, *avroPrinter, error) {
	u, err := expandFlag("schema-registry-url", f.registryURL, os.Getenv)
	if err != nil {
		return nil, nil, fmt.Errorf("changes: %w", err)
	}
	rc := registry.Config{URL: u}
	if u == "" && cc != nil {
		rc = cc.cfg.SchemaRegistry
	}
	if rc.URL == "" {
		return nil, nil, fmt.Errorf("changes: --format %s needs --schema-registry-url: the records carry the ids the registry gives their schemas", formatDebeziumAvro)
	}
	kc := kafka.Config{Topic: f.topic, Pipeline: f.pipeline, Route: cc.route()}
	a, reg, err := newAvroEncoder(rc, f.dbz, f.pipeline, func(t *cdc.TableInfo) (string, error) { return kafka.TopicName(kc, *t) })
	if err != nil {
		return nil, nil, fmt.Errorf("changes: %w", err)
	}
	return a, &avroPrinter{reg: reg, schemas: map[int]*avro.Schema{}}, nil
}

// checkRange checks --net-max-rows, --progress and the range, and
// returns the columns of --columns.
func (f *changesFlags) checkRange() ([]string, error) {
	if f.netMax < 1 {
		return nil, fmt.Errorf("changes: --net-max-rows %d: must be at least 1", f.netMax)
	}
	if f.progress != "auto" && f.progress != "never" {
		return nil, fmt.Errorf("changes: --progress %q: want auto or never", f.progress)
	}
	var cols []string
	for _, c := range f.columns {
		for _, part := range strings.Split(c, ",") {
			if part = strings.TrimSpace(part); part != "" {
				cols = append(cols, part)
			}
		}
	}
	if f.from < 0 || f.to < 0 || (f.to > 0 && f.to <= f.from) {
		return nil, fmt.Errorf("changes: bad range --from-seq %d --to-seq %d", f.from, f.to)
	}
	return cols, nil
}

// limitMemory makes the --max-memory budget the process's too, until the
// function it returns is called: one table, one commit at a time, so that
// the garbage collector works to stay within it rather than let the heap
// double (GOMEMLIMIT, when set, wins).
func (f *changesFlags) limitMemory() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := int64(f.maxMemory)
	if limit == 0 {
		limit = source.DefaultMaxMemory
	}
	old := debug.SetMemoryLimit(max(limit, 64<<20))
	return func() { debug.SetMemoryLimit(old) }
}

// openChanged checks the catalog the options name, then opens the table.
func openChanged(ctx context.Context, o source.Options) (*source.Table, error) {
	if o.MetadataPath == "" {
		if err := source.CheckCatalogType(o.CatalogType); err != nil {
			return nil, fmt.Errorf("changes: --catalog-type %w", err)
		}
		if err := source.CheckCatalogURI(o.CatalogType, cmp.Or(o.CatalogURI, o.Props["uri"])); err != nil {
			return nil, fmt.Errorf("changes: --catalog-uri %w", err)
		}
	}
	if err := source.CheckProps(o.Props); err != nil {
		return nil, fmt.Errorf("changes: --catalog-prop %w", err)
	}
	return source.Open(ctx, o)
}

// checkHead refuses a range past the head: it prints nothing and would
// look like "no changes", as Snapshots refuses a range whose history was
// expired.
func (f *changesFlags) checkHead(src *source.Table) error {
	head, ok := src.Head()
	for _, b := range []struct {
		flag string
		seq  int64
	}{{"--from-seq", f.from}, {"--to-seq", f.to}} {
		switch {
		case b.seq == 0:
		case !ok:
			return fmt.Errorf("changes: %s %d: the table has no snapshot yet", b.flag, b.seq)
		case b.seq > head.SequenceNumber:
			return fmt.Errorf("changes: %s %d is past the branch head (snapshot %d, sequence number %d)", b.flag, b.seq, head.ID, head.SequenceNumber)
		}
	}
	return nil
}

// shapeAndSubscribe is the shaping of --config and the subscription of
// --columns (nil without them). Shaped first, as the daemon shapes: a
// subscription projects the shaped images.
func shapeAndSubscribe(cc *changesConfig, src *source.Table, cols []string) (cdc.Stage, *subscribe.Subscription, error) {
	shaping, err := cc.shaper(src.Info())
	if err != nil {
		return nil, nil, err
	}
	ex, _ := shaping.(cdc.Excluder)
	for _, col := range cols {
		if ex != nil && ex.Excludes(col) {
			return nil, nil, fmt.Errorf("changes: --columns %q: a column debezium.column.include.list or column.exclude.list of --config leaves out", col)
		}
	}
	var sub *subscribe.Subscription
	if len(cols) > 0 {
		info := src.Info()
		if sub, err = subscribe.New(info.Namespace+"."+info.Name, info.Schema, cols); err != nil {
			return nil, nil, fmt.Errorf("changes: --%w", err)
		}
	}
	return shaping, sub, nil
}

// explain adds to err what to do about it: a shorter range, or where the
// retained history starts.
func (f *changesFlags) explain(ctx context.Context, src *source.Table, err error) error {
	if errors.Is(err, changes.ErrNetTooLarge) {
		err = fmt.Errorf("changes --net: %w; raise --net-max-rows (memory grows with it) or print a shorter range", err)
	}
	if errors.Is(err, cdc.ErrHistory) {
		if snaps, whole, rerr := src.Retained(ctx); rerr == nil && !whole && len(snaps) > 0 && snaps[0].SequenceNumber-1 > f.from {
			err = fmt.Errorf("%w; --from-seq %d prints the retained history", err, snaps[0].SequenceNumber-1)
		}
	}
	return err
}

// changesPrinter writes the events of changes to stdout.
type changesPrinter struct {
	w       *bufio.Writer
	tf      *debezium.TableFormat // --format table: the events as a table, no encoder
	enc     cdc.Encoder
	avroOut *avroPrinter            // debezium-avro: the records as JSON
	shaper  cdc.RecordShaper        // the encoder's, when it drops some records
	shaping cdc.Stage               // of --config
	sub     *subscribe.Subscription // of --columns
	// withKey prints each event's key and a tab first; withID adds the
	// event id to a debezium-json value; tombstones prints a Kafka
	// tombstone after a delete.
	withKey, withID, tombstones bool
	buf                         []byte
}

// commit prints c's events, a batch at a time.
func (p *changesPrinter) commit(ctx context.Context, c *cdc.Commit) error {
	now := time.Now().UnixMilli()
	return c.EachBatch(ctx, 0, func(evs []cdc.Event) error { return p.batch(ctx, c, evs, now) })
}

// batch prints a batch of c's events, shaped and projected as the daemon
// delivers them.
func (p *changesPrinter) batch(ctx context.Context, c *cdc.Commit, evs []cdc.Event, now int64) error {
	if p.shaping != nil {
		sc, sevs, err := p.shaping.Apply(c, evs)
		if err != nil {
			return fmt.Errorf("table %s.%s: debezium.%w", c.Table.Namespace, c.Table.Name, err)
		}
		c, evs = sc, sevs
	}
	if p.sub != nil {
		var err error
		if c, evs, err = p.sub.Apply(c, evs); err != nil {
			return err
		}
	}
	if p.tf != nil {
		if err := p.tf.Write(c, evs); err != nil {
			return err
		}
		return p.w.Flush() // a person is reading: show each commit as it comes
	}
	for i := range evs {
		if p.shaper != nil && !p.shaper.Keep(c, &evs[i]) {
			continue
		}
		if err := p.event(ctx, c, &evs[i], now); err != nil {
			return err
		}
	}
	return nil
}

// event prints one event as a line: its key and a tab with --with-key,
// then its value (null for a tombstone), then the Kafka tombstone after a
// delete when the daemon would send one.
func (p *changesPrinter) event(ctx context.Context, c *cdc.Commit, e *cdc.Event, now int64) error {
	var err error
	buf := p.buf[:0]
	if p.withKey {
		// Both formats write JSON on one line, so a tab can only be the
		// separator.
		if buf, err = p.enc.AppendKey(buf, c, e); err != nil {
			return err
		}
		if buf, err = p.avroOut.render(ctx, buf, 0); err != nil {
			return err
		}
		buf = append(buf, '\t')
	}
	n := len(buf)
	keyEnd := n // the key and its tab, or nothing
	if buf, err = p.enc.AppendValue(buf, c, e, now); err != nil {
		return err
	}
	if len(buf) == n {
		buf = append(buf, "null"...) // a tombstone
	} else if buf, err = p.avroOut.render(ctx, buf, n); err != nil {
		return err
	} else if p.withID {
		buf = cdc.Encoding{}.AddEventID(buf, n, cdc.EventID(c.Table.UUID, c.Snapshot.SequenceNumber, e.RowID, e.Op))
	}
	buf = append(buf, '\n')
	if p.tombstones && e.Op == cdc.OpDelete {
		// The Kafka tombstone after the delete: its key, no value.
		buf = append(buf, buf[:keyEnd]...)
		buf = append(buf, "null\n"...)
	}
	p.buf = buf
	_, err = p.w.Write(buf)
	return err
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func (l *listFlag) Type() string { return "list" }

// terminal returns w when it is a terminal, else nil: progress is for a
// person watching, never for a log file or a pipe.
func terminal(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return f
	}
	return nil
}

// avroPrinter shows records of debezium-avro to a person: each record is
// read back with the schema the registry holds under the id it carries,
// and printed as that Avro value's JSON.
type avroPrinter struct {
	reg     *registry.Client
	schemas map[int]*avro.Schema
}

// render replaces the record at buf[from:] with its JSON; a nil printer
// leaves buf as it is.
func (p *avroPrinter) render(ctx context.Context, buf []byte, from int) ([]byte, error) {
	if p == nil {
		return buf, nil
	}
	rec := buf[from:]
	if len(rec) < 5 || rec[0] != 0 {
		return buf, fmt.Errorf("changes: a record not in the wire format")
	}
	id := int(binary.BigEndian.Uint32(rec[1:5]))
	// Errors name the registry (without credentials), the id and the
	// subject the id was registered under.
	what := fmt.Sprintf("schema registry %s: schema id %d", p.reg.URL(), id)
	subject, own, registered := p.reg.Registered(id)
	if registered {
		what += " (subject " + subject + ")"
	}
	sch, ok := p.schemas[id]
	if !ok {
		text, err := p.reg.Schema(ctx, id)
		if err != nil {
			if registered {
				return buf, fmt.Errorf("changes: %w (subject %s)", err, subject)
			}
			return buf, fmt.Errorf("changes: %w", err)
		}
		if sch, err = avro.Parse(text); err != nil {
			return buf, fmt.Errorf("changes: %s: %w", what, err)
		}
		if registered {
			// The registry may normalize the text it keeps: compare
			// Avro's canonical forms.
			mine, err := avro.Parse(own)
			if err != nil || !bytes.Equal(mine.Canonical(), sch.Canonical()) {
				return buf, fmt.Errorf("changes: %s: the registry answers another schema than the one registered under that id", what)
			}
		}
		p.schemas[id] = sch
	}
	var v any
	rest, err := sch.Decode(rec[5:], &v)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes left after the record: not this schema's", len(rest))
	}
	if err != nil {
		return buf, fmt.Errorf("changes: %s: decode a record: %w", what, err)
	}
	out, err := sch.EncodeJSON(v)
	if err != nil {
		return buf, fmt.Errorf("changes: schema id %d: %w", id, err)
	}
	return append(buf[:from], out...), nil
}
