// Package sns is the Amazon SNS sink: each table's events go to the topic
// its template names (Config.Topic, a topic ARN), one message per event,
// in PublishBatch requests of at most 10 messages and 256 KiB
// (awssink.Deliver).
//
// The model is the SQS sink's: the message is the event's encoded value,
// its attributes id, op, sequence_number and snapshot_id and the format's
// headers. On a FIFO topic (an ARN ending in .fifo) MessageGroupId is the
// event's key and MessageDeduplicationId the event id: SNS drops an event
// published again within its 5-minute deduplication window, and FIFO
// subscriptions receive a key's events in order. A standard topic keeps
// no order and deduplicates nothing: at least once, with the id attribute
// to deduplicate on.
//
// Write returns nil only when SNS accepted every message of the batch; an
// event too large for a message, or refused by the topic for good, stops
// the table with an error naming it.
package sns
