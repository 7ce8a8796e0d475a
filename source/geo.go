package source

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Geometry and geography columns of files written without an Arrow
// schema in their footer (Iceberg Java's writers, for one) cannot be read
// through iceberg-go v0.7.0 as their table types: arrow-go reads a
// Parquet GEOMETRY/GEOGRAPHY byte array as a geoarrow.wkb column only when
// the file's ARROW:schema says so (geoarrow-go does not claim the Parquet
// logical type), so iceberg-go sees plain binary in the file and refuses
// to promote binary to geometry. Such files are read through a second
// table whose schemas say binary wherever the table's say geometry or
// geography: the WKB bytes come through unchanged, and the events keep the
// table's own types (rows are decoded against the real schema), so the
// encoders still see geometry with its CRS.

// plainGeo reports whether a data file's geometry or geography columns
// read as plain binary with arrow-go: when some leaf carries the logical
// type but the Arrow schema the file maps to holds fewer geoarrow columns.
func plainGeo(md *metadata.FileMetaData) (bool, error) {
	sc := md.Schema
	leaves := 0
	for i := 0; i < sc.NumColumns(); i++ {
		switch sc.Column(i).LogicalType().(type) {
		case schema.GeometryLogicalType, *schema.GeometryLogicalType, schema.GeographyLogicalType, *schema.GeographyLogicalType:
			leaves++
		}
	}
	if leaves == 0 {
		return false, nil
	}
	as, err := pqarrow.FromParquet(sc, &pqarrow.ArrowReadProperties{}, md.KeyValueMetadata())
	if err != nil {
		return false, fmt.Errorf("arrow schema: %w", err)
	}
	ext := 0
	for _, f := range as.Fields() {
		ext += countGeoArrow(f.Type)
	}
	return ext < leaves, nil
}

// countGeoArrow counts the geoarrow-typed fields in t, nested ones
// included (other extensions, uuid for one, do not count).
func countGeoArrow(t arrow.DataType) int {
	switch t := t.(type) {
	case arrow.ExtensionType:
		if strings.HasPrefix(t.ExtensionName(), "geoarrow.") {
			return 1
		}
		return countGeoArrow(t.StorageType())
	case arrow.NestedType:
		n := 0
		for _, f := range t.Fields() {
			n += countGeoArrow(f.Type)
		}
		return n
	}
	return 0
}

// hasGeo reports whether any schema of md holds a geometry or geography.
func hasGeo(md table.Metadata) bool {
	for _, sc := range md.Schemas() {
		for _, f := range sc.Fields() {
			if _, ok := geoToBinary(f.Type); ok {
				return true
			}
		}
	}
	return false
}

// binaryGeoMetadata is a table's metadata with every schema's geometry and
// geography types read as binary (see above).
type binaryGeoMetadata struct {
	table.Metadata
	schemas []*iceberg.Schema
	current *iceberg.Schema
}

func newBinaryGeoMetadata(md table.Metadata) *binaryGeoMetadata {
	out := &binaryGeoMetadata{Metadata: md}
	cur := md.CurrentSchema()
	for _, sc := range md.Schemas() {
		fields := make([]iceberg.NestedField, len(sc.Fields()))
		for i, f := range sc.Fields() {
			fields[i], _ = geoFieldToBinary(f)
		}
		b := iceberg.NewSchemaWithIdentifiers(sc.ID, sc.IdentifierFieldIDs, fields...)
		out.schemas = append(out.schemas, b)
		if cur != nil && sc.ID == cur.ID {
			out.current = b
		}
	}
	if out.current == nil {
		out.current = cur
	}
	return out
}

func (m *binaryGeoMetadata) Schemas() []*iceberg.Schema     { return m.schemas }
func (m *binaryGeoMetadata) CurrentSchema() *iceberg.Schema { return m.current }

func geoFieldToBinary(f iceberg.NestedField) (iceberg.NestedField, bool) {
	t, ok := geoToBinary(f.Type)
	f.Type = t
	return f, ok
}

// geoToBinary is t with geometry and geography replaced by binary, and
// whether t held any.
func geoToBinary(t iceberg.Type) (iceberg.Type, bool) {
	switch t.(type) {
	case iceberg.GeometryType, iceberg.GeographyType:
		return iceberg.PrimitiveTypes.Binary, true
	}
	return rewriteNested(t, geoToBinary, geoFieldToBinary)
}
