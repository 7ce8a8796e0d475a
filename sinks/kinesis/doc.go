// Package kinesis is the Amazon Kinesis Data Streams sink: each table's
// events go to the stream its template names (Config.Stream, a name or an
// ARN), one record per event, in PutRecords requests of at most 500
// records and 5 MiB (awssink.Deliver).
//
// The model. A record's data is the event's encoded value (any format:
// Kinesis carries bytes), its partition key the event's key
// (awssink.PartitionKey), so a key's records land on one shard. Kinesis
// records have no headers: the event id is in the value (the debezium
// envelope's source block), not beside it. PutRecords takes or refuses
// each record on its own: the refused ones (throttled shards) are sent
// again, before any later record of their key, since a request holds at
// most one record of a key; so each shard holds a key's records in
// commit order and their sequence numbers grow with it.
//
// Kinesis deduplicates nothing: a retried request or a replay from the
// checkpoint writes records again (at least once; consumers deduplicate
// on the event id). Write returns nil only when every record of the
// batch is in the stream; a record larger than 1 MiB stops the table with
// an error naming its event.
package kinesis
