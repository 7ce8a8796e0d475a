package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/sinks/webhook"
)

// TestRunHeartbeatsKafka: with debezium.heartbeat.interval.ms, Debezium's
// heartbeat records (key {serverName} = topic.prefix, value {ts_ms}, with
// Debezium's schema names) flow to __debezium-heartbeat.<topic.prefix>
// while the table does not change, and stop when the daemon stops; the
// table's topic holds its events alone, in order, as without heartbeats.
// Both delivery modes.
func TestRunHeartbeatsKafka(t *testing.T) {
	for _, delivery := range []string{"at-least-once", "exactly-once"} {
		t.Run(delivery, func(t *testing.T) { runHeartbeatsKafka(t, delivery) })
	}
}

func runHeartbeatsKafka(t *testing.T, delivery string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := newKafka(t)
	env, tbl := newOrders(ctx, t)
	var err error
	if tbl, err = scenario.Append(ctx, tbl, []map[string]any{scenario.Order(1, "ann", "new", 10), scenario.Order(2, "bob", "new", 20)}); err != nil {
		t.Fatal(err)
	}
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1, delivery: %s}}\ndebezium: {topic.prefix: shop, heartbeat.interval.ms: 20}", brokers[0], delivery)
	cfg := writeConfig(t, "shop-cdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
	const topic, beats = "icecdc.bookshop.orders", "__debezium-heartbeat.shop"
	read := func(topic string) []*kgo.Record {
		recs, err := readCommitted(ctx, brokers, topic)
		if err != nil && !strings.Contains(err.Error(), "UNKNOWN_TOPIC") {
			t.Fatal(err)
		}
		return recs
	}
	start := time.Now().UnixMilli()
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "the first events", func() bool { return len(read(topic)) == 2 })
	n := len(read(beats))
	d.waitFor(t, "heartbeats while the table does not change", func() bool { return len(read(beats)) >= n+3 })
	if _, err = scenario.Delete(ctx, tbl, iceberg.EqualTo(iceberg.Reference("order_id"), int64(1))); err != nil {
		t.Fatal(err)
	}
	d.waitFor(t, "the delete", func() bool { return len(read(topic)) == 4 }) // d, tombstone
	n = len(read(beats))
	d.waitFor(t, "heartbeats after the delete", func() bool { return len(read(beats)) >= n+2 })
	d.stop(t)
	stopped := read(beats)
	time.Sleep(200 * time.Millisecond) // ten intervals
	if after := read(beats); len(after) != len(stopped) {
		t.Fatalf("%d heartbeats after the daemon stopped, %d when it stopped", len(after), len(stopped))
	}
	last := start
	for i, r := range stopped {
		k, v := splitConnect(t, string(r.Key)), splitConnect(t, string(r.Value))
		var ks, vs struct{ Name string }
		var vp struct {
			TsMs int64 `json:"ts_ms"`
		}
		if json.Unmarshal(k.Schema, &ks) != nil || json.Unmarshal(v.Schema, &vs) != nil || json.Unmarshal(v.Payload, &vp) != nil {
			t.Fatalf("heartbeat %d: %s / %s", i, r.Key, r.Value)
		}
		if ks.Name != "io.debezium.connector.common.ServerNameKey" || vs.Name != "io.debezium.connector.common.Heartbeat" ||
			string(k.Payload) != `{"serverName":"shop"}` || vp.TsMs < last || len(r.Headers) != 0 {
			t.Fatalf("heartbeat %d: key %s value %s headers %v (after ts_ms %d)", i, r.Key, r.Value, r.Headers, last)
		}
		last = vp.TsMs
	}
	var ops []string
	for _, r := range read(topic) {
		op := "tombstone"
		if r.Value != nil {
			var v struct{ Op string }
			if json.Unmarshal(splitConnect(t, string(r.Value)).Payload, &v) != nil {
				t.Fatalf("event %s", r.Value)
			}
			op = v.Op
		}
		ops = append(ops, op)
	}
	if got := strings.Join(ops, " "); got != "c c d tombstone" {
		t.Fatalf("the table's topic: %s, want its events alone: c c d tombstone", got)
	}
}

