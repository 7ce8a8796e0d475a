package debezium

import (
	"bytes"
	"strconv"

	"github.com/icecdc/icecdc/cdc"
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

// appendTransactionPayload appends the marker's value payload.
func appendTransactionPayload(dst []byte, m *cdc.TransactionMarker) []byte {
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

func appendTransactionKeyPayload(dst []byte, m *cdc.TransactionMarker) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendJSONString(dst, m.ID)
	return append(dst, '}')
}

// AppendTransactionKey appends {"id": …}.
func (f *JSON) AppendTransactionKey(dst []byte, m *cdc.TransactionMarker) []byte {
	return appendTransactionKeyPayload(dst, m)
}

// AppendTransactionValue appends the marker as Debezium's transaction
// record: status, id, ts_ms, event_count and data_collections.
func (f *JSON) AppendTransactionValue(dst []byte, m *cdc.TransactionMarker) []byte {
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
func (f *ConnectJSON) AppendTransactionKey(dst []byte, m *cdc.TransactionMarker) []byte {
	dst = append(dst, `{"schema":`...)
	dst = append(dst, connectTransactionKeySchema...)
	dst = append(dst, `,"payload":`...)
	dst = appendTransactionKeyPayload(dst, m)
	return append(dst, '}')
}

// AppendTransactionValue appends the marker's value in Connect's form.
func (f *ConnectJSON) AppendTransactionValue(dst []byte, m *cdc.TransactionMarker) []byte {
	dst = append(dst, `{"schema":`...)
	dst = append(dst, connectTransactionValueSchema...)
	dst = append(dst, `,"payload":`...)
	dst = appendTransactionPayload(dst, m)
	return append(dst, '}')
}
