// Package signals takes Debezium's signals from a Kafka topic and routes
// them to the pipeline's on-demand snapshots, and writes Debezium's
// notifications about those snapshots to a Kafka topic and the log.
//
// A signal record is keyed by the pipeline's topic.prefix and holds
// {"id", "type", "data"}: execute-snapshot (incremental or blocking, of
// the tables its data-collections match, each with the row filter of
// its additional-conditions), stop-snapshot, pause-snapshot and
// resume-snapshot. The topic's offset is committed only past signals
// whose effect is durable: a snapshot's read checkpointed (the table's
// checkpoint then names the signal, so a signal read again after a
// crash is not read twice), a control handed to its table, or a bad
// signal notified. A bad signal changes nothing.
package signals
