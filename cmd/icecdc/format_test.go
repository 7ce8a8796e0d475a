package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// connectRecord is a key or value in Kafka Connect's JSON form.
type connectRecord struct {
	Schema  json.RawMessage `json:"schema"`
	Payload json.RawMessage `json:"payload"`
}

func splitConnect(t *testing.T, s string) connectRecord {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil || len(m) != 2 || m["schema"] == nil || m["payload"] == nil {
		t.Fatalf("not {schema, payload}: %v: %.200s", err, s)
	}
	return connectRecord{m["schema"], m["payload"]}
}

// replayConnect applies key/value lines to a table keyed by the key's
// payload, as a Connect sink in upsert mode does: c, u and r write the
// after image, d removes the key.
func replayConnect(t *testing.T, lines []string, into map[string]string) {
	t.Helper()
	for _, l := range lines {
		k, v, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("no tab: %.200s", l)
		}
		key := splitConnect(t, k)
		var p struct {
			Op    string          `json:"op"`
			After json.RawMessage `json:"after"`
		}
		if err := json.Unmarshal(splitConnect(t, v).Payload, &p); err != nil {
			t.Fatal(err)
		}
		switch p.Op {
		case "c", "u", "r":
			into[string(key.Payload)] = string(p.After)
		case "d":
			delete(into, string(key.Payload))
		default:
			t.Fatalf("op %q", p.Op)
		}
	}
}

// TestChangesConnectFormat prints the demo story in Connect's form with
// keys: the events are those of debezium-json, and a consumer that
// receives every event twice, or the whole stream twice, ends with the
// table's rows.
func TestChangesConnectFormat(t *testing.T) {
	_, catArgs, _ := bookshop(t)
	out, errOut, code := runCmd(append([]string{"changes", "--format", "debezium-connect-json", "--with-key"}, catArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var got []string
	for _, l := range lines {
		_, v, _ := strings.Cut(l, "\t")
		ls := parseLines(t, string(splitConnect(t, v).Payload))
		got = append(got, ls[0].summary())
	}
	if strings.Join(got, "\n") != strings.Join(bookshopEvents, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(bookshopEvents, "\n"))
	}
	once := map[string]string{}
	replayConnect(t, lines, once)
	if len(once) != 4 || !strings.Contains(once[`{"order_id":1}`], `"shipped"`) || once[`{"order_id":2}`] != "" {
		t.Fatalf("replayed rows: %v", once)
	}
	var doubled []string
	for _, l := range lines {
		doubled = append(doubled, l, l)
	}
	twice := map[string]string{}
	replayConnect(t, doubled, twice)
	replayConnect(t, lines, twice)
	if !maps.Equal(once, twice) {
		t.Fatalf("at-least-once replay diverged:\n%v\n%v", once, twice)
	}
}

func TestFormatConfig(t *testing.T) {
	base := `
name: p
tables: [{name: shop.orders}]
`
	for _, tc := range []struct {
		yaml, format, err string
	}{
		{"sink: {type: kafka, kafka: {brokers: [b:9092]}}\n", formatDebeziumConnect, ""},
		{"sink: {type: stdout}\n", formatDebeziumJSON, ""},
		{"format: debezium-connect-json\nsink: {type: stdout}\n", formatDebeziumConnect, ""},
		{"format: debezium-json\nsink: {type: kafka, kafka: {brokers: [b:9092]}}\n", formatDebeziumJSON, ""},
		{"format: avro\nsink: {type: stdout}\n", "", `config: format: "avro": want debezium-json, debezium-connect-json or debezium-avro`},
		{"debezium: {time.precision.mode: nanos}\nsink: {type: stdout}\n", "", `config: debezium: time.precision.mode "nanos"`},
		{"debezium: {decimal.handling.mode: exact}\nsink: {type: stdout}\n", "", `config: debezium: decimal.handling.mode "exact"`},
		{"debezium: {provide.transaction.metadata: true}\nsink: {type: stdout}\n", "", "debezium.provide.transaction.metadata: only the kafka sink"},
		{"debezium: {include.schema.changes: true}\nsink: {type: file, file: {path: /tmp/x}}\n", "", "debezium.include.schema.changes: only the kafka sink"},
		{"debezium: {time.precision.mode: connect, decimal.handling.mode: string, topic.prefix: dbz, provide.transaction.metadata: true}\n" +
			"sink: {type: kafka, kafka: {brokers: [b:9092]}}\n", formatDebeziumConnect, ""},
	} {
		c, err := parseConfig([]byte(base+tc.yaml), env(nil))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want %q", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if c.Format != tc.format {
			t.Errorf("%q: format %s, want %s", tc.yaml, c.Format, tc.format)
		}
		if _, err := newEncoder(c.Format, c.Debezium, c.Name); err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
		}
	}
}

