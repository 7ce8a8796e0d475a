package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/uptrace/bun"
	"go.opentelemetry.io/otel/trace"

	"github.com/icecdc/icecdc/catalogwatch"
	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/metrics"
	"github.com/icecdc/icecdc/netchange"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/shape"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/sinks/sinkkind"
	"github.com/icecdc/icecdc/source"
	"github.com/icecdc/icecdc/state"
	"github.com/icecdc/icecdc/subscribe"
)

func runCommand(e *cli) *cobra.Command {
	var (
		f           configFlags
		adopt, once bool
	)
	cmd := &cobra.Command{
		Use:   "run -c FILE [flags]",
		Short: "run the daemon: follow the configured tables and deliver their changes to the sink",
		Long: `Run the daemon: follow every configured table, deliver each new commit's change events to the sink,
and checkpoint what the sink confirmed. The first SIGINT or SIGTERM drains and exits 0 (--once: 1
unless every table reached its head); a second exits at once.`,
		Example: `  icecdc run -c icecdc.yaml
  icecdc run -c icecdc.yaml --sink stdout --state /tmp/try.db    # try a config without touching its sink
  icecdc run -c icecdc.yaml --once                              # deliver up to each table's head, then exit
  icecdc run -c icecdc.yaml --schema-registry-url http://localhost:8081   # debezium-avro's registry`,
		Args:                  noArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.load()
			if err != nil {
				return err
			}
			return cmdRun(cmd.Context(), cfg, once, adopt, e.stdout, e.stderr)
		},
	}
	f.register(cmd, overrideListen|overrideState|overrideSink|overrideRegistry)
	fl := cmd.Flags()
	fl.BoolVar(&once, "once", false, "deliver every table up to its current head, then exit (1 when a table could not be read)")
	fl.BoolVar(&adopt, "adopt-state", false, "accept a state file that is empty or holds only other pipelines' checkpoints, "+
		"and start every table from its configured start (remove the flag afterwards)")
	groupFlags(fl, "Run", "once", "adopt-state")
	return cmd
}

