package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/internal/unwraptest"
	"github.com/icecdc/icecdc/registry"
)

// sameJSON reports whether a decoded Avro value and a Connect payload
// hold the same values, compared as the JSON each makes.
func sameJSON(t *testing.T, avroValue any, payload []byte) (got, want string) {
	t.Helper()
	var p any
	if err := json.Unmarshal(payload, &p); err != nil {
		t.Fatalf("payload %s: %v", payload, err)
	}
	a, err := json.Marshal(avroValue)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	return string(a), string(b)
}

// TestRunAvroUnwrapKafka: `icecdc run` with debezium-avro and
// transforms.unwrap writes, for every delete mode, what AvroConverter
// makes of the flattened Connect records: each record, read back by the
// schema the registry holds under its id, holds the payload that
// ExtractNewRecordState's rules (internal/unwraptest) make of the
// debezium-connect-json envelope records of the same events; tombstones
// and headers are the same. The value schema is the table's .Value,
// registered under <topic>-value. The same daemon writes its heartbeats
// in the wire format, registered under the heartbeat topic's subjects.
func TestRunAvroUnwrapKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	brokers := newKafka(t)
	reg := srfake.New()
	defer reg.Close()
	cl, err := registry.New(registry.Config{URL: reg.URL()})
	if err != nil {
		t.Fatal(err)
	}
	catalog := ordersChanged(ctx, t, 3)
	run := func(name, format, rest string, want int) []unwraptest.Record {
		t.Helper()
		sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic: '%s.{table}', topic_partitions: 1}}\nformat: %s\n%s", brokers[0], name, format, rest)
		return kafkaRecords(ctx, t, brokers, name, catalog, sink, name+".orders", want)
	}
	envelope := run("envelope", formatDebeziumConnect, "", 6) // 3 c, u, d, tombstone
	const fields = "op,table,source.ts_ms,source.snapshot:snap,transaction.id"
	for _, mode := range []string{"tombstone", "drop", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"} {
		t.Run(mode, func(t *testing.T) {
			o := unwraptest.Options{Mode: mode, AddFields: strings.Split(fields, ","), AddHeaders: strings.Split(fields, ","), Connect: true}
			want := applyOracle(t, o, envelope)
			name := "avro-" + mode
			got := run(name, formatDebeziumAvro, fmt.Sprintf("schema_registry: {url: '%s'}\ndebezium: {heartbeat.interval.ms: 20}\n"+
				"transforms: {unwrap: {type: io.debezium.transforms.ExtractNewRecordState, delete.tombstone.handling.mode: %s, add.fields: '%s', add.headers: '%s'}}",
				reg.URL(), mode, fields, fields), len(want))
			checkAvroRecords(t, cl, reg, got, want, name+".orders", `"name":"Value","namespace":"icecdc.bookshop.orders"`)
		})
	}
	// A daemon that waits for its heartbeats, whatever the speed of the
	// runs above.
	cfg := writeConfig(t, "beats", catalog, fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic: 'beats.{table}', topic_partitions: 1}}\nformat: debezium-avro\n"+
		"schema_registry: {url: '%s'}\ndebezium: {topic.prefix: shop, heartbeat.interval.ms: 20}\ntransforms: {unwrap: {delete.tombstone.handling.mode: rewrite}}", brokers[0], reg.URL()),
		filepath.Join(t.TempDir(), "state.db"))
	d := startDaemon(t, "-c", cfg)
	var beats []*kgo.Record
	d.waitFor(t, "three heartbeats", func() bool {
		beats, _ = readCommitted(ctx, brokers, "__debezium-heartbeat.shop")
		return len(beats) >= 3
	})
	d.stop(t)
	checkAvroHeartbeats(t, cl, reg, beats, "shop")
}

// checkAvroHeartbeats checks heartbeat records in the wire format: key
// {serverName}, value {ts_ms} not going back, with Debezium's schema
// names, registered under the heartbeat topic's subjects.
func checkAvroHeartbeats(t *testing.T, cl *registry.Client, reg *srfake.Registry, beats []*kgo.Record, server string) {
	t.Helper()
	last := int64(0)
	for i, r := range beats {
		k, kid := avroRecord(t, cl, r.Key)
		v, vid := avroRecord(t, cl, r.Value)
		ts, _ := v["ts_ms"].(int64)
		if k["serverName"] != server || len(k) != 1 || len(v) != 1 || ts < last {
			t.Fatalf("heartbeat %d: key %v value %v (after ts_ms %d)", i, k, v, last)
		}
		last = ts
		for _, s := range []struct {
			id            int
			subject, name string
		}{{kid, r.Topic + "-key", `"name":"ServerNameKey","namespace":"io.debezium.connector.common"`}, {vid, r.Topic + "-value", `"name":"Heartbeat","namespace":"io.debezium.connector.common"`}} {
			text, _ := cl.Schema(context.Background(), s.id)
			if !subjectHasVersionWithID(reg, s.subject, s.id) || !strings.Contains(text, s.name) {
				t.Fatalf("heartbeat %d: schema %d (%s) is not %s's %s", i, s.id, text, s.subject, s.name)
			}
		}
	}
}

