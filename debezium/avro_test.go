package debezium

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/registry"
	"github.com/icecdc/icecdc/values"
)

func newAvroFormat(t testing.TB, url string, o ConnectOptions, ao AvroOptions) (*Avro, *registry.Client) {
	t.Helper()
	cl, err := registry.New(registry.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	ao.Registry = cl
	if ao.Subject == nil {
		ao.Subject = func(topic, record string, isKey bool) string {
			return registry.Subject(registry.StrategyTopic, topic, record, isKey)
		}
	}
	if ao.Topic == nil {
		ao.Topic = func(t *cdc.TableInfo) (string, error) { return "icecdc." + t.Namespace + "." + t.Name, nil }
	}
	f, err := NewAvro(Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}, o, ao)
	if err != nil {
		t.Fatal(err)
	}
	return f, cl
}

// decodeWire reads a record of Confluent's wire format back through the
// registry: the schema by the id the record carries, parsed by twmb/avro,
// and the body decoded with it.
func decodeWire(t *testing.T, cl *registry.Client, rec []byte) (any, *avro.Schema, int) {
	t.Helper()
	if len(rec) < 5 || rec[0] != 0 {
		t.Fatalf("not the wire format: % x", rec[:min(len(rec), 8)])
	}
	id := int(binary.BigEndian.Uint32(rec[1:5]))
	text, err := cl.Schema(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := avro.Parse(text)
	if err != nil {
		t.Fatalf("registered schema %d: %v", id, err)
	}
	var v any
	rest, err := sch.Decode(rec[5:], &v)
	if err != nil {
		t.Fatalf("decode with schema %d: %v", id, err)
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes after the record", len(rest))
	}
	return v, sch, id
}

// sameAsConnect compares a decoded Avro value with the payload value the
// debezium-connect-json format wrote for the same field, by the Connect
// schema cs, as AvroConverter's reading side maps Avro to Connect.
func sameAsConnect(cs *connectSchemaNode, a any, raw json.RawMessage, at string) error {
	if string(raw) == "null" || raw == nil {
		if a != nil {
			return fmt.Errorf("%s: Avro %v, Connect null", at, a)
		}
		return nil
	}
	if a == nil {
		return fmt.Errorf("%s: Avro null, Connect %s", at, raw)
	}
	num := func() (json.Number, error) {
		var n json.Number
		err := json.Unmarshal(raw, &n)
		return n, err
	}
	switch cs.Type {
	case "boolean":
		if fmt.Sprint(a) != string(raw) {
			return fmt.Errorf("%s: Avro %v, Connect %s", at, a, raw)
		}
	case "int32", "int64":
		var got int64
		switch x := a.(type) {
		case int32:
			got = int64(x)
		case int64:
			got = x
		case time.Time: // date, timestamp-millis
			if cs.Name == connectDate {
				got = x.Unix() / 86400
			} else {
				got = x.UnixMilli()
			}
		case time.Duration: // time-millis
			got = x.Milliseconds()
		default:
			return fmt.Errorf("%s: Avro %T for %s", at, a, cs.Type)
		}
		n, err := num()
		if err != nil || string(n) != strconv.FormatInt(got, 10) {
			return fmt.Errorf("%s: Avro %d, Connect %s", at, got, raw)
		}
	case "float", "double":
		bits := 64
		var got float64
		switch x := a.(type) {
		case float32:
			bits, got = 32, float64(x)
		case float64:
			got = x
		default:
			return fmt.Errorf("%s: Avro %T for %s", at, a, cs.Type)
		}
		var want float64
		var s string
		if json.Unmarshal(raw, &s) == nil {
			want = map[string]float64{"NaN": math.NaN(), "Infinity": math.Inf(1), "-Infinity": math.Inf(-1)}[s]
		} else {
			n, err := num()
			if err != nil {
				return err
			}
			want, _ = strconv.ParseFloat(string(n), bits)
		}
		if !(got == want && math.Signbit(got) == math.Signbit(want) || math.IsNaN(got) && math.IsNaN(want)) {
			return fmt.Errorf("%s: Avro %v, Connect %s", at, got, raw)
		}
	case "string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || a != s {
			return fmt.Errorf("%s: Avro %q, Connect %s", at, a, raw)
		}
	case "bytes":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return err
		}
		if cs.Name == connectDecimal {
			r, ok := a.(*big.Rat)
			if !ok {
				return fmt.Errorf("%s: Avro %T for a decimal", at, a)
			}
			scale, _ := strconv.Atoi(cs.Parameters["scale"])
			want := new(big.Rat).SetFrac(twosComplement(b), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
			if r.Cmp(want) != 0 {
				return fmt.Errorf("%s: Avro %s, Connect %s", at, r.RatString(), want.RatString())
			}
			return nil
		}
		if got, ok := a.([]byte); !ok || !bytes.Equal(got, b) {
			return fmt.Errorf("%s: Avro %v, Connect %x", at, a, b)
		}
	case "struct":
		m, ok := a.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: Avro %T for a struct", at, a)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return err
		}
		if len(m) != len(cs.Fields) || len(obj) != len(cs.Fields) {
			return fmt.Errorf("%s: %d Avro fields, %d Connect values, %d in the schema", at, len(m), len(obj), len(cs.Fields))
		}
		for _, f := range cs.Fields {
			if err := sameAsConnect(f, m[f.Field], obj[f.Field], joinPath(at, f.Field)); err != nil {
				return err
			}
		}
	case "array":
		l, ok := a.([]any)
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil || !ok || len(l) != len(arr) {
			return fmt.Errorf("%s: Avro %v, Connect %s", at, a, raw)
		}
		for i := range l {
			if err := sameAsConnect(cs.Items, l[i], arr[i], fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case "map":
		if cs.Keys.Type == "string" {
			m, ok := a.(map[string]any)
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(raw, &obj); err != nil || !ok || len(m) != len(obj) {
				return fmt.Errorf("%s: Avro %v, Connect %s", at, a, raw)
			}
			for k, v := range obj {
				if err := sameAsConnect(cs.Values, m[k], v, at+"."+k); err != nil {
					return err
				}
			}
			return nil
		}
		l, ok := a.([]any)
		var pairs [][2]json.RawMessage
		if err := json.Unmarshal(raw, &pairs); err != nil || !ok || len(l) != len(pairs) {
			return fmt.Errorf("%s: Avro %v, Connect %s", at, a, raw)
		}
		for i, p := range pairs {
			e, ok := l[i].(map[string]any)
			if !ok || len(e) != 2 {
				return fmt.Errorf("%s[%d]: Avro %v, want a key/value record", at, i, l[i])
			}
			if err := sameAsConnect(cs.Keys, e["key"], p[0], fmt.Sprintf("%s[%d].key", at, i)); err != nil {
				return err
			}
			if err := sameAsConnect(cs.Values, e["value"], p[1], fmt.Sprintf("%s[%d].value", at, i)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: Connect type %q", at, cs.Type)
	}
	return nil
}

// twosComplement reads big-endian two's-complement bytes.
func twosComplement(b []byte) *big.Int {
	x := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
	}
	return x
}

// v3Schema adds variant, geometry (twice, to define its record once),
// geography and unknown columns to every type of allTypesSchema.
func v3Schema() *iceberg.Schema {
	base := allTypesSchema()
	fields := append(base.Fields(),
		iceberg.NestedField{ID: 101, Name: "doc", Type: iceberg.VariantType{}},
		iceberg.NestedField{ID: 102, Name: "shape", Type: iceberg.GeometryType{}},
		iceberg.NestedField{ID: 103, Name: "shape2", Type: iceberg.GeometryType{}},
		iceberg.NestedField{ID: 104, Name: "area", Type: iceberg.GeographyType{}},
		iceberg.NestedField{ID: 105, Name: "nothing", Type: iceberg.UnknownType{}},
	)
	return iceberg.NewSchemaWithIdentifiers(1, []int{1}, fields...)
}

func v3Row(r values.Row) values.Row {
	if r[colName] == nil { // the sparse row
		return append(r, nil, nil, nil, nil, nil)
	}
	return append(r, values.VariantJSON(`{"a":[1,"x",null],"b":{"c":1.5}}`), []byte{1, 1, 0, 0, 0}, []byte{1, 2}, []byte{3}, nil)
}

// TestAvroDecodesToTheConnectPayload encodes rows of every type the
// Connect form has (decimals, times, timestamp_ns, variant, geometry,
// geography, nested structs, lists, maps with string and other keys,
// nulls, NaN, pre-1970 instants) in every time and decimal mode, keyed
// and not, for every op, and reads each record back by the schema id it
// carries from the registry: every field equals what debezium-connect-json
// writes for the same event.
func TestAvroDecodesToTheConnectPayload(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	updated := fullRow()
	updated[colName] = "renamed"
	events := []cdc.Event{
		{Op: cdc.OpCreate, RowID: 1000, LUSN: 7, After: v3Row(fullRow()), Index: 3},
		{Op: cdc.OpUpdate, RowID: 12, LUSN: 7, Before: v3Row(fullRow()), After: v3Row(updated), Index: 1},
		{Op: cdc.OpUpdate, RowID: 13, LUSN: 7, Before: v3Row(sparseRow()), After: v3Row(pastRow()), Index: 2, Source: "equality-delete", PairedRowID: 9},
		{Op: cdc.OpDelete, RowID: 11, LUSN: 5, Before: v3Row(sparseRow()), Index: 0},
		{Op: cdc.OpSnapshot, RowID: 0, LUSN: 1, After: v3Row(pastRow()), Index: 0},
	}
	for _, o := range allConnectModes {
		t.Run(fmt.Sprintf("%s/%s", o.TimePrecision, o.DecimalHandling), func(t *testing.T) {
			f, cl := newAvroFormat(t, reg.URL(), o, AvroOptions{})
			conn := newConnect(t, o)
			for _, keyed := range []bool{true, false} {
				for i := range events {
					c := goldenCommit(keyed)
					c.Table.Schema = v3Schema()
					e := &events[i]
					for _, part := range []string{"key", "value"} {
						var rec, cj []byte
						var err error
						if part == "key" {
							rec, err = f.AppendKey(nil, c, e)
							if err == nil {
								cj, err = conn.AppendKey(nil, c, e)
							}
						} else {
							rec, err = f.AppendValue(nil, c, e, 1_717_331_701_234)
							if err == nil {
								cj, err = conn.AppendValue(nil, c, e, 1_717_331_701_234)
							}
						}
						if err != nil {
							t.Fatal(err)
						}
						got, sch, id := decodeWire(t, cl, rec)
						schemaText, payload, ok := splitConnect(cj)
						if !ok {
							t.Fatalf("connect %s: %s", part, cj)
						}
						var cs connectSchemaNode
						if err := json.Unmarshal(schemaText, &cs); err != nil {
							t.Fatal(err)
						}
						if err := sameAsConnect(&cs, got, payload, part); err != nil {
							t.Fatalf("op %c keyed %v: %v", e.Op, keyed, err)
						}
						wantName := "icecdc.shop.orders.Envelope"
						if part == "key" {
							wantName = "icecdc.shop.orders.Key"
						}
						if r := sch.Root(); r.Namespace+"."+r.Name != wantName {
							t.Fatalf("%s record %s.%s, want %s", part, r.Namespace, r.Name, wantName)
						}
						if subj := "icecdc.shop.orders-" + part; !subjectHasID(reg, subj, id) {
							t.Fatalf("schema id %d is not registered under %s", id, subj)
						}
					}
				}
			}
		})
	}
}

func subjectHasID(reg *srfake.Registry, subject string, id int) bool {
	for v := 1; v < 100; v++ {
		s, ok := reg.GetSchema(subject, v)
		if !ok {
			return false
		}
		if s.ID == id {
			return true
		}
	}
	return false
}

// TestAvroSchemaAsAvroConverterDerivesIt pins the parts of the derived
// schema a consumer's AvroConverter reads back: optional fields are
// ["null", T] defaulting to null, logical types carry connect.name,
// connect.version and connect.parameters, Decimal is bytes with
// logicalType decimal, the snapshot enum keeps its default first, and a
// map with int keys is an array of MapEntry records.
func TestAvroSchemaAsAvroConverterDerivesIt(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	f, cl := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{})
	c := goldenCommit(true)
	c.Table.Schema = v3Schema()
	rec, err := f.AppendValue(nil, c, &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: v3Row(fullRow())}, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, sch, _ := decodeWire(t, cl, rec)
	text := sch.String()
	for _, want := range []string{
		`{"name":"before","type":["null",{"type":"record","name":"Value","namespace":"icecdc.shop.orders","fields":[`,
		`{"name":"after","type":["null","icecdc.shop.orders.Value"],"default":null}`,
		`{"name":"price","type":["null",{"type":"bytes","scale":2,"precision":9,"connect.version":1,"connect.parameters":{"connect.decimal.precision":"9","scale":"2"},"connect.name":"org.apache.kafka.connect.data.Decimal","logicalType":"decimal"}],"default":null}`,
		`{"name":"local_ts","type":["null",{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}],"default":null}`,
		`{"name":"local_ts_ns","type":["null",{"type":"long","connect.version":1,"connect.name":"io.debezium.time.NanoTimestamp"}],"default":null}`,
		`{"name":"snapshot","type":[{"type":"string","connect.version":1,"connect.parameters":{"allowed":"true,last,false"},"connect.default":"false","connect.name":"io.debezium.data.Enum"},"null"],"default":"false"}`,
		`{"name":"scores","type":["null",{"type":"array","items":{"type":"record","name":"MapEntry","namespace":"io.confluent.connect.avro","fields":[{"name":"key","type":"int"},{"name":"value","type":["null","double"],"default":null}]}}],"default":null}`,
		`{"name":"shape2","type":["null","io.debezium.data.geometry.Geometry"],"default":null}`,
		`{"name":"doc","type":["null",{"type":"string","connect.version":1,"connect.name":"io.debezium.data.Json"}],"default":null}`,
		`"connect.version":2,"connect.name":"icecdc.shop.orders.Envelope"}`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("schema lacks %s\nschema: %s", want, text)
		}
	}
	// connect mode: Connect's own logical types get Avro's.
	f2, cl2 := newAvroFormat(t, reg.URL(), ConnectOptions{TimePrecision: TimeConnect}, AvroOptions{})
	rec, err = f2.AppendValue(nil, c, &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: v3Row(fullRow())}, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, sch, _ = decodeWire(t, cl2, rec)
	for _, want := range []string{
		`{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Date","logicalType":"date"}`,
		`{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Time","logicalType":"time-millis"}`,
		`{"type":"long","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}`,
	} {
		if !strings.Contains(sch.String(), want) {
			t.Errorf("connect-mode schema lacks %s", want)
		}
	}
}

