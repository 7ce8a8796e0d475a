package debezium

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// routedRecord is a line of testdata/routed.jsonl: a record as icecdc
// writes it to the table's own topic, and as it writes it routed. The
// interop part masks runs Debezium's ByLogicalTableRouter over the first
// and must get the second (interop/maven/masks/RouteCheck.java).
type routedRecord struct {
	Topic       string          `json:"topic"`
	Key         json.RawMessage `json:"key"`
	Value       json.RawMessage `json:"value"`
	RoutedTopic string          `json:"routed_topic"`
	RoutedKey   json.RawMessage `json:"routed_key"`
	RoutedValue json.RawMessage `json:"routed_value"`
}

func routeCommit(name string) *cdc.Commit {
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "order_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64})
	return &cdc.Commit{
		Table:    cdc.TableInfo{Catalog: "lake", Namespace: "bookshop", Name: name, UUID: "uuid-" + name, Schema: sc, KeyFields: []string{"order_id"}},
		Snapshot: cdc.SnapshotInfo{ID: 7, SequenceNumber: 3, TimestampMs: 1796090726250, Operation: "overwrite"},
	}
}

// TestRoutedRecords: routed keys carry the table's own topic in
// __dbz__physicalTableIdentifier and Connect schemas take the shared
// topic's names; unrouted tables are untouched. The records are pinned
// in testdata/routed.jsonl, which Debezium's own SMT checks in the
// interop stage.
func TestRoutedRecords(t *testing.T) {
	r, err := NewRouter(`icecdc\.bookshop\.orders_(eu|us)`, "icecdc.bookshop.orders", DefaultRouterKeyField, "", "")
	if err != nil {
		t.Fatal(err)
	}
	topicOf := func(t *cdc.TableInfo) string { return "icecdc." + t.Namespace + "." + t.Name }
	connect := newConnect(t, ConnectOptions{})
	routed := &Routed{Inner: connect, Router: r, TopicOf: topicOf,
		SchemaBase: func(t *cdc.TableInfo) string { return "icecdc." + t.Namespace + "." + t.Name }}
	var lines []byte
	for _, name := range []string{"orders_eu", "orders_us", "returns"} {
		c := routeCommit(name)
		for _, e := range []cdc.Event{
			{Op: cdc.OpCreate, RowID: 1, After: values.Row{int64(1), "ann", 10.5}},
			{Op: cdc.OpUpdate, RowID: 1, Index: 1, Before: values.Row{int64(1), "ann", 10.5}, After: values.Row{int64(1), "ann", 12.0}},
			{Op: cdc.OpDelete, RowID: 1, Index: 2, Before: values.Row{int64(1), "ann", 12.0}},
		} {
			k, _ := connect.AppendKey(nil, c, &e)
			v, _ := connect.AppendValue(nil, c, &e, 1796090727011)
			rk, rv := encodeRecord(t, routed, c, &e)
			topic, ok := r.Route(topicOf(&c.Table))
			if name == "returns" {
				if ok || !bytes.Equal(k, rk) || !bytes.Equal(v, rv) {
					t.Errorf("an unrouted table's record changed: %s %s", rk, rv)
				}
				continue
			}
			var key struct {
				Schema struct {
					Name   string
					Fields []struct{ Field, Type string }
				}
				Payload map[string]any
			}
			if err := json.Unmarshal(rk, &key); err != nil {
				t.Fatalf("routed key %s: %v", rk, err)
			}
			if key.Schema.Name != "icecdc.bookshop.orders.Key" || key.Payload[DefaultRouterKeyField] != "icecdc.bookshop."+name ||
				key.Schema.Fields[len(key.Schema.Fields)-1].Field != DefaultRouterKeyField {
				t.Errorf("routed key: %s", rk)
			}
			if !strings.Contains(string(rv), `"name":"icecdc.bookshop.orders.Envelope"`) || strings.Contains(string(rv), `"icecdc.bookshop.`+name+`.Value"`) {
				t.Errorf("routed value schema names: %.300s", rv)
			}
			line, _ := json.Marshal(routedRecord{Topic: topicOf(&c.Table), Key: k, Value: v, RoutedTopic: topic, RoutedKey: rk, RoutedValue: rv})
			lines = append(append(lines, line...), '\n')
		}
	}
	// debezium-json: the key gains the field, the value is as it was.
	j := &JSON{Envelope: Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}}
	rj := &Routed{Inner: j, Router: r, TopicOf: topicOf}
	c, e := routeCommit("orders_us"), cdc.Event{Op: cdc.OpCreate, RowID: 1, After: values.Row{int64(1), "ann", 10.5}}
	if k, _ := rj.AppendKey(nil, c, &e); string(k) != `{"order_id":1,"__dbz__physicalTableIdentifier":"icecdc.bookshop.orders_us"}` {
		t.Errorf("debezium-json routed key: %s", k)
	}
	const golden = "testdata/routed.jsonl"
	if *updateGolden {
		if err := os.WriteFile(golden, lines, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, lines) {
		t.Errorf("%s is not what the encoders write (run go test ./debezium -run TestRoutedRecords -update and review the diff)", golden)
	}
}

