package cdc

import "strconv"

// TransactionMarker is a BEGIN or END record of one snapshot's events,
// as Debezium writes them with provide.transaction.metadata: one Iceberg
// snapshot is one transaction of one table.
type TransactionMarker struct {
	Status string // "BEGIN" or "END"
	ID     string // <table_uuid>:<sequence_number>, the events' transaction.id
	TsMs   int64  // the snapshot's commit time
	// EventCount is the snapshot's number of events (END only), and
	// Collection the table as <namespace>.<table>, its only collection.
	EventCount int64
	Collection string
}

// TransactionEncoder encodes transaction markers in a format's form.
type TransactionEncoder interface {
	AppendTransactionKey(dst []byte, m *TransactionMarker) []byte
	AppendTransactionValue(dst []byte, m *TransactionMarker) []byte
}

// TransactionMarkers returns the markers a batch brings: BEGIN when it
// starts its snapshot's events, END when it ends them. The rows of an
// initial read are no transaction, as in Debezium. A snapshot delivered
// again after a restart mid-way gets its END, not a second BEGIN;
// consumers that count events per transaction id see at least the count.
func TransactionMarkers(b *Batch) (begin, end *TransactionMarker) {
	if len(b.Messages) == 0 || b.Messages[0].Op == OpSnapshot {
		return nil, nil
	}
	id := b.Table.UUID + ":" + strconv.FormatInt(b.Snapshot.SequenceNumber, 10)
	coll := b.Table.Namespace + "." + b.Table.Name
	if b.Checkpoint.Next-len(b.Messages) == 0 {
		begin = &TransactionMarker{Status: "BEGIN", ID: id, TsMs: b.Snapshot.TimestampMs, Collection: coll}
	}
	if b.Checkpoint.Done {
		end = &TransactionMarker{Status: "END", ID: id, TsMs: b.Snapshot.TimestampMs, Collection: coll,
			EventCount: int64(b.Checkpoint.Next)}
	}
	return begin, end
}
