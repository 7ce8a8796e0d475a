package debezium

import (
	"fmt"
	"strconv"
)

// This file writes Kafka Connect schemas in the JSON form Connect's
// JsonConverter reads (schemas.enable=true): {"type", "fields" | "items" |
// "keys"/"values", "optional", "name", "version", "parameters", "field"}.
// They are written by hand because no Go library speaks Connect's schema
// JSON; the tests decode them and check them against Connect's rules.

// Connect and Debezium logical type names used by the format.
const (
	connectDecimal   = "org.apache.kafka.connect.data.Decimal"
	connectDate      = "org.apache.kafka.connect.data.Date"
	connectTime      = "org.apache.kafka.connect.data.Time"
	connectTimestamp = "org.apache.kafka.connect.data.Timestamp"
	dbzDate          = "io.debezium.time.Date"
	dbzMicroTime     = "io.debezium.time.MicroTime"
	dbzMicroTS       = "io.debezium.time.MicroTimestamp"
	dbzNanoTS        = "io.debezium.time.NanoTimestamp"
	dbzZonedTS       = "io.debezium.time.ZonedTimestamp"
	dbzIsoDate       = "io.debezium.time.IsoDate"
	dbzIsoTime       = "io.debezium.time.IsoTime"
	dbzIsoTS         = "io.debezium.time.IsoTimestamp"
	dbzUUID          = "io.debezium.data.Uuid"
	dbzEnum          = "io.debezium.data.Enum"
	dbzJSON          = "io.debezium.data.Json"
	dbzGeometry      = "io.debezium.data.geometry.Geometry"
	dbzGeography     = "io.debezium.data.geometry.Geography"
	// icecdcUnknown names Iceberg's unknown type, whose values are all
	// null: Connect has no null type, so it is an optional string that is
	// always null.
	icecdcUnknown = "io.icecdc.data.Unknown"
)

// UnsupportedTypeError reports a column whose Iceberg type has no Kafka
// Connect form (variant, geometry, geography): the format refuses the
// table rather than drop the column.
type UnsupportedTypeError struct {
	Column string // path from the top-level field: "shape", "a.b", "tags[]"
	Type   string
}

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("column %q: Iceberg type %s has no Kafka Connect form; use format debezium-json, or drop the column from the table", e.Column, e.Type)
}

// connectSchemaOpen appends the schema of t without its closing brace, so
// that the caller can add "name" to the row's Value struct and "field".
// optional applies to t itself; path names the column in errors.
func connectSchemaOpen(dst []byte, t *jsonType, optional bool, o *ConnectOptions, path string) ([]byte, error) {
	var p connectPrimitive
	switch t.kind {
	case kindBool:
		p.typ = "boolean"
	case kindInt:
		p.typ = "int32"
	case kindLong:
		p.typ = "int64"
	case kindFloat:
		p.typ = "float"
	case kindDouble:
		p.typ = "double"
	case kindString:
		p.typ = "string"
	case kindUUID:
		p = connectPrimitive{typ: "string", logical: dbzUUID, version: 1}
	case kindFixed, kindBinary:
		p.typ = "bytes"
	case kindUnknown:
		p = connectPrimitive{typ: "string", logical: icecdcUnknown}
		optional = true
	case kindVariant, kindVariantInline:
		p = connectPrimitive{typ: "string", logical: dbzJSON, version: 1}
	case kindGeo:
		return appendConnectGeoSchema(dst, t, optional), nil
	case kindDecimal:
		p = connectDecimalSchema(t, o)
	case kindDate, kindTime, kindTimestamp, kindTimestampNs:
		p = connectTemporalSchema(t.kind, o)
	case kindTimestampTZ, kindTimestampTZNs:
		p = connectPrimitive{typ: "string", logical: dbzZonedTS, version: 1}
	case kindStruct, kindList, kindMap:
		return connectNestedSchema(dst, t, optional, o, path)
	default:
		return dst, &UnsupportedTypeError{Column: path, Type: t.name}
	}
	return p.appendOpen(dst, optional), nil
}

// connectPrimitive is the schema of a Connect primitive, and its logical
// type when it has one.
type connectPrimitive struct {
	typ, logical string
	version      int
	params       []string // key, value, key, value, ...
}

