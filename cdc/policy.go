package cdc

import (
	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// The pipeline's per-event policies that live outside cdc: cmd/icecdc
// builds the concrete ones (packages rowfilter and shape) and hands them
// to the Pipeline, which sees only these interfaces.

// RowFilters is the language of a read's row filter (a signal's
// additional-conditions): package rowfilter has icecdc's, which cmd hands
// the pipeline.
type RowFilters interface {
	// Bind parses text and binds it to sc: keep reports whether a row
	// passes. Its error never quotes a literal of text (one may be a
	// value of a masked column).
	Bind(text string, sc *iceberg.Schema) (keep func(values.Row) bool, err error)
	// Redact returns text as logs and errors show it: without its
	// literals.
	Redact(text string) string
}

// Shaping is a pipeline's column and row shaping (package shape has
// Debezium's column options and skipped.operations), resolved per table
// when the table is loaded.
type Shaping interface {
	// ForTable resolves the shaping for table (namespace.table) against
	// its current schema sc and key columns keys (empty: the row id); nil
	// when it shapes nothing of the table. Its errors name the option;
	// the pipeline names the table.
	ForTable(table string, sc *iceberg.Schema, keys []string) (Shaper, error)
}

// Shaper is a Shaping resolved for one table. What it removes or masks
// never reaches an encoder, a sink, a log line or an error.
type Shaper interface {
	// Apply drops the events of skipped operations and shapes every
	// image of the others. It returns the commit to encode them with (c
	// with the shaped schema and its masked fields) and the kept events,
	// which keep their indexes.
	Apply(c *Commit, evs []Event) (*Commit, []Event, error)
	// SchemaChange returns ch as the shaped columns see it.
	SchemaChange(ch *SchemaChange) (*SchemaChange, error)
	// Excludes reports whether the top-level column holding col (a name
	// or a path through structs) is left out.
	Excludes(col string) bool
}
