package debezium

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// Each format says what its records are, through the flattened form and
// a router, so that a sink labels them without reading their bytes: the
// row key of a Connect key is its payload.
func TestEncodingOfFormats(t *testing.T) {
	sc := iceberg.NewSchemaWithIdentifiers(1, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	c := &cdc.Commit{Table: cdc.TableInfo{Namespace: "n", Name: "t", UUID: "u", Schema: sc, KeyFields: []string{"id"}},
		Snapshot: cdc.SnapshotInfo{SequenceNumber: 1}}
	e := &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: values.Row{int64(7)}}
	conn, err := NewConnectJSON(Envelope{Pipeline: "p"}, ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	flat, err := NewUnwrap(conn, UnwrapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	router, err := NewRouter("(.*)", "all", "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, enc := range map[string]cdc.Encoder{
		"json":           &JSON{},
		"connect":        conn,
		"connect/unwrap": flat,
		"connect/routed": &Routed{Inner: flat, Router: router, TopicOf: func(*cdc.TableInfo) string { return "x" }},
	} {
		key, err := enc.AppendKey(nil, c, e)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := cdc.EncodingOf(enc)
		if k := string(got.RowKey(key)); k != `{"id":7}` {
			t.Errorf("%s: row key of %s = %s, want {\"id\":7}", name, key, k)
		}
		if got.Type() != "application/json" {
			t.Errorf("%s: content type %s", name, got.Type())
		}
	}
	if ct := cdc.EncodingOf(&Avro{}).Type(); ct != contentTypeAvro {
		t.Errorf("avro content type %s", ct)
	}
}
