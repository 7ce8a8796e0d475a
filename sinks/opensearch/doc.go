// Package opensearch is the OpenSearch sink: it keeps one index per table
// (Config.Index, default "{table}") equal to the table's rows, through the
// _bulk API.
//
// The model. Each event is one bulk item: a c, u or r event an index item
// whose document is the event's value (the flattened after image, as
// ExtractNewRecordState gives it), a d event a delete item. The document
// id is the event key (DocID). Every item carries an external version
// (Version: the snapshot's sequence number and the event's index) with
// version_type external_gte, so that a replayed, retried or late older
// event never overwrites a newer document: OpenSearch answers it 409,
// which counts as done.
//
// A batch is cut into requests of at most Config.Batch.MaxDocs items and
// about MaxBytes bytes, sent one after another. Write returns nil only
// when every item of the batch is accounted for: written, refused as
// older (409), a delete of a missing document (404), or written to the
// dead-letter file (synced). Items refused with 429 or 5xx (and requests
// that failed as a whole the same way, or on the network) are sent again
// with backoff; a request refused as too large (413) is split in halves.
// Any other refusal of an item (a mapping that rejects the document, an
// invalid index name) stops the table with an error naming the index and
// the document id, unless Config.DeadLetter.File takes the item.
package opensearch