// subjectHasVersionWithID reports whether the registry at reg holds the
// schema id under subject, by its subjects-of-an-id API.
func subjectHasVersionWithID(reg *srfake.Registry, subject string, id int) bool {
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		return false
	}
	subjects, err := cl.SubjectsByID(context.Background(), id)
	return err == nil && slices.Contains(subjects, subject)
}

// TestChangesUnwrapAvro: icecdc changes --unwrap --format debezium-avro
// prints, for every delete mode, with add.fields and without (the value
// schema then is the after field's, an optional struct), the records of
// changes --unwrap --format debezium-connect-json read back from the
// registry: each key and value line holds the Connect line's payload, a
// tombstone is null.
func TestChangesUnwrapAvro(t *testing.T) {
	_, catArgs, _ := bookshop(t)
	reg := srfake.New()
	defer reg.Close()
	canonical := func(s string) string {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("%.200s: %v", s, err)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	for _, mode := range []string{"tombstone", "drop", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"} {
		for _, fields := range []string{"", "op,source.sequence_number,name:pipeline,source.ts_ms"} {
			args := append([]string{"changes", "--with-key", "--unwrap", "--unwrap-option", "delete.tombstone.handling.mode=" + mode}, catArgs...)
			if fields != "" {
				args = append(args, "--unwrap-option", "add.fields="+fields)
			}
			conn, errOut, code := runCmd(append(args, "--format", formatDebeziumConnect)...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", mode, code, errOut)
			}
			avroOut, errOut, code := runCmd(append(args, "--format", formatDebeziumAvro, "--schema-registry-url", reg.URL())...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", mode, code, errOut)
			}
			want := strings.Split(strings.TrimSuffix(conn, "\n"), "\n")
			got := strings.Split(strings.TrimSuffix(avroOut, "\n"), "\n")
			if len(got) != len(want) {
				t.Fatalf("%s %q: %d lines, want %d:\n%s", mode, fields, len(got), len(want), avroOut)
			}
			for i := range got {
				gk, gv, _ := strings.Cut(got[i], "\t")
				wk, wv, _ := strings.Cut(want[i], "\t")
				if canonical(gk) != canonical(string(splitConnect(t, wk).Payload)) {
					t.Fatalf("%s %q line %d: key %s, want the payload of %s", mode, fields, i, gk, wk)
				}
				if wv != "null" {
					wv = string(splitConnect(t, wv).Payload)
				}
				if canonical(gv) != canonical(wv) {
					t.Fatalf("%s %q line %d: value %s, want the payload of %s", mode, fields, i, gv, want[i])
				}
			}
		}
	}
	for _, subject := range []string{"icecdc.bookshop.orders-key", "icecdc.bookshop.orders-value"} {
		if _, ok := reg.GetSchema(subject, 1); !ok {
			t.Fatalf("nothing registered under %s", subject)
		}
	}
}

// TestConfigAvroUnwrap: debezium-avro takes transforms.unwrap (its
// add.fields checked against the Connect envelope, which the Avro records
// carry) and heartbeats, which it refused before it had their Avro form.
func TestConfigAvroUnwrap(t *testing.T) {
	base := strings.Replace(goodConfig, "format: debezium-json\n", "", 1)
	base = base[:strings.Index(base, "sink:")] + "sink:\n  type: kafka\n  kafka: {brokers: ['localhost:9092']}\nstate: {path: /var/lib/icecdc/state.db}\n" +
		"format: debezium-avro\nschema_registry: {url: 'http://reg:8081'}\n"
	getenv := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	ok := base + "debezium: {heartbeat.interval.ms: 1000}\ntransforms: {unwrap: {delete.tombstone.handling.mode: rewrite, add.fields: 'op,source.ts_ms,ts_us', add.headers: op}}\n"
	if _, err := parseConfig([]byte(ok), getenv); err != nil {
		t.Fatalf("debezium-avro with unwrap and heartbeats: %v", err)
	}
	bad := base + "transforms: {unwrap: {add.fields: 'source.nope'}}\n"
	if _, err := parseConfig([]byte(bad), getenv); err == nil || !strings.Contains(err.Error(), `transforms.unwrap.add.fields: "source.nope"`) {
		t.Fatalf("add.fields source.nope: %v", err)
	}
}

// TestRunAvroRoutesFlattenedRecords: ByLogicalTableRouter and
// transforms.unwrap over debezium-avro, in both orders, write what
// AvroConverter makes of the same chain's debezium-connect-json records:
// record by record the key and value payloads and the headers, with the
// value schema named as the Connect one (the shared topic's .Value when
// the router ran first, the table's own when unwrap did), registered
// under the routed topic's subject.
func TestRunAvroRoutesFlattenedRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	catalog := ordersChanged(ctx, t, 2)
	reg := srfake.New()
	defer reg.Close()
	cl, err := registry.New(registry.Config{URL: reg.URL()})
	if err != nil {
		t.Fatal(err)
	}
	const route = `route: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: 'icecdc\.(orders)', topic.replacement: 'shop.routed', key.field.regex: '.+\.(orders)', key.field.replacement: 'shop.$1'}`
	const unwrap = `unwrap: {delete.tombstone.handling.mode: rewrite-with-tombstone, add.fields: 'op,table,source.ts_ms', add.headers: 'op,table'}`
	run := func(t *testing.T, name, format, transforms string) []unwraptest.Record {
		t.Helper()
		brokers := newKafka(t)
		sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic: 'icecdc.{table}', topic_partitions: 1}}\nformat: %s\nschema_registry: {url: '%s'}\ntransforms:\n%s",
			brokers[0], format, reg.URL(), transforms)
		if format != formatDebeziumAvro {
			sink = strings.Replace(sink, "\nschema_registry: {url: '"+reg.URL()+"'}", "", 1)
		}
		return kafkaRecords(ctx, t, brokers, name, catalog, sink, "shop.routed", 5) // 2 c, u, d, tombstone
	}
	for _, order := range []string{"route,unwrap", "unwrap,route"} {
		t.Run(strings.ReplaceAll(order, ",", "-"), func(t *testing.T) {
			block := "  " + route + "\n  " + unwrap
			valueName := `"name":"Value","namespace":"shop.routed"`
			if order == "unwrap,route" {
				block = "  " + unwrap + "\n  " + route
				valueName = `"name":"Value","namespace":"icecdc.bookshop.orders"`
			}
			want := run(t, "c"+order[:1], formatDebeziumConnect, block)
			got := run(t, "a"+order[:1], formatDebeziumAvro, block)
			checkAvroRecords(t, cl, reg, got, want, "shop.routed", valueName)
		})
	}
}

