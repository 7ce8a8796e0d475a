package debezium

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/icecdc/icecdc/cdc"
)

// envField is a plain field of the envelope that add.fields and
// add.headers can copy: where it sits, its Connect schema and its value.
type envField struct {
	block, name string // block: "", "source" or "transaction"
	typ         string // Connect type: string, int64 or boolean
	// logical is the rest of its Connect schema after "optional" (a
	// logical name, version and parameters), as the envelope has it.
	logical string
	// connectOnly marks a field only debezium-connect-json's envelope has.
	connectOnly bool
	value       func(env *Envelope, c *cdc.Commit, e *cdc.Event, tsMs int64) envValue
}

// envValue is an added field's value: a string, an int64, a bool or null.
type envValue struct {
	kind byte // 's', 'i', 'b' or 0 for null
	s    string
	i    int64
}

func str(s string) envValue { return envValue{kind: 's', s: s} }
func num(i int64) envValue  { return envValue{kind: 'i', i: i} }
func boolean(b bool) envValue {
	if b {
		return envValue{kind: 'b', i: 1}
	}
	return envValue{kind: 'b'}
}

// text is the value as a Kafka header carries it: Connect's
// SimpleHeaderConverter writes strings as they are and numbers and
// booleans as their text; nil for null.
func (v envValue) text() []byte {
	switch v.kind {
	case 's':
		return []byte(v.s)
	case 'i':
		return strconv.AppendInt(nil, v.i, 10)
	case 'b':
		return strconv.AppendBool(nil, v.i == 1)
	}
	return nil
}

// appendJSON appends the value in JSON.
func (v envValue) appendJSON(dst []byte) []byte {
	switch v.kind {
	case 's':
		return appendJSONString(dst, v.s)
	case 'i':
		return strconv.AppendInt(dst, v.i, 10)
	case 'b':
		return strconv.AppendBool(dst, v.i == 1)
	}
	return append(dst, "null"...)
}

var snapshotText = [...]string{cdc.SnapshotNone: "false", cdc.SnapshotRead: "true", cdc.SnapshotLast: "last"}

// envFields are the envelope's plain fields, in the envelope's order.
var envFields = []envField{
	{name: "op", typ: "string", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue { return str(e.Op.String()) }},
	{name: "ts_ms", typ: "int64", value: func(_ *Envelope, _ *cdc.Commit, _ *cdc.Event, ts int64) envValue { return num(ts) }},
	{name: "ts_us", typ: "int64", connectOnly: true, value: func(_ *Envelope, _ *cdc.Commit, _ *cdc.Event, ts int64) envValue { return num(ts * 1000) }},
	{name: "ts_ns", typ: "int64", connectOnly: true, value: func(_ *Envelope, _ *cdc.Commit, _ *cdc.Event, ts int64) envValue { return num(ts * 1_000_000) }},
	{block: "source", name: "version", typ: "string", value: func(env *Envelope, _ *cdc.Commit, _ *cdc.Event, _ int64) envValue { return str(env.Version) }},
	{block: "source", name: "connector", typ: "string", value: func(*Envelope, *cdc.Commit, *cdc.Event, int64) envValue { return str("icecdc") }},
	{block: "source", name: "name", typ: "string", value: func(env *Envelope, _ *cdc.Commit, _ *cdc.Event, _ int64) envValue { return str(env.Pipeline) }},
	{block: "source", name: "ts_ms", typ: "int64", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue { return num(c.Snapshot.TimestampMs) }},
	{block: "source", name: "snapshot", typ: "string", logical: `,"name":"` + dbzEnum + `","version":1,"parameters":{"allowed":"true,last,false"}`,
		value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue { return str(snapshotText[e.Snapshot]) }},
	{block: "source", name: "resync", typ: "boolean", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue {
		if e.Resync {
			return boolean(true)
		}
		return envValue{} // the envelope leaves it out (JSON) or null (Connect)
	}},
	{block: "source", name: "db", typ: "string", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue { return str(c.Table.Catalog) }},
	{block: "source", name: "sequence", typ: "string", connectOnly: true, value: func(_ *Envelope, c *cdc.Commit, e *cdc.Event, _ int64) envValue {
		return str(`["` + strconv.FormatInt(c.Snapshot.SequenceNumber, 10) + `","` + strconv.Itoa(e.Index) + `"]`)
	}},
	{block: "source", name: "ts_us", typ: "int64", connectOnly: true, value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue {
		return num(c.Snapshot.TimestampMs * 1000)
	}},
	{block: "source", name: "ts_ns", typ: "int64", connectOnly: true, value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue {
		return num(c.Snapshot.TimestampMs * 1_000_000)
	}},
	{block: "source", name: "schema", typ: "string", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue { return str(c.Table.Namespace) }},
	{block: "source", name: "table", typ: "string", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue { return str(c.Table.Name) }},
	{block: "source", name: "table_uuid", typ: "string", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue { return str(c.Table.UUID) }},
	{block: "source", name: "snapshot_id", typ: "int64", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue { return num(c.Snapshot.ID) }},
	{block: "source", name: "sequence_number", typ: "int64", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue {
		return num(c.Snapshot.SequenceNumber)
	}},
	{block: "source", name: "operation", typ: "string", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue { return str(c.Snapshot.Operation) }},
	{block: "source", name: "row_id", typ: "int64", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue { return num(e.RowID) }},
	{block: "source", name: "last_updated_sequence_number", typ: "int64", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue { return num(e.LUSN) }},
	{block: "source", name: "event_index", typ: "int64", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue { return num(int64(e.Index)) }},
	{block: "source", name: "paired", typ: "string", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue {
		if e.Source == "" {
			return envValue{}
		}
		return str(e.Source)
	}},
	{block: "source", name: "paired_row_id", typ: "int64", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue {
		if e.Source == "" {
			return envValue{}
		}
		return num(e.PairedRowID)
	}},
	{block: "transaction", name: "id", typ: "string", value: func(_ *Envelope, c *cdc.Commit, _ *cdc.Event, _ int64) envValue {
		return str(c.Table.UUID + ":" + strconv.FormatInt(c.Snapshot.SequenceNumber, 10))
	}},
	{block: "transaction", name: "total_order", typ: "int64", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue { return num(int64(e.Index) + 1) }},
	{block: "transaction", name: "data_collection_order", typ: "int64", value: func(_ *Envelope, _ *cdc.Commit, e *cdc.Event, _ int64) envValue { return num(int64(e.Index) + 1) }},
}

