package debezium

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
)

// The schema-change record, shaped as Debezium's (source, ts_ms,
// databaseName, schemaName, ddl, tableChanges) plus the Iceberg schema ids
// and the field-by-field changes.
type (
	schemaChangeKey struct {
		DatabaseName string `json:"databaseName"`
	}
	schemaChangeValue struct {
		Source           schemaChangeSource `json:"source"`
		TsMs             int64              `json:"ts_ms"`
		DatabaseName     string             `json:"databaseName"`
		SchemaName       string             `json:"schemaName"`
		DDL              string             `json:"ddl"`
		TableChanges     []tableChange      `json:"tableChanges"`
		SchemaID         int                `json:"schema_id"`
		PreviousSchemaID *int               `json:"previous_schema_id"`
		Changes          []fieldChangeJSON  `json:"changes"`
	}
	schemaChangeSource struct {
		Version        string `json:"version"`
		Connector      string `json:"connector"`
		Name           string `json:"name"`
		TsMs           int64  `json:"ts_ms"`
		DB             string `json:"db"`
		Schema         string `json:"schema"`
		Table          string `json:"table"`
		TableUUID      string `json:"table_uuid"`
		SnapshotID     int64  `json:"snapshot_id"`
		SequenceNumber int64  `json:"sequence_number"`
		Operation      string `json:"operation"`
	}
	tableChange struct {
		Type  string      `json:"type"`
		ID    string      `json:"id"`
		Table tableSchema `json:"table"`
	}
	tableSchema struct {
		DefaultCharsetName    *string         `json:"defaultCharsetName"`
		PrimaryKeyColumnNames []string        `json:"primaryKeyColumnNames"`
		Columns               []columnJSON    `json:"columns"`
		Attributes            []attributeJSON `json:"attributes"`
	}
	columnJSON struct {
		Name                   string   `json:"name"`
		JDBCType               int      `json:"jdbcType"`
		NativeType             *int     `json:"nativeType"`
		TypeName               string   `json:"typeName"`
		TypeExpression         string   `json:"typeExpression"`
		CharsetName            *string  `json:"charsetName"`
		Length                 *int     `json:"length"`
		Scale                  *int     `json:"scale"`
		Position               int      `json:"position"`
		Optional               bool     `json:"optional"`
		AutoIncremented        bool     `json:"autoIncremented"`
		Generated              bool     `json:"generated"`
		Comment                *string  `json:"comment"`
		HasDefaultValue        bool     `json:"hasDefaultValue"`
		DefaultValueExpression *string  `json:"defaultValueExpression"`
		EnumValues             []string `json:"enumValues"`
		FieldID                int      `json:"fieldId"`
	}
	attributeJSON struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	fieldChangeJSON struct {
		Kind    string  `json:"kind"`
		FieldID *int    `json:"field_id"`
		Path    *string `json:"path"`
		From    *string `json:"from"`
		To      *string `json:"to"`
		After   *string `json:"after"`
	}
)

