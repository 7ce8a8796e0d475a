package cdc

import (
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/schemadiff"
)

// SchemaChange is the change of a table's schema that a snapshot brings:
// the snapshot's schema differs from its parent's (DDL in Iceberg changes
// the metadata only; the change takes effect at the next snapshot), or the
// table's first snapshot, or the snapshot an initial read starts from.
type SchemaChange struct {
	// Type is "CREATE" (the table's first snapshot, or an initial read:
	// the whole schema) or "ALTER".
	Type string
	// Previous is the schema before the change; nil for CREATE, and for
	// an ALTER whose parent snapshot is no longer in the metadata (then
	// Changes is empty and the record carries the whole new schema).
	Previous *iceberg.Schema
	// Changes lists what differs, field by field (by field id).
	Changes []schemadiff.FieldChange
}

// NewSchemaChange compares a snapshot's schema sc with its parent's. It
// returns nil when the snapshot keeps the parent's schema. parentKnown is
// false when the snapshot has a parent that the metadata no longer holds;
// prev is nil for a snapshot without a parent.
func NewSchemaChange(prev *iceberg.Schema, parentKnown bool, sc *iceberg.Schema) *SchemaChange {
	switch {
	case sc == nil:
		return nil
	case !parentKnown:
		return &SchemaChange{Type: "ALTER"}
	case prev == nil:
		return &SchemaChange{Type: "CREATE"}
	case prev.ID == sc.ID && prev.Equals(sc):
		return nil
	}
	ch := schemadiff.Diff(prev, sc)
	if len(ch) == 0 && prev.ID == sc.ID {
		return nil
	}
	return &SchemaChange{Type: "ALTER", Previous: prev, Changes: ch}
}

// DDL renders the change as Iceberg DDL statements, as Spark writes them,
// joined by "; ": what Debezium's ddl field holds for a relational source.
func (s *SchemaChange) DDL(table string, sc *iceberg.Schema) string {
	if s.Type == "CREATE" || (s.Previous == nil && len(s.Changes) == 0) {
		return schemadiff.CreateDDL(table, sc)
	}
	return schemadiff.AlterDDL(table, s.Changes)
}

// SchemaChangeEncoder encodes a commit's schema change as the key and
// value of a record of the schema-change topic, in a format's form; tsMs
// is the processing time.
type SchemaChangeEncoder interface {
	EncodeSchemaChange(c *Commit, s *SchemaChange, tsMs int64) (key, value []byte, err error)
}

// encodeSchemaChange encodes a commit's schema change with enc as the
// record of the schema-change topic.
func encodeSchemaChange(enc Encoder, c *Commit, s *SchemaChange, tsMs int64) (*Message, error) {
	se, ok := enc.(SchemaChangeEncoder)
	if !ok {
		return nil, fmt.Errorf("format %T has no schema-change records (table %s.%s)", enc, c.Table.Namespace, c.Table.Name)
	}
	k, v, err := se.EncodeSchemaChange(c, s, tsMs)
	if err != nil {
		return nil, err
	}
	return &Message{ID: c.Table.UUID + ":" + strconv.FormatInt(c.Snapshot.SequenceNumber, 10) + ":schema", Key: k, Value: v}, nil
}
