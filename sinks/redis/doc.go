// Package redis is the Redis Streams sink: each table's events are
// added to a stream (Config.Stream, a template) with XADD.
//
// The model. One event is one entry, with the fields id (the event id),
// op, sequence_number, snapshot_id, key, value, and one field
// "header:<name>" per header the format adds. The entry id is the
// server's (*): a batch sent again, after an error or a restart from
// the checkpoint, adds its entries again under new entry ids, so
// consumers drop repeats by the id field (at-least-once). A batch is one
// pipeline of XADDs per Config.Batch.MaxEntries, and Write returns only
// once every reply says the entry was added: the checkpoint moves after
// them. Config.MaxLen trims each stream with MAXLEN ~.
package redis