// JDBC type codes (java.sql.Types) of Iceberg's types, as Debezium's
// column descriptions carry them.
func jdbcType(t iceberg.Type) (code int, length, scale *int) {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return 16, nil, nil
	case iceberg.Int32Type:
		return 4, nil, nil
	case iceberg.Int64Type:
		return -5, nil, nil
	case iceberg.Float32Type:
		return 7, nil, nil
	case iceberg.Float64Type:
		return 8, nil, nil
	case iceberg.DecimalType:
		p, s := t.Precision(), t.Scale()
		return 3, &p, &s
	case iceberg.DateType:
		return 91, nil, nil
	case iceberg.TimeType:
		return 92, nil, nil
	case iceberg.TimestampType, iceberg.TimestampNsType:
		return 93, nil, nil
	case iceberg.TimestampTzType, iceberg.TimestampTzNsType:
		return 2014, nil, nil
	case iceberg.StringType:
		return 12, nil, nil
	case iceberg.FixedType:
		n := t.Len()
		return -2, &n, nil
	case iceberg.BinaryType:
		return -3, nil, nil
	case *iceberg.StructType:
		return 2002, nil, nil
	case *iceberg.ListType:
		return 2003, nil, nil
	}
	return 1111, nil, nil // OTHER: uuid, map, variant, geometry, …
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// schemaChangeRecord builds the record's key and value.
func schemaChangeRecord(env *Envelope, c *cdc.Commit, s *cdc.SchemaChange, tsMs int64) (schemaChangeKey, schemaChangeValue, error) {
	sc := c.Table.Schema
	if sc == nil {
		return schemaChangeKey{}, schemaChangeValue{}, errNoSchema
	}
	t := c.Table
	full := t.Namespace + "." + t.Name
	cols := make([]columnJSON, 0, len(sc.Fields()))
	for i, f := range sc.Fields() {
		code, length, scale := jdbcType(f.Type)
		col := columnJSON{Name: f.Name, JDBCType: code, TypeName: f.Type.String(), TypeExpression: f.Type.String(),
			Length: length, Scale: scale, Position: i + 1, Optional: !f.Required, Comment: optString(f.Doc), FieldID: f.ID}
		if f.WriteDefault != nil {
			b, err := json.Marshal(f.WriteDefault)
			if err != nil {
				return schemaChangeKey{}, schemaChangeValue{}, fmt.Errorf("field %s: write-default: %w", f.Name, err)
			}
			col.HasDefaultValue, col.DefaultValueExpression = true, optString(string(b))
		}
		cols = append(cols, col)
	}
	pk := []string{}
	for _, id := range sc.IdentifierFieldIDs {
		if n, ok := sc.FindColumnName(id); ok {
			pk = append(pk, n)
		}
	}
	v := schemaChangeValue{
		Source: schemaChangeSource{Version: env.Version, Connector: "icecdc", Name: env.Pipeline, TsMs: c.Snapshot.TimestampMs,
			DB: t.Catalog, Schema: t.Namespace, Table: t.Name, TableUUID: t.UUID, SnapshotID: c.Snapshot.ID,
			SequenceNumber: c.Snapshot.SequenceNumber, Operation: c.Snapshot.Operation},
		TsMs: tsMs, DatabaseName: t.Catalog, SchemaName: t.Namespace, DDL: s.DDL(full, sc),
		TableChanges: []tableChange{{Type: s.Type, ID: `"` + t.Namespace + `"."` + t.Name + `"`,
			Table: tableSchema{PrimaryKeyColumnNames: pk, Columns: cols, Attributes: []attributeJSON{}}}},
		SchemaID: sc.ID, Changes: []fieldChangeJSON{},
	}
	if s.Previous != nil {
		id := s.Previous.ID
		v.PreviousSchemaID = &id
	}
	for _, ch := range s.Changes {
		fc := fieldChangeJSON{Kind: ch.Kind, Path: optString(ch.Path), From: optString(ch.From), To: optString(ch.To), After: optString(ch.After)}
		if ch.FieldID != 0 {
			id := ch.FieldID
			fc.FieldID = &id
		}
		v.Changes = append(v.Changes, fc)
	}
	return schemaChangeKey{DatabaseName: t.Catalog}, v, nil
}

// appendJSON appends v as JSON without a trailing newline, leaving <, >
// and & as they are (Iceberg type strings hold angle brackets).
func appendJSON(dst []byte, v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...), nil
}

// EncodeSchemaChange encodes the record; its key is {"databaseName":
// <catalog>}, as Debezium's.
func (f *JSON) EncodeSchemaChange(c *cdc.Commit, s *cdc.SchemaChange, tsMs int64) (key, value []byte, err error) {
	k, v, err := schemaChangeRecord(&f.Envelope, c, s, tsMs)
	if err != nil {
		return nil, nil, err
	}
	if key, err = appendJSON(nil, k); err != nil {
		return nil, nil, err
	}
	value, err = appendJSON(nil, v)
	return key, value, err
}

// The Connect schemas of schema-change records.
type connectSchemaJSON struct {
	Type     string              `json:"type"`
	Items    *connectSchemaJSON  `json:"items,omitempty"`
	Fields   []connectSchemaJSON `json:"fields,omitempty"`
	Optional bool                `json:"optional"`
	Name     string              `json:"name,omitempty"`
	Field    string              `json:"field,omitempty"`
}