// TestRunKafkaConnectFormat runs the daemon into Kafka with the defaults
// of a Kafka sink (debezium-connect-json, tombstones) and transaction
// metadata: every record is in Connect's form, each delete is followed by
// its tombstone, and each snapshot's BEGIN and END frame its events with
// their count.
func TestRunKafkaConnectFormat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1}}\ndebezium: {provide.transaction.metadata: true, topic.prefix: shop}", brokers[0])
	cfg := writeConfig(t, "shop-cdc", bookshopCatalog(t), sink, filepath.Join(t.TempDir(), "state.db"))
	read := func(topic string) []*kgo.Record {
		recs, err := readCommitted(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	const topic = "icecdc.bookshop.orders"
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "every event and the last END", func() bool {
		return len(read(topic)) == len(bookshopEvents)+2 && len(read("shop.transaction")) == 10
	})
	d.stop(t)

	recs := read(topic)
	perTx := map[string]int{}
	var got []string
	for i, r := range recs {
		key := splitConnect(t, string(r.Key))
		if !strings.Contains(string(key.Schema), `"name":"shop.bookshop.orders.Key"`) {
			t.Fatalf("key schema %s", key.Schema)
		}
		if r.Value == nil {
			if i == 0 || !strings.Contains(string(recs[i-1].Value), `"op":"d"`) || string(recs[i-1].Key) != string(r.Key) {
				t.Fatalf("tombstone %d does not follow its delete", i)
			}
			continue
		}
		v := splitConnect(t, string(r.Value))
		ls := parseLines(t, string(v.Payload))
		got = append(got, ls[0].summary())
		var tx struct {
			Transaction struct{ ID string } `json:"transaction"`
		}
		json.Unmarshal(v.Payload, &tx)
		perTx[tx.Transaction.ID]++
	}
	if strings.Join(got, "\n") != strings.Join(bookshopEvents, "\n") {
		t.Fatalf("events:\n%s", strings.Join(got, "\n"))
	}
	open := ""
	for _, r := range read("shop.transaction") {
		k, v := splitConnect(t, string(r.Key)), splitConnect(t, string(r.Value))
		var m struct {
			Status, ID      string
			EventCount      *int `json:"event_count"`
			DataCollections []struct {
				DataCollection string `json:"data_collection"`
				EventCount     int    `json:"event_count"`
			} `json:"data_collections"`
		}
		if err := json.Unmarshal(v.Payload, &m); err != nil || !strings.Contains(string(k.Payload), m.ID) {
			t.Fatalf("transaction record %s / %s: %v", k.Payload, v.Payload, err)
		}
		switch {
		case m.Status == "BEGIN" && open == "" && m.EventCount == nil:
			open = m.ID
		case m.Status == "END" && open == m.ID && m.EventCount != nil && *m.EventCount == perTx[m.ID] &&
			len(m.DataCollections) == 1 && m.DataCollections[0].DataCollection == "bookshop.orders" &&
			m.DataCollections[0].EventCount == perTx[m.ID]:
			open = ""
			delete(perTx, m.ID)
		default:
			t.Fatalf("transaction record out of place (open %q): %s", open, v.Payload)
		}
	}
	if open != "" || len(perTx) != 0 {
		t.Fatalf("transactions without END: open %q, unmatched %v", open, perTx)
	}
}
