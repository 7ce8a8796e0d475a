// Package cluster runs one pipeline on several icecdc processes through
// Kafka's consumer-group protocol, with no coordinator of its own.
//
// Model. The members join one consumer group on a coordination topic of
// a fixed number of partitions; each table hashes (FNV-1a of its
// configured name) to one partition, and the member that owns a
// partition follows its tables. The partitions are spread with the
// cooperative-sticky balancer, so a member that joins or leaves moves only
// the partitions it must, and a member gives a partition up (its tables'
// in-flight batches finished, their followers stopped) before the group
// hands it to another member. The topic carries no records: it exists so
// that the group has something to assign.
//
// State. Checkpoints live in the compacted checkpoint topic, keyed
// <pipeline>/<namespace>.<table>, so a table moves to any member without
// a shared disk. Every table has its own transactional producer, with the
// transactional id <pipeline>/<table uuid>; the member that takes a table
// over loads that producer id first (InitProducerID), which aborts what
// the previous owner left open and fences it: a zombie (a member paused
// past its session timeout) can no longer commit a checkpoint, nor, with
// exactly-once delivery, an event. With at-least-once delivery the events
// go through the shared idempotent producer and only the checkpoint is
// transactional, so a zombie can send at most the chunk it had in flight.
// Each checkpoint record carries its writer's member name and group
// generation as headers: the topic tells who held a table when.
//
// Safety checks at start: every live member of the group must run the
// same pipeline configuration (a fingerprint travels in the client id)
// and no older version; the coordination topic must have the configured
// partition count; the checkpoint topic must be compacted and replicated
// enough. Any mismatch is a one-line error, never a silent split-brain.
package cluster
