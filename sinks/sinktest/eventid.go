package sinktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/icecdc/icecdc/cdc"
)

// SplitEventID reads the event id a JSON value carries as the last
// member of its envelope or row (cdc.EventIDField, as
// cdc.Encoding.AppendValueWithID writes it, inside payload in Connect's
// form) and returns it with the value as it was before the member was
// added, for a Reader of a destination without headers. A value without
// the member is an error: every event must carry its id.
func SplitEventID(v []byte) (id string, value []byte, err error) {
	marker := []byte(`"` + cdc.EventIDField + `":`)
	at := bytes.LastIndex(v, marker)
	if at < 1 {
		return "", nil, fmt.Errorf("no %s member in %.80q", cdc.EventIDField, v)
	}
	rest := v[at+len(marker):]
	end := bytes.IndexByte(rest[1:], '"') + 2 // ids hold no quote
	if len(rest) == 0 || rest[0] != '"' || end < 2 {
		return "", nil, fmt.Errorf("%s of %.80q is not a string", cdc.EventIDField, v)
	}
	if err := json.Unmarshal(rest[:end], &id); err != nil {
		return "", nil, fmt.Errorf("%s of %.80q: %w", cdc.EventIDField, v, err)
	}
	tail := rest[end:]
	if string(tail) != "}" && string(tail) != "}}" {
		return "", nil, fmt.Errorf("%s is not the last member of %.80q", cdc.EventIDField, v)
	}
	head := v[:at]
	switch {
	case bytes.HasSuffix(head, []byte(",")):
		value = append(bytes.Clone(head[:len(head)-1]), tail...)
	case bytes.HasSuffix(head, []byte("{")):
		value = append(bytes.Clone(head), tail...)
	default:
		return "", nil, fmt.Errorf("%s is not a member of %.80q", cdc.EventIDField, v)
	}
	return id, value, nil
}

// EnvelopeEventID rebuilds the event id from a debezium-json envelope's
// source block and op: cdc.EventID of the event the value describes.
func EnvelopeEventID(v []byte) (string, cdc.Op, error) {
	var d struct {
		Op     string `json:"op"`
		Source struct {
			TableUUID string      `json:"table_uuid"`
			Seq       json.Number `json:"sequence_number"`
			RowID     json.Number `json:"row_id"`
		} `json:"source"`
	}
	if err := json.Unmarshal(v, &d); err != nil || len(d.Op) != 1 {
		return "", 0, fmt.Errorf("not a debezium value: %.80q", v)
	}
	seq, err := strconv.ParseInt(string(d.Source.Seq), 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("source.sequence_number of %.80q: %w", v, err)
	}
	row, err := strconv.ParseInt(string(d.Source.RowID), 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("source.row_id of %.80q: %w", v, err)
	}
	op := cdc.Op(d.Op[0])
	return cdc.EventID(d.Source.TableUUID, seq, row, op), op, nil
}

// ReadEnvelopeLine is a Reader's view of one debezium-json value that
// carries its event id (a file or stdout line, a webhook array's
// element): the id it carries, which must be the id of the event its
// envelope describes, and the value without it.
func ReadEnvelopeLine(v []byte) (Received, error) {
	id, value, err := SplitEventID(v)
	if err != nil {
		return Received{}, err
	}
	want, op, err := EnvelopeEventID(value)
	if err != nil {
		return Received{}, err
	}
	if id != want {
		return Received{}, fmt.Errorf("value carries event id %q, its envelope is event %q: %.80q", id, want, v)
	}
	return Received{ID: id, Op: op, Value: value}, nil
}