func TestJavaReplacement(t *testing.T) {
	for _, tc := range []struct{ re, repl, in, want string }{
		{`icecdc\.(\w+)\.orders_(eu|us)`, "icecdc.$1.orders", "icecdc.shop.orders_eu", "icecdc.shop.orders"},
		{`(a)(b)`, "$2$1$11", "ab", "baa1"}, // $11 is $1 then 1: there is no group 11
		{`(?P<ns>\w+)\.x`, "${ns}.y", "shop.x", "shop.y"},
		{`x`, `cost\$`, "x", "cost$"},
	} {
		r, err := NewRouter(tc.re, tc.repl, "", "", "")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := r.Route(tc.in); got != tc.want {
			t.Errorf("%s → %s on %s: got %s, want %s", tc.re, tc.repl, tc.in, got, tc.want)
		}
	}
}

// routedUnwrapRecord is a line of testdata/routed-unwrapped.jsonl: an
// envelope record as icecdc writes it to the table's own topic, the
// transforms Debezium would run over it (in order, with
// ExtractNewRecordState's delete mode) and the record icecdc writes with
// the same transforms; a null routed value is a tombstone. The interop
// part masks runs Debezium's own SMT chain over the first and must get
// the second (interop/maven/masks/RouteCheck.java).
type routedUnwrapRecord struct {
	routedRecord
	Transforms []string `json:"transforms"`
	DeleteMode string   `json:"delete_mode"`
	AddFields  string   `json:"add_fields,omitempty"`
}

