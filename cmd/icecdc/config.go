package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cluster"
	"github.com/icecdc/icecdc/metrics"
	"github.com/icecdc/icecdc/registry"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/sinks/sinkkind"
	"github.com/icecdc/icecdc/source"
)

// Upper bounds of settings that size what a table holds or runs at once.
const (
	maxChunk         = 1_000_000
	maxChunkBytes    = 256 << 20
	maxIOConcurrency = 1024
	// More connections than this defeat the cap's purpose, which is to
	// leave the process its file descriptors.
	maxHTTPConnections = 4096
)

// defaultPollMaxInterval is poll.max_interval when unset: an idle table
// of a catalog without bulk change checks is loaded twice a minute.
const defaultPollMaxInterval = 30 * time.Second

// Config is icecdc.yaml (docs/configuration.md).
type Config struct {
	Name    string        `yaml:"name"`
	Catalog CatalogConfig `yaml:"catalog"`
	Tables  []TableConfig `yaml:"tables"`
	Poll    struct {
		Interval time.Duration `yaml:"interval"`
		// MaxInterval is the longest wait between two checks of a table
		// that does not change (default 30s, at least Interval).
		MaxInterval time.Duration `yaml:"max_interval"`
	} `yaml:"poll"`
	// Format is the events' format: debezium-json, or
	// debezium-connect-json (the default on Kafka).
	Format   string         `yaml:"format"`
	Debezium DebeziumConfig `yaml:"debezium"`
	// Transforms is Debezium Server's transforms block: unwrap flattens
	// the events (unwrap.go).
	Transforms TransformsConfig `yaml:"transforms"`
	// transformOrder is the order the transforms block lists its
	// transforms in, the order they run in (decodeConfig).
	transformOrder []string
	// lines are the settings' line numbers in the file (see locate).
	lines map[string]int
	// SchemaRegistry is the registry of the debezium-avro format's schemas.
	SchemaRegistry registry.Config `yaml:"schema_registry"`
	Sink           SinkConfig      `yaml:"sink"`
	State          struct {
		Path string `yaml:"path"`
	} `yaml:"state"`
	HTTP HTTPConfig `yaml:"http"`
	// OnHistoryLoss is stop (default) or resync (docs/delivery.md).
	OnHistoryLoss string `yaml:"on_history_loss"`
	// HoldInterval is the least time between two moves of a table's
	// retention hold (default 1m).
	HoldInterval time.Duration `yaml:"hold_interval"`
	// Chunk is the most events per batch (and per checkpoint), default
	// 2048; ChunkBytes about the most bytes, default 1MiB.
	Chunk      int      `yaml:"chunk"`
	ChunkBytes byteSize `yaml:"chunk_bytes"`
	// MaxHeldRows is how many inserted rows a commit may hold in memory
	// before the rows of bulk appends are streamed (default 100,000).
	MaxHeldRows int `yaml:"max_held_rows"`
	// MaxMemory is the memory budget of one commit's events (default
	// 512MiB): deletes, updates and inserts are streamed, and the before
	// images of updates past a quarter of it are spilled to a temporary
	// file. A table may set its own.
	MaxMemory byteSize `yaml:"max_memory"`
	// AllowedLocations are the location prefixes tables' files may be read
	// from; manifest lists, manifests, data and delete files elsewhere are
	// refused. Default: each table's own location (and write paths) and
	// the catalog warehouse. When set, only these are read.
	AllowedLocations []string `yaml:"allowed_locations"`
	// IO.Concurrency bounds the manifests, deletion vectors and data files
	// each table reads at once (default 16).
	IO struct {
		Concurrency int `yaml:"concurrency"`
	} `yaml:"io"`
	// NetMaxRows bounds the changed rows a net range holds (tables with
	// net: true; default 100,000).
	NetMaxRows int `yaml:"net_max_rows"`
	// Cluster spreads the tables over several processes (cluster mode);
	// default type none: this process follows every table.
	Cluster cluster.Config `yaml:"cluster"`
	// Metrics.PerTable is the set of series /metrics serves per table:
	// essential (default: lag, events, retries, up, hold age; the rest
	// summed over the pipeline) or full (every family per table).
	Metrics struct {
		PerTable string `yaml:"per_table"`
	} `yaml:"metrics"`
	// Telemetry exports traces and metrics over OTLP (telemetry.go).
	Telemetry TelemetryConfig `yaml:"telemetry"`
}

