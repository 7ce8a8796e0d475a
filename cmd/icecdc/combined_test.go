package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestRunCombinedShaping runs the daemon into Kafka with the consumer
// features at once (masks and an excluded column, message.key.columns
// with the hashed column in the key, skipped.operations, the router,
// unwrap in either order, add.headers, a signal's incremental snapshot
// with a row filter, notifications on a topic and in the log, heartbeats,
// /status)
// and holds every record to two things: each delivered value of the
// hashed column is Debezium's hash (shape/testdata/debezium-masks.jsonl),
// and no original value of a masked or excluded column is in any byte of
// any record (key, value, header) on any topic, the log, /status, or a
// notification.
func TestRunCombinedShaping(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const hashOpt = "column.mask.hash.v2.SHA-256.with.salt.CzQMA0cB5K"
	hashes := debeziumHashes(t, hashOpt)
	customers := []string{"hello", "Grüße, 東京", "😀 smile"}
	env, tbl := newOrders(ctx, t)
	changeOrders(ctx, t, tbl, []map[string]any{scenario.Order(1, customers[0], "status-secret-1", 10), scenario.Order(2, customers[1], "status-secret-2", 20)},
		1, func(r map[string]any) map[string]any {
			r["customer"], r["status"] = customers[2], "status-secret-3"
			return r
		}, 2)
	// The secrets as they would appear: raw, and JSON-escaped.
	secrets := []string{"status-secret", "hello", "Grüße", `Gr\u00fc`, "東京", `\u6771`, "😀", `\ud83d`}
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	const route = `  route: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: 'icecdc\.bookshop\.(.*)', topic.replacement: 'shop.all'}`
	for _, tc := range []struct {
		name, format, keys, skipped, transforms string
		signal                                  bool
		// want is the records of shop.all: op or "tombstone" per record,
		// in order. With the hashed customer in the key, the update that
		// changes it is a delete and a create, as Debezium writes a key
		// change.
		want []string
	}{
		{"envelope-router-signal", formatDebeziumConnect, "order_id", "d", route, true, []string{"c", "c", "u", "r"}},
		{"route-then-unwrap-rewrite", formatDebeziumConnect, "order_id,customer", "u", route + "\n  unwrap: {delete.tombstone.handling.mode: rewrite, add.fields: 'op,table', add.headers: 'op,table'}", false,
			[]string{"c", "c", "d", "c", "d"}},
		{"unwrap-then-route-tombstones", formatDebeziumJSON, "order_id,customer", "none", "  unwrap: {delete.tombstone.handling.mode: rewrite-with-tombstone, add.fields: op}\n" + route, false,
			[]string{"c", "c", "d", "tombstone", "c", "d", "tombstone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			brokers := newKafka(t)
			listen := freeAddr(t)
			signals := ""
			if tc.signal {
				// With heartbeats, which the router leaves on their topic.
				signals = "\n  signal.enabled.channels: kafka\n  notification.enabled.channels: sink,log\n  notification.sink.topic.name: icecdc-notes\n  heartbeat.interval.ms: 50"
			}
			sink := fmt.Sprintf(`{type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1}}
format: %s
http: {listen: '%s'}
debezium:
  %s: 'bookshop\.orders\.customer'
  column.exclude.list: 'bookshop\.orders\.status'
  message.key.columns: 'bookshop\.orders:%s'
  skipped.operations: %s%s
transforms:
%s`, brokers[0], tc.format, listen, hashOpt, tc.keys, tc.skipped, signals, tc.transforms)
			cfg := writeConfig(t, "shop-cdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
			read := func(topic string) []*kgo.Record {
				recs, err := readCommitted(ctx, brokers, topic)
				if err != nil {
					t.Fatal(err)
				}
				return recs
			}
			d := startDaemon(t, "-c", cfg)
			n := len(tc.want)
			if tc.signal {
				n--
			}
			d.waitFor(t, "the table's changes", func() bool { return len(read("shop.all")) >= n })
			if tc.signal {
				cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
				if err != nil {
					t.Fatal(err)
				}
				signal := `{"id": "s1", "type": "execute-snapshot", "data": {"type": "incremental", "data-collections": ["bookshop.orders"],
					"additional-conditions": [{"data-collection": "bookshop.orders", "filter": "order_id <= 1"}]}}`
				err = cl.ProduceSync(ctx, &kgo.Record{Topic: "icecdc-signal", Key: []byte("icecdc"), Value: []byte(signal)}).FirstErr()
				cl.Close()
				if err != nil {
					t.Fatal(err)
				}
				d.waitFor(t, "the snapshot's read, its notification and a heartbeat", func() bool {
					return len(read("shop.all")) >= len(tc.want) && strings.Contains(notes(read("icecdc-notes")), "COMPLETED") &&
						len(read("__debezium-heartbeat.icecdc")) > 0
				})
			}
			resp, err := http.Get("http://" + listen + "/status")
			if err != nil {
				t.Fatal(err)
			}
			status, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			d.stop(t)

			recs := read("shop.all")
			var got []string
			for i, r := range recs {
				op := recordOp(t, r, tc.format)
				got = append(got, op)
				if op == "tombstone" {
					continue
				}
				for what, b := range map[string][]byte{"key": r.Key, "value": r.Value} {
					// Every customer value present is one of Debezium's hashes.
					for _, c := range customerValues(t, b) {
						if c != hashes[customers[0]] && c != hashes[customers[1]] && c != hashes[customers[2]] {
							t.Errorf("record %d %s: customer %q is not Debezium's hash of any customer", i, what, c)
						}
					}
					if strings.Contains(string(b), `"status"`) {
						t.Errorf("record %d %s: the excluded column: %s", i, what, b)
					}
				}
				var env struct {
					Payload struct {
						ChangedFields []string `json:"changed_fields"`
					}
				}
				if json.Unmarshal(r.Value, &env) == nil && strings.Contains(strings.Join(env.Payload.ChangedFields, " "), "customer") {
					t.Errorf("record %d: changed_fields %v names the hashed column", i, env.Payload.ChangedFields)
				}
				if !strings.Contains(string(r.Key), "__dbz__physicalTableIdentifier") {
					t.Errorf("record %d: the key is not routed: %s", i, r.Key)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("records %v, want %v", got, tc.want)
			}
			var all strings.Builder
			all.WriteString(d.logs.String())
			all.Write(status)
			all.WriteString(d.out.String())
			// Every topic but the signal topic, which holds what the test
			// wrote.
			for _, topic := range []string{"shop.all", "icecdc.bookshop.orders", "icecdc-notes", "__debezium-heartbeat.icecdc"} {
				for _, r := range read(topic) {
					all.Write(r.Key)
					all.Write(r.Value)
					for _, h := range r.Headers {
						all.WriteString(h.Key)
						all.Write(h.Value)
					}
				}
			}
			out := all.String()
			for _, s := range secrets {
				if i := strings.Index(out, s); i >= 0 {
					t.Errorf("%q reached the output: …%s…", s, out[max(0, i-200):min(len(out), i+100)])
				}
			}
		})
	}
}

// notes is the notification records' values, one string.
func notes(recs []*kgo.Record) string {
	var b strings.Builder
	for _, r := range recs {
		b.Write(r.Value)
	}
	return b.String()
}

// recordOp is the op of a record of shop.all: the envelope's op, the
// flattened value's __op, or "tombstone".
func recordOp(t *testing.T, r *kgo.Record, format string) string {
	t.Helper()
	if r.Value == nil {
		return "tombstone"
	}
	var v map[string]any
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("value %s: %v", r.Value, err)
	}
	if format == formatDebeziumConnect {
		v, _ = v["payload"].(map[string]any)
	}
	if op, ok := v["op"].(string); ok {
		return op
	}
	if op, ok := v["__op"].(string); ok {
		return op
	}
	t.Fatalf("no op in %s", r.Value)
	return ""
}

// customerValues returns every string value of a "customer" field
// anywhere in the JSON of b.
func customerValues(t *testing.T, b []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && k == "customer" {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
