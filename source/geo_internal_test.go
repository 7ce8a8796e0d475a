package source

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// TestPlainGeo: a file whose geometry column carries only the Parquet
// logical type (as Iceberg Java writes it) reads as plain binary, also
// beside a uuid column that arrow-go does read as an extension; a file
// without geometry does not.
func TestPlainGeo(t *testing.T) {
	uuid := schema.MustPrimitive(schema.NewPrimitiveNodeLogical("u", parquet.Repetitions.Optional, schema.UUIDLogicalType{}, parquet.Types.FixedLenByteArray, 16, 1))
	geom := schema.MustPrimitive(schema.NewPrimitiveNodeLogical("g", parquet.Repetitions.Optional, schema.GeometryLogicalType{Crs: "srid:3857"}, parquet.Types.ByteArray, -1, 2))
	geog := schema.MustPrimitive(schema.NewPrimitiveNodeLogical("h", parquet.Repetitions.Optional, schema.GeographyLogicalType{}, parquet.Types.ByteArray, -1, 3))
	bin := schema.MustPrimitive(schema.NewPrimitiveNode("b", parquet.Repetitions.Optional, parquet.Types.ByteArray, 4, -1))
	for _, c := range []struct {
		name  string
		nodes schema.FieldList
		want  bool
	}{
		{"geometry and uuid", schema.FieldList{uuid, geom}, true},
		{"geography", schema.FieldList{geog}, true},
		{"binary and uuid", schema.FieldList{uuid, bin}, false},
	} {
		root := schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, c.nodes, -1))
		var buf bytes.Buffer
		w := file.NewParquetWriter(&buf, root)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := plainGeo(r.MetaData())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: plainGeo %v, want %v", c.name, got, c.want)
		}
	}
}