// checkAvroRecords holds debezium-avro records of topic to the
// debezium-connect-json records of the same events and transforms, one
// by one: the same headers; key and value, read back by the schema their
// id names, hold the Connect payloads, under the topic's subjects, the
// value schema's text holding valueName; a tombstone or a null Connect
// value is a tombstone.
func checkAvroRecords(t *testing.T, cl *registry.Client, reg *srfake.Registry, got, want []unwraptest.Record, topic, valueName string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		if h, w := fmt.Sprint(got[i].Headers), fmt.Sprint(want[i].Headers); h != w {
			t.Fatalf("record %d: headers %s, want %s", i, h, w)
		}
		key, kid := avroRecord(t, cl, got[i].Key)
		if g, w := sameJSON(t, key, splitConnect(t, string(want[i].Key)).Payload); g != w || !subjectHasVersionWithID(reg, topic+"-key", kid) {
			t.Fatalf("record %d: key %s (schema %d), want %s under %s-key", i, g, kid, w, topic)
		}
		if want[i].Value == nil || string(splitConnect(t, string(want[i].Value)).Payload) == "null" {
			if got[i].Value != nil {
				t.Fatalf("record %d: % x, want a tombstone as Connect's %s", i, got[i].Value, want[i].Value)
			}
			continue
		}
		value, id := avroRecord(t, cl, got[i].Value)
		text, _ := cl.Schema(context.Background(), id)
		if g, w := sameJSON(t, value, splitConnect(t, string(want[i].Value)).Payload); g != w || !strings.Contains(text, valueName) || !subjectHasVersionWithID(reg, topic+"-value", id) {
			t.Fatalf("record %d: value %s (schema %d: %.300s), want %s as %s under %s-value", i, g, id, text, w, valueName, topic)
		}
	}
}
