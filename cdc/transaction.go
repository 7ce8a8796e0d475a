package cdc

import (
	"bytes"
	"strconv"
)

// KeyPayload returns the row key of an encoded key (the CloudEvents
// subject): the key itself, or the payload of a key in Kafka Connect's
// {"schema": …, "payload": …} form. The first `,"payload":` is the
// envelope's: a schema holds field names only as "field" values, and
// quotes inside strings are escaped.
func KeyPayload(key []byte) []byte {
	if !bytes.HasPrefix(key, []byte(`{"schema":`)) {
		return key
	}
	i := bytes.Index(key, []byte(`,"payload":`))
	if i < 0 || key[len(key)-1] != '}' {
		return key
	}
	return key[i+len(`,"payload":`) : len(key)-1]
}

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

// appendTransactionPayload appends the marker's value payload.
func appendTransactionPayload(dst []byte, m *TransactionMarker) []byte {
	dst = append(dst, `{"status":`...)
	dst = appendJSONString(dst, m.Status)
	dst = append(dst, `,"id":`...)
	dst = appendJSONString(dst, m.ID)
	dst = append(dst, `,"ts_ms":`...)
	dst = strconv.AppendInt(dst, m.TsMs, 10)
	if m.Status != "END" {
		return append(dst, `,"event_count":null,"data_collections":null}`...)
	}
	dst = append(dst, `,"event_count":`...)
	dst = strconv.AppendInt(dst, m.EventCount, 10)
	dst = append(dst, `,"data_collections":[{"data_collection":`...)
	dst = appendJSONString(dst, m.Collection)
	dst = append(dst, `,"event_count":`...)
	dst = strconv.AppendInt(dst, m.EventCount, 10)
	return append(dst, `}]}`...)
}

func appendTransactionKeyPayload(dst []byte, m *TransactionMarker) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, m.ID)
	return append(dst, '}')
}

// AppendTransactionKey appends {"id": …}.
func (f *DebeziumJSON) AppendTransactionKey(dst []byte, m *TransactionMarker) []byte {
	return appendTransactionKeyPayload(dst, m)
}

// AppendTransactionValue appends the marker as Debezium's transaction
// record: status, id, ts_ms, event_count and data_collections.
func (f *DebeziumJSON) AppendTransactionValue(dst []byte, m *TransactionMarker) []byte {
	return appendTransactionPayload(dst, m)
}

// The Connect schemas of transaction records, named as Debezium's.
var (
	connectTransactionKeySchema = func() string {
		b := []byte(`{"type":"struct","fields":[`)
		b = connectField(b, "string", false, "id")
		return string(append(b, `],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataKey"}`...))
	}()
	connectTransactionValueSchema = func() string {
		b := []byte(`{"type":"struct","fields":[`)
		b = connectField(b, "string", false, "status")
		b = append(b, ',')
		b = connectField(b, "string", false, "id")
		b = append(b, ',')
		b = connectField(b, "int64", false, "ts_ms")
		b = append(b, ',')
		b = connectField(b, "int64", true, "event_count")
		b = append(b, `,{"type":"array","items":{"type":"struct","fields":[`...)
		b = connectField(b, "string", false, "data_collection")
		b = append(b, ',')
		b = connectField(b, "int64", false, "event_count")
		b = append(b, `],"optional":false},"optional":true,"field":"data_collections"}`...)
		return string(append(b, `],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataValue"}`...))
	}()
)

// AppendTransactionKey appends the marker's key in Connect's form.
func (f *DebeziumConnectJSON) AppendTransactionKey(dst []byte, m *TransactionMarker) []byte {
	dst = append(dst, `{"schema":`...)
	dst = append(dst, connectTransactionKeySchema...)
	dst = append(dst, `,"payload":`...)
	dst = appendTransactionKeyPayload(dst, m)
	return append(dst, '}')
}

// AppendTransactionValue appends the marker's value in Connect's form.
func (f *DebeziumConnectJSON) AppendTransactionValue(dst []byte, m *TransactionMarker) []byte {
	dst = append(dst, `{"schema":`...)
	dst = append(dst, connectTransactionValueSchema...)
	dst = append(dst, `,"payload":`...)
	dst = appendTransactionPayload(dst, m)
	return append(dst, '}')
}