// TestRunHeartbeatsWebhook: a webhook sink gets each heartbeat as a
// signed POST of {"serverName", "ts_ms"}, between (never inside) the
// event batches, and none after the daemon stopped.
func TestRunHeartbeatsWebhook(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if err := webhook.Verify(testSecret, r.Header, b); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		bodies = append(bodies, r.Header.Get(webhook.HeaderID)+" "+string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), bodies...)
	}
	env, tbl := newOrders(ctx, t)
	if _, err := scenario.Append(ctx, tbl, []map[string]any{scenario.Order(1, "ann", "new", 10)}); err != nil {
		t.Fatal(err)
	}
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	sink := fmt.Sprintf("{type: webhook, webhook: {url: '%s', secret: '%s'}}\ndebezium: {heartbeat.interval.ms: 20}", srv.URL, testSecret)
	cfg := writeConfig(t, "shop-cdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "the event and three heartbeats", func() bool {
		beats, events := 0, 0
		for _, b := range got() {
			if strings.HasPrefix(b, "heartbeat:") {
				beats++
			} else {
				events++
			}
		}
		return events == 1 && beats >= 3
	})
	d.stop(t)   // the process has exited: nothing more is sent
	srv.Close() // waits for the requests it had begun to answer
	for _, b := range got() {
		id, body, _ := strings.Cut(b, " ")
		if !strings.HasPrefix(id, "heartbeat:") {
			if !strings.HasPrefix(body, "[") {
				t.Fatalf("event request %s: %s", id, body)
			}
			continue
		}
		var hb struct {
			ServerName string `json:"serverName"`
			TsMs       int64  `json:"ts_ms"`
		}
		if err := json.Unmarshal([]byte(body), &hb); err != nil || hb.ServerName != "icecdc" || hb.TsMs <= 0 ||
			id != fmt.Sprintf("heartbeat:icecdc:%d", hb.TsMs) {
			t.Fatalf("heartbeat %s: %s (%v)", id, body, err)
		}
	}
}

// TestConfigHeartbeat: the interval is checked, and refused where a
// heartbeat has no place.
func TestConfigHeartbeat(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	if _, err := parseConfig([]byte(goodConfig+"debezium: {heartbeat.interval.ms: 10000}\n"), secret); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ edit, want string }{
		{"debezium: {heartbeat.interval.ms: -1}\n", "config: debezium.heartbeat.interval.ms: -1: must not be negative"},
		{"debezium: {heartbeat.interval.ms: 5}\n", "config: debezium.heartbeat.interval.ms: 5 is too short"},
	} {
		if _, err := parseConfig([]byte(goodConfig+tc.edit), secret); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.edit, err, tc.want)
		}
	}
	file := strings.Replace(goodConfig, "type: webhook", "type: file\n  file: {path: /tmp/x.jsonl}", 1)
	_, err := parseConfig([]byte(file+"debezium: {heartbeat.interval.ms: 1000}\n"), secret)
	if want := "config: debezium.heartbeat.interval.ms: sink file has no place for heartbeats"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("file sink: %v, want %q", err, want)
	}
	// In cluster mode the owner of partition 0 writes them (see
	// TestClusterHeartbeats).
	cluster := "name: p\ntables: [{name: shop.orders}]\nsink: {type: kafka, kafka: {brokers: [\"k:9092\"], checkpoint_topic: cps}}\ncluster: {type: kafka, group: g}\n"
	if _, err := parseConfig([]byte(cluster+"debezium: {heartbeat.interval.ms: 1000}\n"), env(nil)); err != nil {
		t.Errorf("cluster mode: %v", err)
	}
}