// envRef is one entry of add.fields or add.headers: the envelope field
// and the name it is added under.
type envRef struct {
	out string
	f   *envField
}

// envBlocks are the envelope's top-level fields that are structs: a name
// inside them is looked for there first.
var envBlocks = map[string]bool{"source": true, "transaction": true}

// resolveRefs resolves add.fields or add.headers entries as
// ExtractNewRecordState does: "a.b" is field b of struct a; a bare name is
// a transaction field (id, total_order, data_collection_order), a
// top-level one (op, ts_ms, ts_us, ts_ns) or else a source field; a field
// not in its struct is looked for at the top level; ":name" renames. A
// field the format's envelope lacks is an error, where the SMT would
// silently add nothing.
func resolveRefs(prefix string, entries []string, connect bool) ([]envRef, error) {
	var out []envRef
	for _, entry := range entries {
		path, rename, renamed := strings.Cut(entry, ":")
		if renamed && (rename == "" || strings.Contains(rename, ":")) {
			return nil, fmt.Errorf("%q: want FIELD or FIELD:NAME", entry)
		}
		block, name, dotted := strings.Cut(path, ".")
		if !dotted {
			block, name = "", path
			switch name {
			case "id", "total_order", "data_collection_order":
				block = "transaction"
			case "op", "ts_ms", "ts_us", "ts_ns":
			default:
				block = "source"
			}
		} else if !envBlocks[block] || strings.Contains(name, ".") {
			return nil, fmt.Errorf("%q: the envelope has no struct %q with plain fields (source and transaction have)", entry, block)
		}
		f := findEnvField(block, name, connect)
		if f == nil && block != "" {
			f = findEnvField("", name, connect)
		}
		if f == nil {
			what := "debezium-json"
			if connect {
				what = "debezium-connect-json"
			}
			return nil, fmt.Errorf("%q: %s's envelope has no such field", entry, what)
		}
		o := prefix + name
		switch {
		case renamed:
			o = prefix + rename
		case dotted:
			o = prefix + block + "_" + name
		}
		out = append(out, envRef{out: o, f: f})
	}
	return out, nil
}

func findEnvField(block, name string, connect bool) *envField {
	for i := range envFields {
		f := &envFields[i]
		if f.block == block && f.name == name && (connect || !f.connectOnly) {
			return f
		}
	}
	return nil
}