// HTTPConfig is the daemon's HTTP listener.
type HTTPConfig struct {
	Listen string `yaml:"listen"`
	// Token authenticates requests that change what the daemon does
	// (POST /snapshot, icecdc snapshot) as a bearer token; without it
	// they are refused. When set, /status and /metrics want it too.
	Token string `yaml:"token"`
	// MaxConnections caps the listener's open connections (default
	// DefaultHTTPMaxConnections); at the cap one held unused is closed
	// to make room, and probes get slots of their own (connLimit).
	MaxConnections int `yaml:"max_connections"`
}

// CatalogConfig says where the tables are.
type CatalogConfig struct {
	Name       string            `yaml:"name"`
	Type       string            `yaml:"type"`
	URI        string            `yaml:"uri"`
	Warehouse  string            `yaml:"warehouse"`
	Properties map[string]string `yaml:"properties"`
	// MaxResponseBytes bounds each answer of a REST catalog icecdc reads
	// (default 64MiB): a longer one fails the load naming the bound and
	// the URL.
	MaxResponseBytes byteSize `yaml:"max_response_bytes"`
	// Concurrency bounds the calls the daemon's one catalog takes at once
	// from all its tables (default source.DefaultCatalogConcurrency, 8).
	Concurrency int `yaml:"concurrency"`
}

// TableConfig is one followed table (or namespace.* for all of them).
type TableConfig struct {
	Name     string   `yaml:"name"`
	Metadata string   `yaml:"metadata"` // follow a metadata.json file instead of a catalog entry; Name names it in events
	Branch   string   `yaml:"branch"`
	Start    string   `yaml:"start"`
	Key      []string `yaml:"key"`
	// MaxMemory overrides the pipeline's max_memory for this table.
	MaxMemory byteSize `yaml:"max_memory"`
	// Columns subscribes to these columns: only updates that change one
	// are emitted, images projected to them and the key.
	Columns []string `yaml:"columns"`
	// Net delivers each poll's backlog as its net changes.
	Net bool `yaml:"net"`
	// Hold keeps a retention branch icecdc-<name> on the table so that
	// other engines' snapshot expiry keeps what is not delivered yet.
	Hold bool `yaml:"hold"`
}

// parseConfig parses the YAML, expands ${ENV} references inside its
// values (see expandEnv), checks every key and value (see decodeConfig),
// applies the overrides (the command line's flags) and validates. Its
// error is one line: the first problem, and how many more there are.
func parseConfig(raw []byte, getenv func(string) string, overrides ...func(*Config)) (*Config, error) {
	var c Config
	if err := decodeConfig(raw, getenv, &c); err != nil {
		return nil, err
	}
	for _, o := range overrides {
		o(&c)
	}
	c.defaults()
	if err := c.validate(); err != nil {
		return nil, firstError(c.locate(err))
	}
	return &c, nil
}

func loadConfig(path string, overrides ...func(*Config)) (*Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c, err := parseConfig(raw, os.Getenv, overrides...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fileLine(path, err), err)
	}
	return c, nil
}

func (c *Config) defaults() {
	if c.Catalog.Type == "" {
		c.Catalog.Type = "sql"
	}
	if c.Catalog.Name == "" {
		c.Catalog.Name = "local"
	}
	if c.Poll.Interval == 0 {
		c.Poll.Interval = time.Second
	}
	if c.Poll.MaxInterval == 0 {
		c.Poll.MaxInterval = max(defaultPollMaxInterval, c.Poll.Interval)
	}
	if c.Format == "" {
		c.Format = defaultFormat(c.Sink.Type)
	}
	if c.State.Path == "" {
		c.State.Path = "icecdc-state.db"
	}
	if c.IO.Concurrency == 0 {
		c.IO.Concurrency = 16
	}
	if c.Catalog.Concurrency == 0 {
		c.Catalog.Concurrency = source.DefaultCatalogConcurrency
	}
	if c.MaxMemory == 0 {
		c.MaxMemory = source.DefaultMaxMemory
	}
	if c.HoldInterval == 0 {
		c.HoldInterval = time.Minute
	}
	if c.Metrics.PerTable == "" {
		c.Metrics.PerTable = metrics.PerTableEssential
	}
	for i := range c.Tables {
		if c.Tables[i].Branch == "" {
			c.Tables[i].Branch = "main"
		}
		if c.Tables[i].MaxMemory == 0 {
			c.Tables[i].MaxMemory = c.MaxMemory
		}
	}
	var sinkKafka *kafka.Config
	if c.Sink.caps().Topics {
		sinkKafka = &c.Sink.Kafka
	}
	c.Cluster = c.Cluster.WithDefaults(sinkKafka)
}

// validate returns every problem of the config, each naming its field,
// in the order of the sections below.
func (c *Config) validate() error {
	var p problems
	c.checkPipeline(&p)
	c.checkFollowing(&p)
	c.checkEvents(&p)
	c.checkBounds(&p)
	c.checkDelivery(&p)
	return errors.Join(p...)
}

