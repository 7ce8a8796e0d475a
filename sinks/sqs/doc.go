// Package sqs is the Amazon SQS sink: each table's events go to the queue
// its template names (Config.Queue: a queue URL, or a name the sink looks
// up), one message per event, in SendMessageBatch requests of at most 10
// messages and 256 KiB (awssink.Deliver).
//
// The model. A message's body is the event's encoded value; its
// attributes are id, op, sequence_number and snapshot_id, and the format's
// headers. On a FIFO queue (a name ending in .fifo) MessageGroupId is the
// event's key (awssink.GroupID), so a key's events are received in
// order, and MessageDeduplicationId is the event id, so SQS drops an event
// sent again within its 5-minute deduplication window: a retried request
// or a replay from the checkpoint within that window delivers each event
// once. A standard queue keeps no order and deduplicates nothing: there
// the promise is at least once, with the id attribute to deduplicate on.
//
// Write returns nil only when SQS accepted every message of the batch;
// an event too large for a message, or refused by the queue for good,
// stops the table with an error naming it.
package sqs
