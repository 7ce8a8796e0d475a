package cdc

import (
	"context"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// The pipeline's per-event policies live outside cdc: cmd/icecdc builds
// the concrete ones (packages rowfilter, shape and subscribe) and hands
// them to the Pipeline, which sees only these interfaces. Each table's
// policies are resolved into Stages when the table is loaded; a chunk of
// events passes through the stages in order before the encoder sees it.

// Policy is a per-event policy of a table (package shape's column and
// row shaping, package subscribe's column subscription).
type Policy interface {
	// ForTable resolves the policy for table (namespace.table) against its
	// current schema sc and key columns keys (empty: the row id); before
	// are the table's stages that run before it. The stage is nil when the
	// policy changes nothing of the table. Its errors name the option; the
	// pipeline names the table.
	ForTable(table string, sc *iceberg.Schema, keys []string, before []Stage) (Stage, error)
}

// Stage is a Policy resolved for one table. What it removes or masks
// never reaches an encoder, a sink, a log line or an error.
type Stage interface {
	// Apply returns the commit to encode the events with (c, or c with
	// the stage's schema) and the events kept, which keep their commit
	// indexes.
	Apply(c *Commit, evs []Event) (*Commit, []Event, error)
	// SchemaChange returns ch (nil: none) as the stage's columns see it.
	SchemaChange(ch *SchemaChange) (*SchemaChange, error)
}

// Excluder is a Stage that leaves columns out (package shape's column
// options): a policy resolved after it asks whether a column it names is
// one of them (package subscribe refuses such a column).
type Excluder interface {
	// Excludes reports whether the top-level column holding col (a name
	// or a path through structs) is left out.
	Excludes(col string) bool
}

// RowFilters is the language of a read's row filter (a signal's
// additional-conditions): package rowfilter has icecdc's, which cmd hands
// the pipeline. A filter is bound per read, not per table (see
// readFilter), so it is a language rather than a Policy.
type RowFilters interface {
	// Bind parses text and binds it to sc: keep reports whether a row
	// passes. Its error never quotes a literal of text (one may be a
	// value of a masked column).
	Bind(text string, sc *iceberg.Schema) (keep func(values.Row) bool, err error)
	// Redact returns text as logs and errors show it: without its
	// literals.
	Redact(text string) string
}

// readFilter is the row filter of the read being delivered as the first
// of its stages: a signal's additional-conditions read the table's own
// values, as Debezium's run on the source table, so it comes before any
// shaping.
type readFilter struct {
	f    *follower
	text string
}

func (r readFilter) Apply(c *Commit, evs []Event) (*Commit, []Event, error) {
	evs, err := r.f.filterRows(c, evs, r.text)
	if err != nil {
		return nil, nil, Permanent(err)
	}
	return c, evs, nil
}

func (readFilter) SchemaChange(ch *SchemaChange) (*SchemaChange, error) { return ch, nil }

// NetChanges reduces the commits of a range of snapshots to their net
// changes, one event per row (package netchange; see netfollow.go). The
// commits it is given share a schema.
type NetChanges interface {
	// Add ingests the next commit of the range; an error is the range's
	// (the commits break the change contract), retrying cannot mend it.
	Add(ctx context.Context, c *Commit) error
	// Len returns the rows held, which bounds its memory.
	Len() int
	// Commits returns the net events as one commit per snapshot that last
	// touched a row, in snapshot order, the events of each in the order
	// of the change contract, their indexes counting from 0.
	Commits() []*Commit
}