// TestAvroNameAdjustment: a column Avro cannot name fails the table in
// mode none with the setting to change; avro and avro_unicode rename it,
// and the record still decodes to the Connect payload under the new name.
func TestAvroNameAdjustment(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	c := goldenCommit(false)
	c.Table.Namespace = "my-shop"
	c.Table.Schema = iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "order-id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "1st", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "a_b", Type: iceberg.PrimitiveTypes.String})
	e := &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: values.Row{int64(5), "x", "y"}}
	f, _ := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{})
	_, err := f.AppendValue(nil, c, e, 1)
	if err == nil || !strings.Contains(err.Error(), "schema.name.adjustment.mode") {
		t.Fatalf("mode none: %v", err)
	}
	f, _ = newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{SchemaNames: AdjustAvro})
	_, err = f.AppendValue(nil, c, e, 1)
	if err == nil || !strings.Contains(err.Error(), `column "order-id": field name "order-id" is not a valid Avro name; set debezium.field.name.adjustment.mode`) {
		t.Fatalf("field mode none: %v", err)
	}
	for _, m := range []struct {
		mode   NameAdjustment
		fields []string
		ns     string
	}{
		{AdjustAvro, []string{"order_id", "_1st", "a_b"}, "icecdc.my_shop.orders"},
		{AdjustAvroUnicode, []string{"order_u002did", "_u0031st", "a_u005fb"}, "icecdc.my_u002dshop.orders"},
	} {
		f, cl := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{SchemaNames: m.mode, FieldNames: m.mode})
		rec, err := f.AppendValue(nil, c, e, 1)
		if err != nil {
			t.Fatalf("%s: %v", m.mode, err)
		}
		v, sch, _ := decodeWire(t, cl, rec)
		if sch.Root().Namespace != m.ns {
			t.Fatalf("%s: namespace %s, want %s", m.mode, sch.Root().Namespace, m.ns)
		}
		after := v.(map[string]any)["after"].(map[string]any)
		want := map[string]any{m.fields[0]: int64(5), m.fields[1]: "x", m.fields[2]: "y"}
		if fmt.Sprint(after) != fmt.Sprint(want) {
			t.Fatalf("%s: after %v, want %v", m.mode, after, want)
		}
	}
}

