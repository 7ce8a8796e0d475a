// Package cdc is the pipeline of icecdc: the event model, the per-snapshot
// driver that turns a commit into ordered row events, the Encoder interfaces
// its wire formats implement (package debezium has them), and the Source /
// Sink / Store interfaces that the concrete packages implement. An event's
// row images hold the values of package values; a schema-change event's
// differences come from package schemadiff.
//
// The model: a table is a sequence of snapshots in ascending sequence number
// along one branch. Each snapshot yields a Commit, whose events follow the
// change contract of docs/contract.md: every delete precedes every update, every
// update precedes every insert, and inside a phase events keep the manifest
// order of their data file, then the row position. A position in that stream
// is a Checkpoint; it only moves forward after a sink confirmed delivery.
//
// The per-event policies that are not the model's own live in packages
// of their own, which cmd/icecdc builds and hands to the Pipeline as the
// interfaces of policy.go: a table's Policies (the column and row shaping
// of package shape, the column subscription of package subscribe), each
// resolved into a Stage when the table is loaded, through which every
// chunk passes in order; a read's row filter (RowFilters, package
// rowfilter), bound per read and run before them; and the reducer of net
// changes (NetChanges, package netchange).
//
// Faults that are retried (a sink answering 5xx, a broker down, a catalog
// or a table that cannot be loaded) are followed per table by the
// Pipeline's Health (package health): logged when they begin, summed up at
// most once per interval, logged when they end, and shown to the daemon's
// /readyz and /status. The series it observes per table are the Pipeline's
// Metrics (package metrics).
//
// Around the follower, in packages of their own: the report of the
// attempts a sink retries by itself, passed in Write's context (package
// retryreport); what an on-demand snapshot request is made of (package
// snapreq), which the Pipeline queues per table and serves between two
// commits; the catalog's change checks that wake Watched tables (package
// catalogwatch); and the one-shot changes of a range of snapshots, for
// `icecdc changes` (package changes).
package cdc
