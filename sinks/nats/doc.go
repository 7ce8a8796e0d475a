// Package nats is the NATS JetStream sink: each table's events are
// published to a subject (Config.Subject, a template) that a JetStream
// stream stores.
//
// The model. One event is one message: its body the event's value, its
// headers those the Kafka sink writes (id, op, sequence_number,
// snapshot_id, the format's own) plus key (the event key) and
// Nats-Msg-Id, the event id, so that the stream's duplicate window drops
// a replayed event. A batch is published asynchronously, every message
// at once up to Config.Batch.MaxPending in flight, and Write returns only
// when JetStream acknowledged every one (stored, or recognised as a
// duplicate): the checkpoint moves after the acknowledgements.
//
// A message larger than the server's max_payload (from its INFO) or the
// stream's max_msg_size is refused before anything of the batch is sent,
// with one line naming the event; nothing is truncated. The stream is
// created when missing (Config.Stream.Create, default true) or checked:
// each subject must be stored by Config.Stream.Name.
package nats