// problems are a config's validation errors, in the order found.
type problems []error

// bad adds the problem of field.
func (p *problems) bad(field, format string, a ...any) {
	*p = append(*p, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, a...)))
}

// add adds errs, which name their fields themselves; a nil is none.
func (p *problems) add(errs ...error) {
	for _, err := range errs {
		if err != nil {
			*p = append(*p, err)
		}
	}
}

// checkPipeline checks the pipeline's name, its catalog and its tables.
func (c *Config) checkPipeline(p *problems) {
	if c.Name == "" {
		p.bad("name", "required (the pipeline name)")
	}
	if err := source.CheckCatalogType(c.Catalog.Type); err != nil {
		p.bad("catalog.type", "%v", err)
	} else if err := source.CheckCatalogURI(c.Catalog.Type, cmp.Or(c.Catalog.URI, c.Catalog.Properties["uri"])); err != nil {
		p.bad("catalog.uri", "%v", err)
	}
	if err := source.CheckProps(c.Catalog.Properties); err != nil {
		p.bad("catalog.properties", "%v", err)
	}
	if len(c.Tables) == 0 {
		p.bad("tables", "at least one table is required")
	}
	seen := map[string]bool{}
	for i, t := range c.Tables {
		f := fmt.Sprintf("tables[%d]", i)
		if t.Name == "" {
			p.bad(f+".name", "required (namespace.table or namespace.*)")
		} else if !strings.Contains(strings.TrimSuffix(t.Name, ".*"), ".") && !strings.HasSuffix(t.Name, ".*") && t.Metadata == "" {
			p.bad(f+".name", "%q: want namespace.table", t.Name)
		}
		if seen[t.Name] {
			p.bad(f+".name", "%q is listed twice", t.Name)
		}
		seen[t.Name] = true
		if _, err := cdc.ParseStart(t.Start); err != nil {
			p.bad(f+".start", "%v", err)
		}
		for j, col := range t.Columns {
			if strings.TrimSpace(col) == "" {
				p.bad(fmt.Sprintf("%s.columns[%d]", f, j), "empty column name")
			}
		}
		if t.Hold {
			if err := c.canHold(t); err != nil {
				p.bad(f+".hold", "%v", err)
			}
		}
	}
}

// checkFollowing checks how the tables are followed and served: the
// history-loss policy, holds, the HTTP listener and the polls.
func (c *Config) checkFollowing(p *problems) {
	if _, err := cdc.ParseHistoryLossPolicy(c.OnHistoryLoss); err != nil {
		p.bad("on_history_loss", "%v", err)
	}
	if c.HoldInterval < 0 {
		p.bad("hold_interval", "must not be negative")
	}
	if c.HTTP.Token != "" && c.HTTP.Listen == "" {
		p.bad("http.token", "set, but http.listen is not: there is no port to take requests on")
	}
	if c.HTTP.MaxConnections < 0 || c.HTTP.MaxConnections > maxHTTPConnections {
		p.bad("http.max_connections", "%d: want 1 to %d (0: the default, %d)", c.HTTP.MaxConnections, maxHTTPConnections, DefaultHTTPMaxConnections)
	}
	if c.Poll.Interval < 10*time.Millisecond {
		p.bad("poll.interval", "%s is too short (minimum 10ms)", c.Poll.Interval)
	}
	if c.Poll.MaxInterval < c.Poll.Interval {
		p.bad("poll.max_interval", "%s is less than poll.interval (%s)", c.Poll.MaxInterval, c.Poll.Interval)
	}
}

