package debezium

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/registry"
	"github.com/icecdc/icecdc/values"
)

// sameAvroRecord checks a debezium-avro record against the
// debezium-connect-json record cj of the same thing: a null value (no
// record, or a null payload) is no record; otherwise the record, decoded
// by the schema the registry holds under the id it carries, equals cj's
// payload by cj's Connect schema, its schema is named name and its id is
// registered under subject.
func sameAvroRecord(t *testing.T, reg *srfake.Registry, cl *registry.Client, rec, cj []byte, name, subject, what string) {
	t.Helper()
	schemaText, payload, ok := splitConnect(cj)
	if len(cj) == 0 || ok && string(payload) == "null" {
		if len(rec) != 0 {
			t.Fatalf("%s: % x, want a null record as Connect's %s", what, rec, cj)
		}
		return
	}
	if !ok {
		t.Fatalf("%s: connect %s", what, cj)
	}
	got, _, id := decodeWire(t, cl, rec)
	var cs connectSchemaNode
	if err := json.Unmarshal(schemaText, &cs); err != nil {
		t.Fatal(err)
	}
	if err := sameAsConnect(&cs, got, payload, what); err != nil {
		t.Fatal(err)
	}
	// An optional Connect struct (the after field's schema, which the
	// flattened value keeps without added fields) is AvroData's union of
	// null and the record.
	text, err := cl.Schema(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var root any
	if err := json.Unmarshal([]byte(text), &root); err != nil {
		t.Fatal(err)
	}
	if u, ok := root.([]any); ok && len(u) == 2 && u[0] == "null" {
		root = u[1]
	}
	if r, _ := root.(map[string]any); r == nil || fmt.Sprint(r["namespace"], ".", r["name"]) != name {
		t.Fatalf("%s: schema %.200s, want the record %s", what, text, name)
	}
	if !subjectHasID(reg, subject, id) {
		t.Fatalf("%s: schema id %d is not registered under %s", what, id, subject)
	}
}

// TestAvroUnwrapDecodesToTheConnectPayload: for every delete mode,
// add.fields set and keyed or not, each flattened debezium-avro record
// reads back, by the schema registered under <topic>-value (the table's
// .Value, with __deleted and the added fields), as the payload the
// flattened debezium-connect-json record carries; tombstones stay null
// records, and keys and headers are the Connect form's.
func TestAvroUnwrapDecodesToTheConnectPayload(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	f, cl := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{})
	conn := newConnect(t, ConnectOptions{})
	for _, mode := range deleteHandlings {
		for fi, fields := range unwrapFieldSets {
			for _, keyed := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/fields%d/keyed=%v", mode, fi, keyed), func(t *testing.T) {
					ua, uc := unwrapBoth(t, f, conn, UnwrapOptions{DeleteHandling: mode, AddFields: fields, AddHeaders: fields, AddFieldsPrefix: "__", AddHeadersPrefix: "__"})
					c := goldenCommit(keyed)
					evs := unwrapEvents()
					records := 0
					for i := range evs {
						e := &evs[i]
						if ua.Keep(c, e) != uc.Keep(c, e) {
							t.Fatalf("op %c: Keep %v, Connect's %v", e.Op, ua.Keep(c, e), uc.Keep(c, e))
						}
						if !ua.Keep(c, e) {
							continue
						}
						records++
						ak, av := encodeRecord(t, ua, c, e)
						ck, cv := encodeRecord(t, uc, c, e)
						what := fmt.Sprintf("op %c", e.Op)
						sameAvroRecord(t, reg, cl, ak, ck, "icecdc.shop.orders.Key", "icecdc.shop.orders-key", what+" key")
						sameAvroRecord(t, reg, cl, av, cv, "icecdc.shop.orders.Value", "icecdc.shop.orders-value", what+" value")
						if h, want := fmt.Sprint(ua.AppendHeaders(nil, c, e, 1)), fmt.Sprint(uc.AppendHeaders(nil, c, e, 1)); h != want {
							t.Fatalf("%s: headers %s, want %s", what, h, want)
						}
					}
					if want := len(evs) - map[bool]int{true: 1}[mode == DeleteDrop]; records != want {
						t.Fatalf("%d records, want %d", records, want)
					}
				})
			}
		}
	}
	// The rewrite modes' value schema carries __deleted.
	found := false
	for v := 1; v < 100 && !found; v++ {
		s, ok := reg.GetSchema("icecdc.shop.orders-value", v)
		if !ok {
			break
		}
		found = strings.Contains(s.Schema.Schema, `"name":"`+deletedField+`"`)
	}
	if !found {
		t.Fatal("no value schema with __deleted is registered")
	}
}

// TestAvroHeartbeats: debezium-avro's heartbeat key and value read back
// as the Connect heartbeat records' payloads, with Debezium's schema
// names, registered under the heartbeat topic's subjects; without a
// heartbeat topic the format says so.
func TestAvroHeartbeats(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	const topic = "__debezium-heartbeat.shop"
	f, cl := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{HeartbeatTopic: topic})
	conn := newConnect(t, ConnectOptions{})
	u, err := NewUnwrap(f, UnwrapOptions{DeleteHandling: DeleteRewrite})
	if err != nil {
		t.Fatal(err)
	}
	for _, he := range []HeartbeatEncoder{f, u} {
		for _, ts := range []int64{1_717_331_701_234, 1_717_331_711_234} {
			k, err := he.AppendHeartbeatKey(nil, "shop")
			if err != nil {
				t.Fatal(err)
			}
			v, err := he.AppendHeartbeatValue(nil, ts)
			if err != nil {
				t.Fatal(err)
			}
			ck, _ := conn.AppendHeartbeatKey(nil, "shop")
			cv, _ := conn.AppendHeartbeatValue(nil, ts)
			sameAvroRecord(t, reg, cl, k, ck, "io.debezium.connector.common.ServerNameKey", topic+"-key", "heartbeat key")
			sameAvroRecord(t, reg, cl, v, cv, "io.debezium.connector.common.Heartbeat", topic+"-value", "heartbeat value")
		}
	}
	if _, ok := reg.GetSchema(topic+"-value", 2); ok {
		t.Fatal("the heartbeat value schema was registered twice")
	}
	none, _ := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{})
	if out, err := none.AppendHeartbeatKey([]byte("x"), "shop"); err == nil || string(out) != "x" || !strings.Contains(err.Error(), "no heartbeat topic") {
		t.Fatalf("without a heartbeat topic: %q, %v", out, err)
	}
}

