// Package signals takes Debezium's signals from a Kafka topic and routes
// them to the pipeline's on-demand snapshots, and writes Debezium's
// notifications about those snapshots to a Kafka topic and the log.
//
// A signal record is keyed by the pipeline's topic.prefix and holds
// {"id", "type", "data"}: execute-snapshot (incremental or blocking, of
// the tables its data-collections match, each with the row filter of
// its additional-conditions), stop-snapshot, pause-snapshot and
// resume-snapshot. A signal is done once its effect is durable: a
// snapshot's read start checkpointed, a control handed to its table,
// or a bad signal notified. A bad signal changes nothing.
//
// Each signal is done once. A table's signals run in the topic's order
// (a lane per table), different tables' side by side. The committed
// offset is the first signal not done and its metadata names the later
// ones not done (progress), so a restart passes over those done; a
// table's checkpoint keeps the place of the last signal it took
// (snapreq.SignalMark), so one read again after a crash before its commit,
// or after the table moved to another member, is answered as read.
//
// What one producer of the topic can make the daemon hold is bounded
// (limits.go): a record, an id, a regular expression, the lists, the
// text quoted in errors, and the signals read and not done (a window:
// the reader stops fetching while it is full).
package signals