func (p *connectPrimitive) appendOpen(dst []byte, optional bool) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, p.typ...)
	dst = append(dst, `","optional":`...)
	dst = strconv.AppendBool(dst, optional)
	if p.logical != "" {
		dst = append(dst, `,"name":`...)
		dst = appendJSONString(dst, p.logical)
	}
	if p.version > 0 {
		dst = append(dst, `,"version":`...)
		dst = strconv.AppendInt(dst, int64(p.version), 10)
	}
	if len(p.params) > 0 {
		dst = append(dst, `,"parameters":{`...)
		for i := 0; i < len(p.params); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, p.params[i])
			dst = append(dst, ':')
			dst = appendJSONString(dst, p.params[i+1])
		}
		dst = append(dst, '}')
	}
	return dst
}

// connectDecimalSchema is a decimal's schema under decimal.handling.mode.
func connectDecimalSchema(t *jsonType, o *ConnectOptions) connectPrimitive {
	switch o.DecimalHandling {
	case DecimalDouble:
		return connectPrimitive{typ: "double"}
	case DecimalString:
		return connectPrimitive{typ: "string"}
	}
	return connectPrimitive{typ: "bytes", logical: connectDecimal, version: 1,
		params: []string{"scale", strconv.Itoa(t.scale), "connect.decimal.precision", strconv.Itoa(t.prec)}}
}

// connectTemporalSchema is the schema of a date, time or timestamp without
// zone under time.precision.mode.
func connectTemporalSchema(k jsonKind, o *ConnectOptions) connectPrimitive {
	p := connectPrimitive{version: 1}
	switch k {
	case kindDate:
		switch o.TimePrecision {
		case TimeConnect:
			p.typ, p.logical = "int32", connectDate
		case TimeISOString:
			p.typ, p.logical = "string", dbzIsoDate
		default:
			p.typ, p.logical = "int32", dbzDate
		}
	case kindTime:
		switch o.TimePrecision {
		case TimeConnect:
			p.typ, p.logical = "int32", connectTime
		case TimeISOString:
			p.typ, p.logical = "string", dbzIsoTime
		default:
			p.typ, p.logical = "int64", dbzMicroTime
		}
	default:
		switch o.TimePrecision {
		case TimeConnect:
			p.typ, p.logical = "int64", connectTimestamp
		case TimeISOString:
			p.typ, p.logical = "string", dbzIsoTS
		default:
			p.typ, p.logical = "int64", dbzMicroTS
			if k == kindTimestampNs {
				p.logical = dbzNanoTS
			}
		}
	}
	return p
}

// appendConnectGeoSchema appends Debezium's Geometry or Geography struct;
// a CRS without an srid is kept as a schema parameter so that it is not
// lost.
func appendConnectGeoSchema(dst []byte, t *jsonType, optional bool) []byte {
	dst = append(dst, `{"type":"struct","fields":[{"type":"bytes","optional":false,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}],"optional":`...)
	dst = strconv.AppendBool(dst, optional)
	dst = append(dst, `,"name":`...)
	dst = appendJSONString(dst, t.geoName)
	dst = append(dst, `,"version":1`...)
	if !t.hasSRID {
		dst = append(dst, `,"parameters":{"crs":`...)
		dst = appendJSONString(dst, t.crs)
		dst = append(dst, '}')
	}
	return dst
}