// TestAvroHeartbeatRegistryDown: a registry that answers 500 fails the
// heartbeat with an error to retry, naming the record and the subject,
// and leaves dst as it was; the next heartbeat, once the registry is
// back, registers and is written.
func TestAvroHeartbeatRegistryDown(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	var down atomic.Bool
	down.Store(true)
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !down.Load() {
			return false
		}
		http.Error(w, `{"error_code":50001,"message":"Error in the backend data store"}`, http.StatusInternalServerError)
		return true
	})
	const topic = "__debezium-heartbeat.shop"
	f, cl := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{HeartbeatTopic: topic})
	out, err := f.AppendHeartbeatValue([]byte("x"), 1)
	if err == nil || string(out) != "x" || !errors.Is(err, cdc.ErrRetry) || !strings.Contains(err.Error(), "heartbeat record") || !strings.Contains(err.Error(), topic+"-value") {
		t.Fatalf("registry down: %q, %v", out, err)
	}
	down.Store(false)
	v, err := f.AppendHeartbeatValue(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	cv, _ := newConnect(t, ConnectOptions{}).AppendHeartbeatValue(nil, 1)
	sameAvroRecord(t, reg, cl, v, cv, "io.debezium.connector.common.Heartbeat", topic+"-value", "heartbeat value")
}

// TestAvroRoutedUnwrap: router and unwrap over debezium-avro, in either
// order, write what AvroConverter makes of the routed flattened Connect
// record: each record reads back as the payload of the same chain over
// debezium-connect-json, keys as the shared topic's Key with the key
// field, values as <topic>.Value when the router ran first and the
// table's own .Value when unwrap did, under the routed topic's subjects.
func TestAvroRoutedUnwrap(t *testing.T) {
	r, err := NewRouter(`icecdc\.bookshop\.orders_(eu|us)`, "icecdc.bookshop.orders", DefaultRouterKeyField, "", "")
	if err != nil {
		t.Fatal(err)
	}
	topicOf := func(t *cdc.TableInfo) string { return "icecdc." + t.Namespace + "." + t.Name }
	reg := srfake.New()
	defer reg.Close()
	f, cl := newAvroFormat(t, reg.URL(), ConnectOptions{}, AvroOptions{Topic: func(t *cdc.TableInfo) (string, error) { return r.Topic(topicOf(t)), nil }})
	conn := newConnect(t, ConnectOptions{})
	events := []cdc.Event{
		{Op: cdc.OpCreate, RowID: 1, After: values.Row{int64(1), "ann", 10.5}},
		{Op: cdc.OpUpdate, RowID: 1, Index: 1, Before: values.Row{int64(1), "ann", 10.5}, After: values.Row{int64(1), "ann", 12.0}},
		{Op: cdc.OpDelete, RowID: 1, Index: 2, Before: values.Row{int64(1), "ann", 12.0}},
	}
	for _, mode := range deleteHandlings {
		for _, unwrapFirst := range []bool{false, true} {
			ua, uc := unwrapBoth(t, f, conn, UnwrapOptions{DeleteHandling: mode, AddFields: []string{"op", "table", "source.ts_ms"}, AddFieldsPrefix: "__"})
			ra := &Routed{Inner: ua, Router: r, TopicOf: topicOf, SchemaBase: topicOf, Flattened: unwrapFirst}
			rc := &Routed{Inner: uc, Router: r, TopicOf: topicOf, SchemaBase: topicOf, Flattened: unwrapFirst}
			for _, name := range []string{"orders_eu", "orders_us", "returns"} {
				c := routeCommit(name)
				topic := r.Topic(topicOf(&c.Table))
				keyName, valueName := topic+".Key", topic+".Value"
				if name == "returns" || unwrapFirst {
					valueName = topicOf(&c.Table) + ".Value"
				}
				for _, e := range events {
					what := fmt.Sprintf("%s unwrapFirst=%v %s %c", mode, unwrapFirst, name, e.Op)
					if !rc.Keep(c, &e) {
						if ra.Keep(c, &e) {
							t.Fatalf("%s: kept", what)
						}
						continue
					}
					ak, av := encodeRecord(t, ra, c, &e)
					ck, cv := encodeRecord(t, rc, c, &e)
					sameAvroRecord(t, reg, cl, ak, ck, keyName, topic+"-key", what+" key")
					sameAvroRecord(t, reg, cl, av, cv, valueName, topic+"-value", what+" value")
				}
			}
		}
	}
}

// unwrapBoth returns the flattened forms of f and conn by opts.
func unwrapBoth(t *testing.T, f *Avro, conn *ConnectJSON, opts UnwrapOptions) (ua, uc *Unwrap) {
	t.Helper()
	ua, err := NewUnwrap(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if uc, err = NewUnwrap(conn, opts); err != nil {
		t.Fatal(err)
	}
	return ua, uc
}