// TestAvroRegistersEachSchemaVersionOnce: a table's events register its
// key and value schemas once; the next schema version registers the next
// registry version before its first event, and events keep the id of
// their own schema.
func TestAvroRegistersEachSchemaVersionOnce(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	var posts atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		return false
	})
	f, cl := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{})
	c := goldenCommit(true)
	c.Table.Schema = iceberg.NewSchemaWithIdentifiers(1, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
	var first int
	for i := range 50 {
		rec, err := f.AppendValue(nil, c, &cdc.Event{Op: cdc.OpCreate, RowID: int64(i), After: values.Row{int64(i), "n"}}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.AppendKey(nil, c, &cdc.Event{Op: cdc.OpCreate, RowID: int64(i), After: values.Row{int64(i), "n"}}); err != nil {
			t.Fatal(err)
		}
		if id := int(binary.BigEndian.Uint32(rec[1:5])); i == 0 {
			first = id
		} else if id != first {
			t.Fatalf("event %d: id %d, the first had %d", i, id, first)
		}
	}
	if n := posts.Load(); n != 2 {
		t.Fatalf("%d registrations for one schema version (key and value), want 2", n)
	}
	c2 := goldenCommit(true)
	c2.Table.Schema = iceberg.NewSchemaWithIdentifiers(2, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "added", Type: iceberg.PrimitiveTypes.Int32})
	rec, err := f.AppendValue(nil, c2, &cdc.Event{Op: cdc.OpCreate, RowID: 99, After: values.Row{int64(99), "n", int32(3)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	v, _, id := decodeWire(t, cl, rec)
	if id == first {
		t.Fatal("the new schema version kept the old id")
	}
	if got := v.(map[string]any)["after"].(map[string]any)["added"]; got != int32(3) {
		t.Fatalf("added = %v", got)
	}
	if s, ok := reg.GetSchema("icecdc.shop.orders-value", 2); !ok || s.ID != id {
		t.Fatalf("version 2 of the value subject: %+v %v, want id %d", s, ok, id)
	}
}

// TestAvroRegistryFaults: each failure of the registry gives one line
// naming the registry (without credentials) and the subject, classed as
// the pipeline needs: a refusal, an authorization failure or a wrong URL
// stop the table (permanent), an outage or an answer that is not the
// registry's is retried; the next call after an outage registers.
func TestAvroRegistryFaults(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	var mode atomic.Value
	mode.Store("")
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		switch mode.Load().(string) {
		case "500":
			http.Error(w, `{"error_code":50001,"message":"Error in the backend data store"}`, http.StatusInternalServerError)
		case "409":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema for subject \"icecdc.shop.orders-value\""}`))
		case "422":
			w.WriteHeader(http.StatusUnprocessableEntity)
			w.Write([]byte(`{"error_code":42201,"message":"Invalid schema"}`))
		case "401":
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error_code":401,"message":"Unauthorized"}`))
		case "404":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte("<html><body>\n<h1>Not Found</h1>\n</body></html>"))
		case "foreign":
			w.Write([]byte("<html>a login page</html>"))
		case "truncated":
			w.Write([]byte(`{"id":`))
		case "huge":
			w.Write([]byte(`{"id":1,"pad":"`))
			chunk := bytes.Repeat([]byte("x"), 1<<16)
			for range (registry.MaxResponseBytes / len(chunk)) + 2 {
				if _, err := w.Write(chunk); err != nil {
					break
				}
			}
		default:
			return false
		}
		return true
	})
	u := strings.Replace(reg.URL(), "http://", "http://user:s3cret@", 1)
	f, _ := newAvroFormat(t, u, ConnectOptions{}, AvroOptions{})
	c := goldenCommit(true)
	c.Table.Schema = iceberg.NewSchemaWithIdentifiers(3, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	e := &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: values.Row{int64(1)}}
	for _, tc := range []struct {
		mode      string
		permanent bool
		want      string
	}{
		{"500", false, "HTTP 500: Error in the backend data store"},
		{"409", true, `refused (HTTP 409): Schema being registered is incompatible`},
		{"422", true, "refused (HTTP 422): Invalid schema"},
		{"401", true, "HTTP 401: Unauthorized (check schema_registry"},
		{"404", true, "HTTP 404: <html><body> <h1>Not Found</h1> </body></html> (is schema_registry.url the Confluent-compatible API?)"},
		{"foreign", false, "the answer is not the registry's"},
		{"truncated", false, "the answer is not the registry's"},
		{"huge", false, "answer longer than"}, // a proxy's error page may be passing: retried
	} {
		mode.Store(tc.mode)
		dst := []byte("keep")
		out, err := f.AppendValue(dst, c, e, 1)
		if err == nil {
			t.Fatalf("%s: no error", tc.mode)
		}
		msg := err.Error()
		if string(out) != "keep" {
			t.Fatalf("%s: dst changed", tc.mode)
		}
		if strings.Contains(msg, "s3cret") || strings.Contains(msg, "\n") {
			t.Fatalf("%s: %q shows the password or spans lines", tc.mode, msg)
		}
		if !strings.Contains(msg, "schema registry "+reg.URL()) || !strings.Contains(msg, "subject icecdc.shop.orders-value") ||
			!strings.Contains(msg, "table shop.orders schema 3") || !strings.Contains(msg, tc.want) {
			t.Fatalf("%s: %q lacks the registry, subject, table schema or %q", tc.mode, msg, tc.want)
		}
		if cdc.IsPermanent(err) != tc.permanent || errors.Is(err, cdc.ErrRetry) == tc.permanent {
			t.Fatalf("%s: permanent %v, retry %v; want permanent %v", tc.mode, cdc.IsPermanent(err), errors.Is(err, cdc.ErrRetry), tc.permanent)
		}
	}
	mode.Store("")
	if _, err := f.AppendValue(nil, c, e, 1); err != nil {
		t.Fatalf("after the faults: %v", err)
	}
	// An id the registry does not know, read back.
	cl, _ := registry.New(registry.Config{URL: u})
	_, err := cl.Schema(context.Background(), 987654)
	if err == nil || !cdc.IsPermanent(err) || !strings.Contains(err.Error(), "schema registry "+reg.URL()+": schema id 987654: HTTP 404") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("unknown id: %v", err)
	}
}