func cfield(typ, name string, optional bool) connectSchemaJSON {
	return connectSchemaJSON{Type: typ, Field: name, Optional: optional}
}

func cstruct(name, field string, optional bool, fields ...connectSchemaJSON) connectSchemaJSON {
	return connectSchemaJSON{Type: "struct", Name: name, Field: field, Optional: optional, Fields: fields}
}

func carray(field string, optional bool, items connectSchemaJSON) connectSchemaJSON {
	return connectSchemaJSON{Type: "array", Field: field, Optional: optional, Items: &items}
}

var (
	connectSchemaChangeKeySchema = cstruct("io.icecdc.connector.iceberg.SchemaChangeKey", "", false,
		cfield("string", "databaseName", false))
	connectSchemaChangeValueSchema = cstruct("io.icecdc.connector.iceberg.SchemaChangeValue", "", false,
		cstruct("io.icecdc.connector.iceberg.SchemaChangeSource", "source", false,
			cfield("string", "version", false), cfield("string", "connector", false), cfield("string", "name", false),
			cfield("int64", "ts_ms", false), cfield("string", "db", false), cfield("string", "schema", false),
			cfield("string", "table", false), cfield("string", "table_uuid", false), cfield("int64", "snapshot_id", false),
			cfield("int64", "sequence_number", false), cfield("string", "operation", false)),
		cfield("int64", "ts_ms", false),
		cfield("string", "databaseName", true),
		cfield("string", "schemaName", true),
		cfield("string", "ddl", true),
		carray("tableChanges", false, cstruct("io.debezium.connector.schema.Change", "", false,
			cfield("string", "type", false),
			cfield("string", "id", false),
			cstruct("io.debezium.connector.schema.Table", "table", true,
				cfield("string", "defaultCharsetName", true),
				carray("primaryKeyColumnNames", true, cfield("string", "", false)),
				carray("columns", false, cstruct("io.debezium.connector.schema.Column", "", false,
					cfield("string", "name", false), cfield("int32", "jdbcType", false), cfield("int32", "nativeType", true),
					cfield("string", "typeName", false), cfield("string", "typeExpression", true), cfield("string", "charsetName", true),
					cfield("int32", "length", true), cfield("int32", "scale", true), cfield("int32", "position", false),
					cfield("boolean", "optional", true), cfield("boolean", "autoIncremented", true), cfield("boolean", "generated", true),
					cfield("string", "comment", true), cfield("boolean", "hasDefaultValue", true),
					cfield("string", "defaultValueExpression", true), carray("enumValues", true, cfield("string", "", false)),
					cfield("int32", "fieldId", false))),
				carray("attributes", true, cstruct("io.debezium.connector.schema.Attribute", "", false,
					cfield("string", "name", false), cfield("string", "value", true)))))),
		cfield("int32", "schema_id", false),
		cfield("int32", "previous_schema_id", true),
		carray("changes", false, cstruct("io.icecdc.connector.iceberg.FieldChange", "", false,
			cfield("string", "kind", false), cfield("int32", "field_id", true), cfield("string", "path", true),
			cfield("string", "from", true), cfield("string", "to", true), cfield("string", "after", true))))
)

// EncodeSchemaChange encodes the record in Connect's form: key and value
// each wrapped with their schema.
func (f *ConnectJSON) EncodeSchemaChange(c *cdc.Commit, s *cdc.SchemaChange, tsMs int64) (key, value []byte, err error) {
	k, v, err := schemaChangeRecord(&f.Envelope, c, s, tsMs)
	if err != nil {
		return nil, nil, err
	}
	key, err = appendJSON(nil, struct {
		Schema  connectSchemaJSON `json:"schema"`
		Payload schemaChangeKey   `json:"payload"`
	}{connectSchemaChangeKeySchema, k})
	if err != nil {
		return nil, nil, err
	}
	value, err = appendJSON(nil, struct {
		Schema  connectSchemaJSON `json:"schema"`
		Payload schemaChangeValue `json:"payload"`
	}{connectSchemaChangeValueSchema, v})
	return key, value, err
}
