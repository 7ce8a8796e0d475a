// Package kafka is the Kafka sink of icecdc, on franz-go (docs/delivery.md, docs/sinks.md).
//
// The model: each table's events go to the topic its template names
// (default icecdc.{namespace}.{table}), one record per event, keyed by the
// event's key, with the headers id, op, sequence_number and snapshot_id
// (with CloudEvents, the ce_ headers of its binary mode too), and a
// tombstone (same key, null value) after each delete unless turned off, so
// that log compaction can forget deleted keys. Transaction records (BEGIN,
// END), when configured, go to their own topic in the same produce. The
// producer is idempotent and waits for acks=all.
//
// Ordering: records with one key hash to one partition (franz-go's default
// partitioner hashes keys as Kafka's own clients do), the idempotent
// producer keeps a partition's order through its internal retries (its
// sequence numbers make the broker refuse a batch out of order), and Write
// returns only after every record of its batch is acknowledged, so the
// next batch of the table cannot overtake it. A consumer therefore sees
// each key's events in commit order. Adding partitions to a topic moves
// keys and breaks that order across the change, as for any keyed topic.
//
// Delivery: at least once (Sink), Write confirms a batch only when every
// record is acked; on error the pipeline replays from its checkpoint and
// consumers drop repeats by event id. Exactly once (ExactlyOnceSink), each
// batch and its checkpoint record (key <pipeline>/<namespace>.<table>, a
// JSON cdc.Checkpoint) commit in one transaction, and Restore reads the
// checkpoint topic back with read_committed: on start and after every
// error that position is the truth. All tables share one transactional
// producer, so their Writes take turns. A commit whose outcome is unknown
// is settled before anything else is sent (the producer's next epoch makes
// the broker finish it), and a batch whose checkpoint already landed is
// not sent again; a second daemon with the same transactional id fences
// the first, which then stops with cdc.ErrPermanent. Forget (`icecdc
// reset`) deletes checkpoint records with tombstones in a transaction of
// the same id, which fences a daemon still running; Restore reads a
// tombstone as no checkpoint.
//
// Topics: the sink creates a missing event topic on first use with the
// configured partitions and replication (by default the broker's), and
// the checkpoint topic with one partition and cleanup.policy=compact. It
// does not ask the broker to auto-create topics, because auto-created
// checkpoint topics would not be compacted. A cluster that refuses the
// creation (ACLs, policies) is logged and produced to anyway, for topics
// that operators create themselves.
//
// Errors that retrying cannot fix (a record too large, an authorization
// or authentication failure, a fenced transactional producer) wrap
// cdc.ErrPermanent; everything else is left to the pipeline's retry.
package kafka