// checkEvents checks what the events are: the format, the transforms,
// heartbeats, Avro, and the Debezium settings the sink must support.
func (c *Config) checkEvents(p *problems) {
	switch c.Format {
	case formatDebeziumJSON, formatDebeziumConnect, formatDebeziumAvro:
		if err := c.Debezium.connectOptions().Validate(); err != nil {
			p.bad("debezium", "%v", err)
		}
	default:
		p.bad("format", "%q: want %s", c.Format, formatNames)
	}
	p.add(c.Transforms.check(c.Format, &c.Sink)...)
	p.add(c.checkHeartbeat()...)
	p.add(c.validateAvro()...)
	if c.Debezium.ProvideTransactionMetadata && !c.Sink.caps().Transactions {
		p.bad("debezium.provide.transaction.metadata", "only the %s sink writes transaction records", c.Sink.kindNames(func(k sinkkind.Caps) bool { return k.Transactions }))
	}
	if c.Debezium.ProvideTransactionMetadata {
		for _, t := range c.Tables {
			// BEGIN/END mark the first and last batch of a commit's events
			// as delivered in full; a column subscription drops events and
			// a net range merges commits.
			if len(t.Columns) > 0 || t.Net {
				p.bad("debezium.provide.transaction.metadata", "table %s: not with columns or net, whose batches are not a commit's whole events", t.Name)
			}
		}
	}
	if sh, err := c.Debezium.shaping(); err != nil {
		p.add(err)
	} else if len(sh.SkippedOps()) > 0 && c.Debezium.ProvideTransactionMetadata {
		// BEGIN/END count a commit's events, which skipping changes.
		p.bad("debezium.skipped.operations", "not with debezium.provide.transaction.metadata, whose records count every event of a commit")
	}
	if _, err := c.Debezium.keyColumns(); err != nil {
		p.add(err)
	}
	if c.Debezium.IncludeSchemaChanges && !c.Sink.caps().SchemaChanges {
		p.bad("debezium.include.schema.changes", "only the %s sink writes schema-change records", c.Sink.kindNames(func(k sinkkind.Caps) bool { return k.SchemaChanges }))
	}
}

// checkBounds checks the sizes and counts the daemon is bounded by.
func (c *Config) checkBounds(p *problems) {
	// A batch is held whole, encoded, until its sink confirms it.
	if c.Chunk < 0 || c.Chunk > maxChunk {
		p.bad("chunk", "%d: want 1 to %d events (0: the default, %d)", c.Chunk, maxChunk, cdc.DefaultChunkSize)
	}
	if c.ChunkBytes > maxChunkBytes {
		p.bad("chunk_bytes", "%s: want at most %s (0: the default, %s)", c.ChunkBytes.String(), humanize.IBytes(maxChunkBytes), humanize.IBytes(cdc.DefaultChunkBytes))
	}
	if c.NetMaxRows < 0 {
		p.bad("net_max_rows", "must not be negative")
	}
	if pt := c.Metrics.PerTable; pt != metrics.PerTableEssential && pt != metrics.PerTableFull {
		p.bad("metrics.per_table", "%q: want %s or %s", pt, metrics.PerTableEssential, metrics.PerTableFull)
	}
	if c.MaxHeldRows < 0 {
		p.bad("max_held_rows", "must not be negative")
	}
	if c.IO.Concurrency < 1 || c.IO.Concurrency > maxIOConcurrency {
		p.bad("io.concurrency", "%d: want 1 to %d", c.IO.Concurrency, maxIOConcurrency)
	}
	if c.Catalog.Concurrency < 1 || c.Catalog.Concurrency > maxIOConcurrency {
		p.bad("catalog.concurrency", "%d: want 1 to %d", c.Catalog.Concurrency, maxIOConcurrency)
	}
}

// checkDelivery checks where the events go: the sink, telemetry, the
// router, the cluster and the signal channel.
func (c *Config) checkDelivery(p *problems) {
	p.add(c.Sink.check()...)
	p.add(c.Telemetry.check()...)
	p.add(c.Sink.checkFormat(c.Format))
	if _, err := c.router(); err != nil {
		p.add(err)
	}
	p.add(c.Cluster.Validate())
	if k, ok := c.Sink.kind(); ok && k.Encoder != nil {
		// The sink takes rows in its own form: a record transform has
		// nothing to act on, and a cluster keeps its checkpoints in Kafka
		// where the sink keeps them in its tables.
		if len(c.Transforms) > 0 {
			p.add(fmt.Errorf("config: transforms: sink %s writes rows, not records: remove the transforms", k.Name))
		}
		if c.Cluster.Enabled() {
			p.add(fmt.Errorf("config: cluster.type: sink %s is not available in cluster mode yet", k.Name))
		}
	}
	p.add(c.Debezium.Config.Validate(c.Sink.caps().Topics))
}

// canHold refuses a retention hold where none can be kept: a table
// followed from its metadata file has no catalog to commit a ref to, and
// a hadoop catalog on an object store cannot commit atomically (icecdc
// opens it for reading only).
func (c *Config) canHold(t TableConfig) error {
	if t.Metadata != "" {
		return errors.New("a table followed from its metadata file cannot hold snapshots: there is no catalog to commit the ref to; follow it through its catalog, or set hold: false")
	}
	if c.Catalog.Type == "hadoop" && strings.Contains(c.Catalog.Warehouse, "://") && !strings.HasPrefix(c.Catalog.Warehouse, "file:") {
		return fmt.Errorf("a hadoop catalog on an object store (%s) cannot commit the ref atomically; use a rest, sql or glue catalog, or set hold: false", c.Catalog.Warehouse)
	}
	return nil
}
