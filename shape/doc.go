// Package shape is a pipeline's column and row shaping with Debezium's
// options: column.include.list and column.exclude.list, truncation,
// masks, hashes (whose V1 bytes are Java's ObjectOutputStream form of a
// String, as Debezium hashes them) and skipped.operations. Parse builds
// a Shaping from the options; the pipeline knows it as a cdc.Policy,
// resolves it per table (ForTable) and passes every chunk through the
// table's Shaper, a cdc.Stage, before the encoder sees it, so what it
// removes or masks never reaches a sink, a log line or an error.
package shape
