package sinkkind

import (
	"context"
	"io"
	"log/slog"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/source"
)

// Caps is what a sink can carry and promise.
type Caps struct {
	// ExactlyOnce: the sink can store checkpoints itself, atomically with
	// the events (cdc.CheckpointSink), and restore them.
	ExactlyOnce bool
	// Heartbeats: the sink has a place for heartbeat records.
	Heartbeats bool
	// SchemaChanges and Transactions: the sink writes schema-change
	// records and transaction (BEGIN/END) records.
	SchemaChanges bool
	Transactions  bool
	// Topics: records go to named topics, which the topic routers and
	// record headers address; the sink's section is the Kafka client's.
	Topics bool
	// Formats are the formats the sink carries; nil: every format.
	Formats []string
	// DefaultFormat is the format when none is configured ("": the
	// daemon's default).
	DefaultFormat string
	// Rows: the sink keeps each key's current row, not the events: it
	// wants the flattened after image as each event's value (the unwrap
	// transform, applied when the configuration has none).
	Rows bool
	// NeedsKeys: the sink addresses records by their key.
	NeedsKeys bool
	// PerKeyOrder: a key's events arrive in order (all sinks here keep
	// the order of a table's batches; this says the destination keeps
	// it too when writes are retried).
	PerKeyOrder bool
}

// Env is what the daemon hands a sink's constructor.
type Env struct {
	// Pipeline is the pipeline's name.
	Pipeline string
	// Log is the daemon's logger.
	Log *slog.Logger
	// Stdout is the daemon's standard output.
	Stdout io.Writer
	// Encoding says what the format's records are (content type, row
	// key of an encoded key).
	Encoding cdc.Encoding
	// Retried counts a delivery sent again, by HTTP status (0: a
	// network error); nil for none.
	Retried func(status int)
	// Catalog is the pipeline's catalog, for sinks that write tables.
	Catalog source.Options
}

// Kind is one kind of sink.
type Kind struct {
	// Name is sink.type's value, and the key of its section under sink.
	Name string
	Caps Caps
	// Check returns the section's problems, each starting with its key
	// inside the section ("url: required"); nil when there is no section.
	Check func() []error
	// Fingerprint returns the section's settings every member of a
	// cluster must share (where the events go); nil for none.
	Fingerprint func() []string
	// Encoder, when set, is the sink's own format: the sink takes rows,
	// not records, and the daemon uses it instead of the configured
	// format (no transform applies).
	Encoder func() cdc.Encoder
	// New builds the sink from its section.
	New func(Env) (cdc.Sink, error)
}

// Section is a sink's configuration section: it declares the kind.
type Section interface {
	Kind() Kind
}

// Pinger is a sink that carries heartbeats itself (Caps.Heartbeats
// without Topics): Ping sends one for serverName at tsMs.
type Pinger interface {
	Ping(ctx context.Context, serverName string, tsMs int64) error
}