// TestAvroConcurrent: one format serves several tables' goroutines at
// once (run with -race); each record decodes to its own table's row.
func TestAvroConcurrent(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	f, cl := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{})
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			c := goldenCommit(true)
			c.Table.Name = fmt.Sprintf("t%d", g%3)
			c.Table.Schema = iceberg.NewSchemaWithIdentifiers(g%3, []int{1},
				iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
				iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String})
			for i := range 200 {
				e := &cdc.Event{Op: cdc.OpCreate, RowID: int64(i), After: values.Row{int64(i), fmt.Sprintf("g%d \"%d\"", g, i)}}
				rec, err := f.AppendValue(nil, c, e, 1)
				if err != nil {
					errs <- err
					return
				}
				if i%50 == 0 {
					id := int(binary.BigEndian.Uint32(rec[1:5]))
					text, err := cl.Schema(context.Background(), id)
					if err != nil {
						errs <- err
						return
					}
					sch, err := avro.Parse(text)
					if err != nil {
						errs <- err
						return
					}
					var v map[string]any
					if _, err := sch.Decode(rec[5:], &v); err != nil {
						errs <- err
						return
					}
					if got := v["after"].(map[string]any)["name"]; got != fmt.Sprintf("g%d \"%d\"", g, i) || !strings.HasSuffix(sch.Root().Namespace, c.Table.Name) {
						errs <- fmt.Errorf("goroutine %d event %d: name %v in %s", g, i, got, sch.Root().Namespace)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestAvroCachesBounded: a table whose metadata is reloaded on every poll
// (a new *iceberg.Schema each time, the same schema) keeps the format's
// caches bounded and registers nothing again.
func TestAvroCachesBounded(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	var posts atomic.Int64
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		return false
	})
	f, _ := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{})
	for i := range 3 * avroCacheMax {
		c := goldenCommit(true)
		c.Table.Schema = iceberg.NewSchemaWithIdentifiers(1, []int{1},
			iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
		if _, err := f.AppendValue(nil, c, &cdc.Event{Op: cdc.OpCreate, RowID: int64(i), After: values.Row{int64(i)}}, 1); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	m := len(f.schemas)
	f.mu.Unlock()
	f.conn.cache.mu.Lock()
	n := len(f.conn.cache.tables) // each holds its registered schemas
	f.conn.cache.mu.Unlock()
	if n > connectCacheMax || m > avroCacheMax {
		t.Fatalf("caches hold %d tables and %d schemas, bounds %d and %d", n, m, connectCacheMax, avroCacheMax)
	}
	if p := posts.Load(); p != 1 {
		t.Fatalf("%d registrations of one schema", p)
	}
}
