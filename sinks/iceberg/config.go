package iceberg

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/icecdc/icecdc/sinks/sinkkind"
	"github.com/icecdc/icecdc/source"
)

// Defaults of Config.
const (
	// DefaultTable puts each source table's changes next to it.
	DefaultTable = "{namespace}.{table}_changes"
	// DefaultFormatVersion is 2: the format every Iceberg reader in use
	// reads (Spark 3.x, Trino, Athena, Snowflake, BigQuery, DuckDB…);
	// v3 readers are fewer, and the changes table needs nothing of v3
	// unless the source has v3 types (variant, geometry, nanosecond
	// timestamps), which then need format_version: 3.
	DefaultFormatVersion = 2
	// DefaultCommitInterval and DefaultCommitBytes bound how long and how
	// much a table's rows wait before they are committed.
	DefaultCommitInterval = time.Minute
	DefaultCommitBytes    = 64 << 20
)

// Config is the sink's section, sink.iceberg.
type Config struct {
	// Table is the target table's name template: {namespace}, {table},
	// {catalog}, {pipeline}; namespace.name (default DefaultTable).
	Table string `yaml:"table"`
	// Catalog is where the target tables are; unset (no type and no uri):
	// the pipeline's catalog.
	Catalog CatalogConfig `yaml:"catalog"`
	// FormatVersion of the tables the sink creates (default 2).
	FormatVersion int `yaml:"format_version"`
	// Partition of the tables the sink creates: day (default, the day of
	// _commit_timestamp) or none.
	Partition string `yaml:"partition"`
	// CommitInterval and CommitBytes: a table's buffered rows are
	// committed once the oldest waited CommitInterval or they hold about
	// CommitBytes in Arrow's buffers, whichever comes first.
	CommitInterval time.Duration `yaml:"commit.interval"`
	CommitBytes    int64         `yaml:"commit.bytes"`
	// Properties are set on the tables the sink creates (such as
	// write.target-file-size-bytes, the size of the data files).
	Properties map[string]string `yaml:"properties"`

	// Pipeline is the pipeline's name ({pipeline}, the checkpoint key).
	Pipeline string `yaml:"-"`
	// Logger receives the lifecycle lines (default slog.Default()).
	Logger *slog.Logger `yaml:"-"`
	// PipelineCatalog is the pipeline's catalog, used when Catalog is unset.
	PipelineCatalog source.Options `yaml:"-"`
}

// CatalogConfig is a catalog of the sink's own, as the pipeline's
// catalog section.
type CatalogConfig struct {
	Name       string            `yaml:"name"`
	Type       string            `yaml:"type"`
	URI        string            `yaml:"uri"`
	Warehouse  string            `yaml:"warehouse"`
	Properties map[string]string `yaml:"properties"`
}

func (c CatalogConfig) set() bool { return c.Type != "" || c.URI != "" }

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Table == "" {
		c.Table = DefaultTable
	}
	if c.FormatVersion == 0 {
		c.FormatVersion = DefaultFormatVersion
	}
	if c.Partition == "" {
		c.Partition = "day"
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.CommitBytes == 0 {
		c.CommitBytes = DefaultCommitBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Check returns the section's problems, each starting with its key.
func (c Config) Check() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	d := c.WithDefaults()
	if err := sinkkind.CheckNameTemplate(d.Table, c.Pipeline); err != nil {
		bad("table", "%v", err)
	}
	if _, _, err := splitName(d.Table); err != nil {
		bad("table", "%v", err)
	}
	if d.FormatVersion != 2 && d.FormatVersion != 3 {
		bad("format_version", "%d: want 2 or 3", d.FormatVersion)
	}
	if d.Partition != "day" && d.Partition != "none" {
		bad("partition", "%q: want day or none", d.Partition)
	}
	if d.CommitInterval < 0 {
		bad("commit.interval", "%s: want a positive duration", d.CommitInterval)
	}
	if d.CommitBytes < 0 {
		bad("commit.bytes", "%d: want a positive size", d.CommitBytes)
	}
	if c.Catalog.set() {
		typ := c.Catalog.Type
		if typ == "" {
			typ = "sql"
		}
		if err := source.CheckCatalogType(typ); err != nil {
			bad("catalog.type", "%v", err)
		} else if err := source.CheckCatalogURI(typ, c.Catalog.URI); err != nil {
			bad("catalog.uri", "%v", err)
		}
	}
	return errs
}

// catalogOptions returns where the target tables are.
func (c Config) catalogOptions() source.Options {
	if !c.Catalog.set() {
		o := c.PipelineCatalog
		o.Catalog = nil // the sink opens its own: it commits
		return o
	}
	return source.Options{CatalogName: c.Catalog.Name, CatalogType: c.Catalog.Type, CatalogURI: c.Catalog.URI,
		Warehouse: c.Catalog.Warehouse, Props: c.Catalog.Properties, Log: c.Logger}
}