// connectNestedSchema appends the schema of a struct, list or map.
func connectNestedSchema(dst []byte, t *jsonType, optional bool, o *ConnectOptions, path string) ([]byte, error) {
	var err error
	switch t.kind {
	case kindStruct:
		dst = append(dst, `{"type":"struct","fields":[`...)
		for i := range t.fields {
			f := &t.fields[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = connectSchemaOpen(dst, f.typ, !f.required, o, joinPath(path, f.name)); err != nil {
				return dst, err
			}
			dst = append(dst, `,"field":`...)
			dst = appendJSONString(dst, f.name)
			dst = append(dst, '}')
		}
		dst = append(dst, `],"optional":`...)
		return strconv.AppendBool(dst, optional), nil
	case kindList:
		dst = append(dst, `{"type":"array","items":`...)
		if dst, err = connectSchemaOpen(dst, t.elem, !t.elemRequired, o, path+"[]"); err != nil {
			return dst, err
		}
	default:
		dst = append(dst, `{"type":"map","keys":`...)
		if dst, err = connectSchemaOpen(dst, t.key, false, o, path+".key"); err != nil {
			return dst, err
		}
		dst = append(dst, `},"values":`...)
		if dst, err = connectSchemaOpen(dst, t.elem, !t.elemRequired, o, path+".value"); err != nil {
			return dst, err
		}
	}
	dst = append(dst, `},"optional":`...)
	return strconv.AppendBool(dst, optional), nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// connectField appends one primitive field schema of the envelope.
func connectField(dst []byte, typ string, optional bool, field string) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","optional":`...)
	dst = strconv.AppendBool(dst, optional)
	dst = append(dst, `,"field":"`...)
	dst = append(dst, field...)
	return append(dst, `"}`...)
}

// connectSourceSchema is the schema of the envelope's source block. Its
// fields follow Debezium's common ones (version … table), then icecdc's.
var connectSourceSchema = func() string {
	b := []byte(`{"type":"struct","fields":[`)
	b = connectField(b, "string", false, "version")
	b = append(b, ',')
	b = connectField(b, "string", false, "connector")
	b = append(b, ',')
	b = connectField(b, "string", false, "name")
	b = append(b, ',')
	b = connectField(b, "int64", false, "ts_ms")
	b = append(b, `,{"type":"string","optional":true,"name":"`+dbzEnum+`","version":1,"parameters":{"allowed":"true,last,false"},"default":"false","field":"snapshot"},`...)
	b = connectField(b, "boolean", true, "resync")
	b = append(b, ',')
	b = connectField(b, "string", false, "db")
	b = append(b, ',')
	b = connectField(b, "string", true, "sequence")
	b = append(b, ',')
	b = connectField(b, "int64", true, "ts_us")
	b = append(b, ',')
	b = connectField(b, "int64", true, "ts_ns")
	b = append(b, ',')
	b = connectField(b, "string", false, "schema")
	b = append(b, ',')
	b = connectField(b, "string", false, "table")
	b = append(b, ',')
	b = connectField(b, "string", false, "table_uuid")
	b = append(b, ',')
	b = connectField(b, "int64", false, "snapshot_id")
	b = append(b, ',')
	b = connectField(b, "int64", false, "sequence_number")
	b = append(b, ',')
	b = connectField(b, "string", false, "operation")
	b = append(b, ',')
	b = connectField(b, "int64", false, "row_id")
	b = append(b, ',')
	b = connectField(b, "int64", false, "last_updated_sequence_number")
	b = append(b, ',')
	b = connectField(b, "int64", false, "event_index")
	b = append(b, ',')
	b = connectField(b, "string", true, "paired")
	b = append(b, ',')
	b = connectField(b, "int64", true, "paired_row_id")
	b = append(b, `],"optional":false,"name":"io.icecdc.connector.iceberg.Source","field":"source"}`...)
	return string(b)
}()

// connectTransactionBlock is the schema of the envelope's transaction
// block, named and versioned as Debezium's.
var connectTransactionBlock = func() string {
	b := []byte(`{"type":"struct","fields":[`)
	b = connectField(b, "string", false, "id")
	b = append(b, ',')
	b = connectField(b, "int64", false, "total_order")
	b = append(b, ',')
	b = connectField(b, "int64", false, "data_collection_order")
	b = append(b, `],"optional":true,"name":"event.block","version":1,"field":"transaction"}`...)
	return string(b)
}()

// envelopeVersion is the version of Debezium's envelope schema since it
// carries ts_us and ts_ns.
const envelopeVersion = 2

// connectEnvelopeSchema appends the envelope schema of a table whose row
// schema (the Value struct, open: without "field" and closing brace) is
// row.
func connectEnvelopeSchema(dst []byte, row []byte, name string) []byte {
	dst = append(dst, `{"type":"struct","fields":[`...)
	dst = append(dst, row...)
	dst = append(dst, `,"field":"before"},`...)
	dst = append(dst, row...)
	dst = append(dst, `,"field":"after"},`...)
	dst = append(dst, connectSourceSchema...)
	dst = append(dst, ',')
	dst = connectField(dst, "string", false, "op")
	dst = append(dst, ',')
	dst = connectField(dst, "int64", true, "ts_ms")
	dst = append(dst, ',')
	dst = connectField(dst, "int64", true, "ts_us")
	dst = append(dst, ',')
	dst = connectField(dst, "int64", true, "ts_ns")
	dst = append(dst, ',')
	dst = append(dst, connectTransactionBlock...)
	dst = append(dst, `],"optional":false,"name":`...)
	dst = appendJSONString(dst, name)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, envelopeVersion, 10)
	return append(dst, '}')
}
