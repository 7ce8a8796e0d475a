package source

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Column defaults in the spec's JSON single-value form.
//
// A v3 column's initial-default (the value of rows written before it was
// added) and write-default are kept in the metadata in the spec's JSON
// form: a date, time or timestamp as an ISO-8601 string
// ("2001-02-03T04:05:06.789012+00:00"), which Trino and Iceberg Java
// write. iceberg-go v0.7.0 reads the value as the JSON decoder gives it
// and fills a file's missing column from it only for a number (days,
// microseconds, nanoseconds): a string fails every read of a file that
// lacks the column. The reader's metadata (newReader) therefore carries
// such defaults as the numbers they stand for; the table's own metadata is
// left as it is. Decimal, uuid, fixed and binary strings iceberg-go reads
// itself.

// numericDefaults is md with every date, time and timestamp default given
// as a string converted to its number, or md when it has none. A string
// that is not a valid value of its type is left, for iceberg-go's read to
// report.
func numericDefaults(md table.Metadata) table.Metadata {
	var changed bool
	schemas := make([]*iceberg.Schema, len(md.Schemas()))
	for i, sc := range md.Schemas() {
		st, ok := numericDefaultType(&iceberg.StructType{FieldList: sc.Fields()})
		if !ok {
			schemas[i] = sc
			continue
		}
		changed = true
		schemas[i] = iceberg.NewSchemaWithIdentifiers(sc.ID, sc.IdentifierFieldIDs, st.(*iceberg.StructType).FieldList...)
	}
	if !changed {
		return md
	}
	out := &schemaMetadata{Metadata: md, schemas: schemas, current: md.CurrentSchema()}
	if cur := md.CurrentSchema(); cur != nil {
		for _, sc := range schemas {
			if sc.ID == cur.ID {
				out.current = sc
			}
		}
	}
	return out
}

// schemaMetadata is a table's metadata with other schemas.
type schemaMetadata struct {
	table.Metadata
	schemas []*iceberg.Schema
	current *iceberg.Schema
}

func (m *schemaMetadata) Schemas() []*iceberg.Schema     { return m.schemas }
func (m *schemaMetadata) CurrentSchema() *iceberg.Schema { return m.current }

func numericDefaultField(f iceberg.NestedField) (iceberg.NestedField, bool) {
	changed := false
	if v, ok := numericDefault(f.Type, f.InitialDefault); ok {
		f.InitialDefault, changed = v, true
	}
	if v, ok := numericDefault(f.Type, f.WriteDefault); ok {
		f.WriteDefault, changed = v, true
	}
	if t, ok := numericDefaultType(f.Type); ok {
		f.Type, changed = t, true
	}
	return f, changed
}

// numericDefaultType is t with the defaults of the fields inside it
// converted, and whether any was.
func numericDefaultType(t iceberg.Type) (iceberg.Type, bool) {
	return rewriteNested(t, numericDefaultType, numericDefaultField)
}

// numericDefault is v, a default of type t in the spec's string form, as
// the number iceberg-go reads, and whether it was converted.
func numericDefault(t iceberg.Type, v any) (any, bool) {
	s, ok := v.(string)
	if !ok {
		return nil, false
	}
	switch t.(type) {
	case iceberg.DateType:
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, false
		}
		return iceberg.Date(floorDiv(d.Unix(), 86400)), true
	case iceberg.TimeType:
		d, err := time.Parse("15:04:05.999999999", s)
		if err != nil {
			return nil, false
		}
		midnight := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
		return iceberg.Time(d.Sub(midnight).Microseconds()), true
	case iceberg.TimestampType, iceberg.TimestampTzType:
		ts, err := parseSpecTimestamp(s)
		if err != nil {
			return nil, false
		}
		return iceberg.Timestamp(ts.UnixMicro()), true
	case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		ts, err := parseSpecTimestamp(s)
		if err != nil {
			return nil, false
		}
		return iceberg.TimestampNano(ts.UnixNano()), true
	}
	return nil, false
}

// parseSpecTimestamp reads a timestamp in the spec's form: with a zone
// offset (timestamptz: "+00:00", also "Z") or without one (timestamp,
// read as UTC).
func parseSpecTimestamp(s string) (time.Time, error) {
	const local = "2006-01-02T15:04:05.999999999"
	if strings.HasSuffix(s, "Z") || strings.LastIndexAny(s, "+-") > strings.IndexByte(s, 'T') {
		return time.Parse(local+"Z07:00", s)
	}
	ts, err := time.Parse(local, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q: %w", s, err)
	}
	return ts, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