func cmdRun(ctx context.Context, cfg *Config, once, adopt bool, out io.Writer, logOut io.Writer) (err error) {
	log := slog.New(slog.NewJSONHandler(logOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
	defer routeLibraryLogs(log)()
	defer daemonGC()()
	if cfg.Cluster.Enabled() {
		if adopt {
			return fmt.Errorf("run: --adopt-state has no use in cluster mode: the checkpoints are in the kafka checkpoint topic, not a state file")
		}
		reg := newRegistry()
		tel, err := startTelemetry(ctx, cfg, osTelemetryEnv(), reg, log)
		if err != nil {
			return err
		}
		defer stopTelemetry(tel, log)
		d := &runBase{cfg: cfg, log: log, reg: reg, metrics: metrics.NewMetricsPerTable(reg, cfg.Metrics.PerTable), tracer: tel.Tracer}
		return runCluster(ctx, d, out)
	}
	store, err := state.Open(cfg.State.Path, state.Options{Pipeline: cfg.Name, Adopt: adopt})
	if err != nil {
		return err
	}
	defer store.Close()
	logOpened(log, cfg, store.Opened(), adopt)
	reg := newRegistry()
	m := metrics.NewMetricsPerTable(reg, cfg.Metrics.PerTable)
	tel, err := startTelemetry(ctx, cfg, osTelemetryEnv(), reg, log)
	if err != nil {
		return err
	}
	defer stopTelemetry(tel, log) // after the sink closed: the last spans end there
	d := &runBase{cfg: cfg, log: log, reg: reg, metrics: m, tracer: tel.Tracer}
	enc, err := runEncoder(cfg)
	if err != nil {
		return err
	}
	if k, ok := cfg.Sink.kind(); ok && k.Encoder != nil {
		enc = k.Encoder() // the sink takes rows in its own form
	}
	sink, err := buildSink(cfg, out, log, m, enc)
	if err != nil {
		return err
	}
	r := &daemonRun{runBase: d, once: once, adopt: adopt, store: store}
	defer func() {
		closeSink(sink, &err)
		if r.started {
			log.Info("icecdc stopped", "pipeline", cfg.Name)
		}
	}()
	// Heartbeats go to their own topic, which the router leaves alone.
	stopHeartbeats, err := startHeartbeats(ctx, cfg, debezium.Unrouted(enc), sink, log)
	if err != nil {
		return err
	}
	defer stopHeartbeats() // before the sink closes: a webhook ping uses it
	r.cat = openCatalog(cfg, log)
	defer r.cat.Close()
	p := d.pipeline(enc, &health.Health{Log: log, Sink: cfg.Sink.Type})
	p.Sink, p.Store, p.Once = sink, store, once
	p.Progress = cdc.NewProgress(terminal(logOut))
	p.Ready = make(chan struct{})
	r.p = p
	// Served while the tables are still being looked for: /healthz
	// answers, /readyz says "starting".
	if cfg.HTTP.Listen != "" {
		srv, err := serveHTTP(cfg.HTTP, log, endpoints{reg: reg, ready: p.Ready, health: p.Health,
			status:   func() (any, error) { return tableStatuses(store, cfg.Name, p.Health) },
			snapshot: snapshotHandler(cfg.HTTP.Token, p)})
		if err != nil {
			return err
		}
		defer srv.stop()
	}
	return r.follow(ctx)
}

// runBase is what `icecdc run` sets up first, in either mode: the
// config, the log, and the metrics and traces.
type runBase struct {
	cfg     *Config
	log     *slog.Logger
	reg     *prometheus.Registry
	metrics *metrics.Metrics
	tracer  trace.TracerProvider
}

// newRegistry is the daemon's metrics registry, with the Go runtime's and
// the process's collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// runEncoder is the daemon's encoder: the config's format, with its
// transforms and routes.
func runEncoder(cfg *Config) (cdc.Encoder, error) {
	enc, err := newEncoder(cfg.Format, cfg.Debezium, cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if enc, err = cfg.transforms().apply(enc); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return routeEncoder(cfg, enc), nil
}

// pipeline is a pipeline of d's config that encodes with enc and reports
// to health; its tables, sink and store are the caller's to set.
func (d *runBase) pipeline(enc cdc.Encoder, health *health.Health) *cdc.Pipeline {
	cfg := d.cfg
	p := &cdc.Pipeline{
		Name:      cfg.Name,
		Encoder:   enc,
		Poll:      cfg.Poll.Interval,
		MaxPoll:   cfg.Poll.MaxInterval,
		ChunkSize: cfg.Chunk, ChunkBytes: int(cfg.ChunkBytes),
		Log:     d.log,
		Metrics: d.metrics,
		Health:  health,
		Tracer:  d.tracer,
		// Checked by validate.
		HoldInterval:  cfg.HoldInterval,
		SchemaChanges: cfg.Debezium.IncludeSchemaChanges,
		// The language of the signals' additional-conditions.
		RowFilters: rowfilter.Language{},
		NewNet:     newNet,
	}
	p.OnHistoryLoss, _ = cdc.ParseHistoryLossPolicy(cfg.OnHistoryLoss)
	return p
}

// daemonRun is `icecdc run` outside cluster mode, as its steps build it.
type daemonRun struct {
	*runBase
	once, adopt bool
	store       *state.Store
	cat         *source.Catalog
	p           *cdc.Pipeline
	started     bool // "icecdc started" was logged: "icecdc stopped" is due
}

// follow waits for the tables, then runs the pipeline and its signal
// channel until ctx ends, or with once until every table reached its head.
func (r *daemonRun) follow(ctx context.Context) (err error) {
	cfg, log, p := r.cfg, r.log, r.p
	if r.once {
		// A batch job does not wait for a namespace's tables to appear.
		if _, err := listTableSources(ctx, cfg, log); err != nil {
			return fmt.Errorf("run --once: %w", err)
		}
	}
	if p.Tables, err = waitForTables(ctx, cfg, log, r.store, r.cat); err != nil || p.Tables == nil {
		if err == nil && r.once {
			err = errOnceInterrupted
		}
		return err // nil: stopped by a signal while waiting
	}
	if err := markUnexpectedStarts(r.store, cfg.Name, p.Tables, r.adopt); err != nil {
		return err
	}
	// The catalog's bulk change checks wake the tables that changed; the
	// others wait up to poll.max_interval (see cdc.Watched).
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go catalogwatch.WatchCatalog(wctx, r.cat, cfg.Poll.Interval, cfg.Poll.MaxInterval, p.Health, log)
	log.Info("icecdc started", "pipeline", cfg.Name, "tables", len(p.Tables), "sink", cfg.Sink.Type, "format", cfg.Format, "state", cfg.State.Path, "version", version)
	r.started = true
	notifier, closeNotifier, err := newNotifier(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeNotifier()
	if notifier != nil {
		p.Notify = notifier.Notice
	}
	sctx, stopSignals := context.WithCancel(ctx) // ends with the run, whichever way
	waitSignals, err := startSignals(sctx, cfg, log, signalTargets{target: p, tables: tableNames(p.Tables), notify: notifier}, p.Serving())
	if err != nil {
		stopSignals()
		return err
	}
	defer func() { stopSignals(); waitSignals() }()
	runErr := p.Run(ctx)
	if r.once && runErr == nil && ctx.Err() != nil {
		runErr = errOnceInterrupted
	}
	return runErr
}

// sinkCloseTimeout bounds the flush of what the sink still holds when the
// daemon stops.
const sinkCloseTimeout = 30 * time.Second

// daemonGOGC is the daemon's GOGC unless the environment sets one (as
// Prometheus does): the heap grows to 1.75 times what is live between
// collections, not twice. A daemon following 10,000 tables keeps its
// RSS within 256 MiB so, for 5–10% more CPU in its first delivery.
const daemonGOGC = 75

// daemonGC sets the daemon's GOGC, unless GOGC is set, and returns what
// restores the one before.
func daemonGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(daemonGOGC)
	return func() { debug.SetGCPercent(old) }
}

// closeSink is the one way the daemon closes its sink, on every path out
// of a run: its error becomes *err unless the run already failed.
func closeSink(sink cdc.Sink, err *error) {
	ctx, cancel := context.WithTimeout(context.Background(), sinkCloseTimeout)
	defer cancel()
	if cerr := sink.Close(ctx); cerr != nil && *err == nil {
		*err = fmt.Errorf("close sink: %w", cerr)
	}
}

// routeLibraryLogs sends what libraries print with Go's log package
// (iceberg-go's catalogs warn that way) or through slog's default logger,
// and bun's warnings, into the daemon's JSON log, until the returned
// function puts them back: a line on stderr that is not JSON breaks the
// log's readers.
func routeLibraryLogs(log *slog.Logger) (restore func()) {
	w, flags, def := stdlog.Writer(), stdlog.Flags(), slog.Default()
	level := slog.SetLogLoggerLevel(slog.LevelWarn)
	slog.SetDefault(log)
	bun.SetLogger(slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	return func() {
		bun.SetLogger(nil)
		slog.SetDefault(def)
		slog.SetLogLoggerLevel(level)
		stdlog.SetOutput(w)
		stdlog.SetFlags(flags)
	}
}

// errOnceInterrupted ends a run --once stopped by a signal: it did not do
// its job, whatever the tables delivered before.
var errOnceInterrupted = errors.New("run --once: interrupted before every table reached its head; a new run resumes from the checkpoints")

// logOpened says what --adopt-state did: it starts every table over, which
// must not go unnoticed, and it should not stay in a unit file after use;
// and that a state file others could read was tightened.
func logOpened(log *slog.Logger, cfg *Config, o state.Opened, adopt bool) {
	switch {
	case o.Tightened:
		log.Warn("the state file was readable by other users; it is now the owner's only", "state", cfg.State.Path,
			"mode", fmt.Sprintf("%04o", o.LooseMode), "now", fmt.Sprintf("%04o", o.LooseMode&^0o077))
	case o.LooseMode != 0:
		log.Warn("the state file is readable by other users and cannot be changed by this process: chmod go= it", "state", cfg.State.Path,
			"mode", fmt.Sprintf("%04o", o.LooseMode))
	}
	switch {
	case o.Adopted:
		args := []any{"state", cfg.State.Path, "pipeline", cfg.Name}
		if len(o.Others) > 0 {
			args = append(args, "checkpoints_of", o.Others)
		}
		if exactlyOnce(cfg) {
			args = append(args, "kafka", "checkpoint records in the kafka checkpoint topic still apply; 'icecdc reset --all' deletes them")
		}
		log.Warn("--adopt-state: the state file held no checkpoints of this pipeline and is now its own; every table starts from its configured start", args...)
	case adopt:
		log.Info("--adopt-state: nothing to adopt, the state file is already this pipeline's; the flag can go", "state", cfg.State.Path)
	}
}

// markUnexpectedStarts makes the pipeline warn when it starts a table from
// its configured start although the state file holds checkpoints of the
// pipeline's other tables: right for a table just added to the
// configuration (or reset), but also what a table that lost its
// checkpoint (a renamed table, a damaged key) looks like.
//
// When the file also holds checkpoints of tables the configuration does
// not list, a configured table without one may be that table renamed (or
// its key damaged): the run is refused unless adopt says to go on.
func markUnexpectedStarts(store *state.Store, pipeline string, tables []cdc.TableSpec, adopt bool) error {
	stored, err := store.Tables(pipeline)
	if err != nil || len(stored) == 0 {
		return err
	}
	names := make([]string, len(stored))
	has := map[string]bool{}
	for i, st := range stored {
		names[i], has[st.Table] = st.Table, true
	}
	configured := map[string]bool{}
	var missing, orphans []string
	for _, t := range tables {
		configured[t.Name] = true
		if !has[t.Name] {
			missing = append(missing, t.Name)
		}
	}
	for _, st := range stored {
		if !configured[st.Table] {
			orphans = append(orphans, fmt.Sprintf("%q", st.Table))
		}
	}
	if len(missing) > 0 && len(orphans) > 0 && !adopt {
		return fmt.Errorf("state %s holds checkpoints of %s, which the configuration does not list, and none of %s, which it does: "+
			"was a table renamed, or a key of the file damaged? Restore the name to resume it; 'icecdc reset --table NAME' forgets a table that was removed; "+
			"'icecdc run --adopt-state' starts %s from the configured start",
			store.Path(), strings.Join(orphans, ", "), strings.Join(missing, ", "), strings.Join(missing, ", "))
	}
	if len(names) > 5 {
		names = append(names[:5], fmt.Sprintf("and %d more", len(stored)-5))
	}
	why := fmt.Sprintf("the state file holds checkpoints of other tables of the pipeline (%s) but none of this one: "+
		"right for a table just added to the configuration or reset, wrong for one that lost its checkpoint", strings.Join(names, ", "))
	for i := range tables {
		if !has[tables[i].Name] {
			tables[i].WarnStart = why
		}
	}
	return nil
}

func exactlyOnce(cfg *Config) bool {
	return cfg.Sink.caps().ExactlyOnce && cfg.Sink.Kafka.Delivery == kafka.ExactlyOnce
}

// buildSink builds the configured sink; a sink with topics gets the
// topics and routes the format adds to its section.
func buildSink(cfg *Config, out io.Writer, log *slog.Logger, m *metrics.Metrics, enc cdc.Encoder) (cdc.Sink, error) {
	sc := cfg.Sink
	if sc.caps().Topics {
		kc, err := kafkaSinkConfig(cfg, enc)
		if err != nil {
			return nil, err
		}
		sc.Kafka = kc
	}
	k, ok := sc.kind()
	if !ok {
		return nil, fmt.Errorf("config: sink.type %q: want %s", cfg.Sink.Type, sc.kindNames(nil))
	}
	return k.New(sinkkind.Env{Pipeline: cfg.Name, Log: log, Stdout: out, Encoding: cdc.EncodingOf(enc), Retried: retriesCounter(k.Name, m),
		Catalog: sourceOptions(cfg, log)})
}

// kafkaSinkConfig is the Kafka sink's configuration with the topics the
// format adds: what buildSink's sink and, in cluster mode, each table's
// transactional sink are made from.
func kafkaSinkConfig(cfg *Config, enc cdc.Encoder) (kafka.Config, error) {
	kc := cfg.Sink.Kafka
	if err := cfg.Debezium.kafkaTopics(&kc, enc, cfg.Format); err != nil {
		return kafka.Config{}, err
	}
	unwrapKafka(&kc, enc)
	kc.Encoding = cdc.EncodingOf(enc)
	if r, ok := enc.(*debezium.Routed); ok {
		kc.Route = r.Router.Topic
	}
	return kc, nil
}

// tableSource is one table to follow: its spec, whose Source is made
// from opts when the table is opened.
type tableSource struct {
	spec cdc.TableSpec
	opts source.Options
}

// listTableSources lists every configured table, expanding namespace.*
// through the catalog. log (nil: slog's default) receives the sources'
// lifecycle messages.
func listTableSources(ctx context.Context, cfg *Config, log *slog.Logger) ([]tableSource, error) {
	base := sourceOptions(cfg, log)
	keys, _ := cfg.Debezium.keyColumns() // checked by validate
	sh, _ := cfg.Debezium.shaping()      // checked by validate
	var out []tableSource
	for _, t := range cfg.Tables {
		start, err := cdc.ParseStart(t.Start)
		if err != nil {
			return nil, err
		}
		names := []string{t.Name}
		if ns, ok := strings.CutSuffix(t.Name, ".*"); ok && t.Metadata == "" {
			if names, err = listTables(ctx, base, ns); err != nil {
				return nil, err
			}
		}
		for _, name := range names {
			o := base
			o.Table, o.Branch, o.MetadataPath, o.KeyFields = name, t.Branch, t.Metadata, t.Key
			if k := keyFor(keys, name); k != nil {
				if len(t.Key) > 0 {
					return nil, fmt.Errorf("config: debezium.message.key.columns: table %s: its key is set by tables[].key too; set one of them", name)
				}
				o.KeyFields = k
			}
			o.MaxMemory = int64(t.MaxMemory)
			out = append(out, tableSource{spec: cdc.TableSpec{Name: name, Start: start, Hold: t.Hold, Net: t.Net,
				NetMaxRows: cfg.NetMaxRows, Policies: policies(sh, t.Columns)}, opts: o})
		}
	}
	return out, nil
}

// newNet is the reducer of net changes, for the daemon's tables with net
// and `changes --net`.
func newNet() cdc.NetChanges { return netchange.New() }

// policies are a table's per-event policies in the order they apply: the
// shaping, then the column subscription, which projects the shaped images.
func policies(sh *shape.Shaping, cols []string) []cdc.Policy {
	var out []cdc.Policy
	if sh != nil { // a nil *shape.Shaping would be a Policy holding a nil pointer
		out = append(out, sh)
	}
	if len(cols) > 0 {
		out = append(out, subscribe.Columns(cols))
	}
	return out
}

// sourceOptions are the options every table's source shares: where the
// catalog is and how the tables' files are read.
func sourceOptions(cfg *Config, log *slog.Logger) source.Options {
	return source.Options{
		CatalogName: cfg.Catalog.Name, CatalogType: cfg.Catalog.Type, CatalogURI: cfg.Catalog.URI,
		Warehouse: cfg.Catalog.Warehouse, Props: cfg.Catalog.Properties, MaxHeldRows: cfg.MaxHeldRows,
		AllowedLocations: cfg.AllowedLocations, Log: log, IOConcurrency: cfg.IO.Concurrency,
		MaxResponseBytes: int64(cfg.Catalog.MaxResponseBytes),
	}
}

// openCatalog returns the daemon's one catalog, shared by every table's
// source; the caller closes it when the tables are done.
func openCatalog(cfg *Config, log *slog.Logger) *source.Catalog {
	return source.NewCatalog(sourceOptions(cfg, log), cfg.Catalog.Concurrency)
}

// buildTables opens every configured table, expanding namespace.* through
// the catalog, all through one catalog; closeAll closes the tables and
// then it. log (nil: slog's default) receives the sources' lifecycle
// messages.
func buildTables(ctx context.Context, cfg *Config, log *slog.Logger) (_ []cdc.TableSpec, closeAll func(), _ error) {
	ts, err := listTableSources(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	cat := openCatalog(cfg, log)
	for i := range ts {
		ts[i].opts.Catalog = cat
	}
	specs, err := openTables(ts)
	if err != nil {
		cat.Close()
		return nil, nil, err
	}
	return specs, func() {
		for _, sp := range specs {
			sp.Source.Close()
		}
		cat.Close()
	}, nil
}

func openTables(ts []tableSource) ([]cdc.TableSpec, error) {
	var specs []cdc.TableSpec
	for _, t := range ts {
		// Loaded by the table's follower, which retries: one table that
		// cannot be loaded at start does not keep the others from running.
		src, err := source.New(t.opts)
		if err != nil {
			for _, sp := range specs {
				sp.Source.Close()
			}
			return nil, err
		}
		spec := t.spec
		spec.Source = src
		specs = append(specs, spec)
	}
	return specs, nil
}

func listTables(ctx context.Context, o source.Options, ns string) ([]string, error) {
	names, err := source.ListTables(ctx, o, ns)
	if err == nil && len(names) == 0 {
		err = fmt.Errorf("namespace %s has no tables", ns)
	}
	if err != nil {
		return nil, &unlistedError{pattern: ns + ".*", err: err}
	}
	return names, nil
}

// unlistedError is a namespace pattern whose tables could not be listed,
// or that matches none yet: the daemon waits for them.
type unlistedError struct {
	pattern string
	err     error
}

func (e *unlistedError) Error() string { return e.err.Error() }
func (e *unlistedError) Unwrap() error { return e.err }

// waitForTables is buildTables for the daemon: a namespace pattern that
// matches no table yet, or whose catalog cannot list it yet (the namespace
// is created later, the catalog starts later), is listed again every poll
// interval until it does, with a warning at once and then at most every
// waitLogInterval, instead of ending the daemon (which a supervisor would
// restart in a loop). It returns nil tables when ctx ends first. With a
// store, each table keeps its data-file index in it, next to its
// checkpoint. Every table loads through cat.
func waitForTables(ctx context.Context, cfg *Config, log *slog.Logger, store *state.Store, cat *source.Catalog) ([]cdc.TableSpec, error) {
	ts, err := waitForTableSources(ctx, cfg, log)
	if err != nil || ts == nil {
		return nil, err
	}
	for i := range ts {
		ts[i].opts.Catalog = cat
		if store != nil {
			ts[i].opts.FileIndex = store.FileIndex(cfg.Name, ts[i].spec.Name)
		}
	}
	return openTables(ts)
}

// waitForTableSources is waitForTables without opening the sources.
func waitForTableSources(ctx context.Context, cfg *Config, log *slog.Logger) ([]tableSource, error) {
	var since, logged time.Time
	for {
		tables, err := listTableSources(ctx, cfg, log)
		var ue *unlistedError
		if !errors.As(err, &ue) {
			if err == nil && !since.IsZero() {
				log.Info("tables found; following them", "pattern", cfgPatterns(cfg), "tables", len(tables),
					"waited", time.Since(since).Round(time.Millisecond).String())
			}
			return tables, err
		}
		switch now := time.Now(); {
		case since.IsZero():
			since, logged = now, now
			log.Warn("no table to follow yet; listing again every poll interval", "pattern", ue.pattern, "err", err)
		case now.Sub(logged) >= waitLogInterval:
			logged = now
			log.Warn("still no table to follow", "pattern", ue.pattern, "for", now.Sub(since).Round(time.Second).String(), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(cfg.Poll.Interval):
		}
	}
}

// waitLogInterval spaces the warnings of waitForTables.
var waitLogInterval = 30 * time.Second

// cfgPatterns lists the configured namespace patterns.
func cfgPatterns(cfg *Config) []string {
	var out []string
	for _, t := range cfg.Tables {
		if strings.HasSuffix(t.Name, ".*") && t.Metadata == "" {
			out = append(out, t.Name)
		}
	}
	return out
}

// Timeouts of the HTTP listener: every request is small and every answer
// quick, but for POST /snapshot, which waits for its read to start and
// lifts its own write deadline once authenticated. Whoever can reach the
// port holds a connection this long at most.
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 10 * time.Second
	httpWriteTimeout      = 30 * time.Second
	httpIdleTimeout       = 60 * time.Second
	httpShutdownTimeout   = 5 * time.Second
)

// httpServer is the daemon's HTTP listener.
type httpServer struct {
	srv    *http.Server
	cancel context.CancelFunc
}

// stop ends the listener: in-flight requests get httpShutdownTimeout to
// finish (a waiting POST /snapshot is told to give up), then what is left
// is closed.
func (h *httpServer) stop() {
	h.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), httpShutdownTimeout)
	defer cancel()
	if err := h.srv.Shutdown(ctx); err != nil {
		h.srv.Close()
	}
}

// endpoints are what the daemon's HTTP server answers from.
type endpoints struct {
	reg      *prometheus.Registry
	ready    <-chan struct{} // closed once the pipeline is ready: /readyz
	health   *health.Health
	status   func() (any, error) // /status's answer
	snapshot http.Handler        // POST /snapshot
}

// serveHTTP serves /metrics, /healthz, /readyz and /status on cfg.Listen.
// /readyz answers 503 with the reasons while a table is failing or
// stopped. With a token, /status and /metrics want it too (as a bearer
// token; Prometheus sends one from its scrape config's authorization);
// /healthz and /readyz stay open for probes. The server's own messages go
// to log.
func serveHTTP(cfg HTTPConfig, log *slog.Logger, ep endpoints) (*httpServer, error) {
	ready, health, status := ep.ready, ep.health, ep.status
	guard := bearer(cfg.Token)
	mux := http.NewServeMux()
	mux.Handle("/snapshot", ep.snapshot)
	mux.Handle("/metrics", guard(promhttp.HandlerFor(ep.reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)})))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		// A paused on-demand snapshot is asked for: ready, and said.
		paused := pausedNotes(health)
		if problems := health.Problems(); len(problems) > 0 {
			http.Error(w, strings.Join(append(problems, paused...), "\n"), http.StatusServiceUnavailable)
			return
		}
		select {
		case <-ready:
			io.WriteString(w, strings.Join(append([]string{"ready"}, paused...), "\n")+"\n")
		default:
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
	})
	mux.Handle("/status", guard(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ts, err := status()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(ts)
	})))
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("http.listen %s: %w", cfg.Listen, err)
	}
	if ip, ok := ln.Addr().(*net.TCPAddr); ok && !ip.IP.IsLoopback() && cfg.Token == "" {
		log.Warn("http.listen is reachable from other hosts and http.token is not set: anyone who reaches it reads /status and /metrics; set http.token, or listen on 127.0.0.1",
			"listen", cfg.Listen)
	}
	limit := limitConns(ln, cmp.Or(cfg.MaxConnections, DefaultHTTPMaxConnections), log)
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           probesOnly(mux),
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
		ConnState:         limit.ConnState,
		ConnContext:       limit.ConnContext,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := srv.Serve(limit); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "listen", cfg.Listen, "err", err)
		}
	}()
	return &httpServer{srv: srv, cancel: cancel}, nil
}

// pausedNotes are /readyz's lines on paused tables: at most 10, and
// how many more.
func pausedNotes(health *health.Health) []string {
	notes := health.PausedNotes()
	if len(notes) > 10 {
		notes = append(notes[:10:10], fmt.Sprintf("and %d more tables with a paused on-demand snapshot", len(notes)-10))
	}
	return notes
}

// bearer makes a handler want the token as a bearer token; without a
// token it lets every request through.
func bearer(token string) func(http.Handler) http.Handler {
	if token == "" {
		return func(h http.Handler) http.Handler { return h }
	}
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !tokenMatches(r, token) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="icecdc"`)
				http.Error(w, "missing or wrong bearer token (http.token)", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// tokenMatches compares the request's bearer token with token in
// constant time: hashed first, so that it takes as long for any length.
func tokenMatches(r *http.Request, token string) bool {
	given, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	got, want := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(token))
	return ok && subtle.ConstantTimeCompare(got[:], want[:]) == 1
}
