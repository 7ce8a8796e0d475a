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
// Membership. Every member is a static member (KIP-345) with its own
// group.instance.id, cluster.instance_id or <host>-<n> (the host's lowest
// slot no live member of the group holds): a member killed and restarted
// on the same host takes the dead one's place at once instead of waiting
// for its session to expire. A member stopped by SIGTERM/SIGINT still
// leaves the group (by its instance id), so its tables move at once, and
// it exits within the session timeout: its tables get half of it to finish
// their batches, the leave the rest. The rebalance timeout is the session
// timeout, so a member frozen during a rebalance holds the others up no
// longer than a silent one. The members speak the classic group protocol
// (franz-go opts into KIP-848 only for the range or sticky balancers, with
// ServerSideBalancer; the cooperative-sticky one is classic only).
//
// Safety checks at start: every live member of the group must run the
// same pipeline configuration (a fingerprint travels in the client id)
// and no older version; the coordination topic must have the configured
// partition count; the checkpoint topic must be compacted and replicated
// enough. Any mismatch is a one-line error, never a silent split-brain.
// A retriable answer (a coordinator moving or loading, a rebalance, a
// network error) is retried with backoff and a WARN line, never fatal.
package cluster
