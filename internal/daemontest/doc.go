// Package daemontest tests icecdc the way it is deployed: the icecdc binary
// runs as a separate process on real v3 tables in a SQL catalog, with a
// real bbolt state file and a file or Kafka (kfake) sink, while the test
// commits to the table, kills the process with SIGKILL and restarts it.
//
// The model the tests check is docs/delivery.md: a checkpoint moves only after
// the sink confirmed a chunk, so after any crash the stream resumes at a
// chunk boundary. A consumer that drops repeated event ids
// (<table_uuid>:<sequence_number>:<row_id>:<op>) then sees exactly the
// events the engine computes for every snapshot, in order; a repeat only
// ever re-sends a suffix of the stream from a chunk boundary; and with
// Kafka exactly-once a read_committed consumer sees no repeat at all.
// History that no longer continues from a checkpoint (expired snapshots,
// a rollback, a re-created table) stops that table, and only that table.
// An on-demand snapshot (`icecdc snapshot`) places the table's rows between
// two commits and resumes by index after a SIGKILL; `icecdc reset` removes
// a table's retention hold.
//
// The package also holds the pipeline's benchmarks: throughput to a
// discarding sink and to kfake, and the latency from commit to delivery.
// It has no code of its own outside tests.
package daemontest