// TestRoutedUnwrap: ByLogicalTableRouter and ExtractNewRecordState
// chained in either order give Debezium's records. The key is the
// router's in both orders (the SMT leaves keys alone); the value is the
// flattened one, whose Connect schema is named after the shared topic
// when the router ran first (it renamed the envelope's after field) and
// after the table when unwrap ran first (the router renames only
// envelopes). Headers and dropped deletes pass the router untouched.
func TestRoutedUnwrap(t *testing.T) {
	r, err := NewRouter(`icecdc\.bookshop\.orders_(eu|us)`, "icecdc.bookshop.orders", DefaultRouterKeyField, "", "")
	if err != nil {
		t.Fatal(err)
	}
	topicOf := func(t *cdc.TableInfo) string { return "icecdc." + t.Namespace + "." + t.Name }
	base := func(t *cdc.TableInfo) string { return "icecdc." + t.Namespace + "." + t.Name }
	events := []cdc.Event{
		{Op: cdc.OpCreate, RowID: 1, After: values.Row{int64(1), "ann", 10.5}},
		{Op: cdc.OpUpdate, RowID: 1, Index: 1, Before: values.Row{int64(1), "ann", 10.5}, After: values.Row{int64(1), "ann", 12.0}},
		{Op: cdc.OpDelete, RowID: 1, Index: 2, Before: values.Row{int64(1), "ann", 12.0}},
	}
	var lines []byte
	for _, mode := range []DeleteHandling{DeleteRewrite, DeleteTombstone, DeleteDrop} {
		for _, unwrapFirst := range []bool{false, true} {
			for _, connect := range []bool{true, false} {
				var inner cdc.Encoder = &JSON{Envelope: Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}}
				var schemaBase func(*cdc.TableInfo) string
				if connect {
					inner, schemaBase = newConnect(t, ConnectOptions{}), base
				}
				opts := UnwrapOptions{DeleteHandling: mode, AddFields: []string{"op", "table"}, AddFieldsPrefix: "__", AddHeaders: []string{"op"}, AddHeadersPrefix: "__"}
				u, err := NewUnwrap(inner, opts)
				if err != nil {
					t.Fatal(err)
				}
				envelope := &Routed{Inner: inner, Router: r, TopicOf: topicOf, SchemaBase: schemaBase}
				routed := &Routed{Inner: u, Router: r, TopicOf: topicOf, SchemaBase: schemaBase, Flattened: unwrapFirst}
				chain := []string{"route", "unwrap"}
				if unwrapFirst {
					chain = []string{"unwrap", "route"}
				}
				for _, name := range []string{"orders_eu", "returns"} {
					c := routeCommit(name)
					for _, e := range events {
						what := fmt.Sprintf("%s %s connect=%v %s %s", mode, strings.Join(chain, ","), connect, name, e.Op)
						if routed.Keep(c, &e) != u.Keep(c, &e) {
							t.Errorf("%s: Keep %v, unwrap's %v", what, routed.Keep(c, &e), u.Keep(c, &e))
						}
						if !u.Keep(c, &e) {
							continue
						}
						rk, rv := encodeRecord(t, routed, c, &e)
						wantKey, _ := envelope.AppendKey(nil, c, &e)
						flat, _ := u.AppendValue(nil, c, &e, 1796090727011)
						if !bytes.Equal(rk, wantKey) {
							t.Errorf("%s: key %s, want the router's %s", what, rk, wantKey)
						}
						if h, want := fmt.Sprint(routed.AppendHeaders(nil, c, &e, 1)), fmt.Sprint(u.AppendHeaders(nil, c, &e, 1)); h != want {
							t.Errorf("%s: headers %s, want %s", what, h, want)
						}
						want := flat
						if connect && name != "returns" && !unwrapFirst {
							want = renameSchema(t, flat, "icecdc.bookshop."+name+".Value", "icecdc.bookshop.orders.Value")
						}
						if !bytes.Equal(rv, want) {
							t.Errorf("%s: value\n%s\nwant\n%s", what, rv, want)
						}
						if name == "returns" || !connect {
							continue
						}
						k, _ := inner.AppendKey(nil, c, &e)
						v, _ := inner.AppendValue(nil, c, &e, 1796090727011)
						topic, _ := r.Route(topicOf(&c.Table))
						rec := routedUnwrapRecord{routedRecord{Topic: topicOf(&c.Table), Key: k, Value: v, RoutedTopic: topic, RoutedKey: rk, RoutedValue: rv},
							chain, string(mode), "op,table"}
						if len(rv) == 0 {
							rec.RoutedValue = json.RawMessage("null")
						}
						line, _ := json.Marshal(rec)
						lines = append(append(lines, line...), '\n')
					}
				}
			}
		}
	}
	checkGolden(t, "routed-unwrapped.jsonl", lines)
}

// encodeRecord returns e's key and value from enc, failing on an error.
func encodeRecord(t *testing.T, enc cdc.Encoder, c *cdc.Commit, e *cdc.Event) (key, value []byte) {
	t.Helper()
	key, err := enc.AppendKey(nil, c, e)
	if err != nil {
		t.Fatal(err)
	}
	if value, err = enc.AppendValue(nil, c, e, 1796090727011); err != nil {
		t.Fatal(err)
	}
	return key, value
}

// renameSchema returns the Connect message msg with its value schema's
// name from renamed to to, checking that it had that name.
func renameSchema(t *testing.T, msg []byte, from, to string) []byte {
	t.Helper()
	var m struct {
		Schema  map[string]any  `json:"schema"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		t.Fatalf("%s: %v", msg, err)
	}
	if m.Schema["name"] != from {
		t.Fatalf("schema name %v, want %s", m.Schema["name"], from)
	}
	out := bytes.Replace(msg, []byte(`"name":"`+from+`"`), []byte(`"name":"`+to+`"`), 1)
	if bytes.Equal(out, msg) {
		t.Fatalf("no %s in %s", from, msg)
	}
	return out
}
