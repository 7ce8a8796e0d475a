package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/state"
)

// TestConfigSignals accepts Debezium's signal and notification settings
// where they apply, with Debezium's defaults, and refuses each setting
// that cannot apply with one line naming it.
func TestConfigSignals(t *testing.T) {
	const kafkaSink = "name: p\ntables: [{name: a.b}]\nsink: {type: kafka, kafka: {brokers: [k:9092]}}\n"
	const fileSink = "name: p\ntables: [{name: a.b}]\nsink: {type: file, file: {path: /tmp/x}}\n"
	c, err := parseConfig([]byte(kafkaSink+"debezium:\n  topic.prefix: shop\n  signal.enabled.channels: kafka\n  notification.enabled.channels: sink,log\n  notification.sink.topic.name: shop.notes\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	sc := c.Debezium.Config
	if !sc.Signals() || !sc.NotifySink() || !sc.NotifyLog() || sc.Topic(c.Debezium.prefix()) != "shop-signal" || sc.GroupID() != "kafka-signal" ||
		strings.Join(sc.Brokers(c.Sink.Kafka.Brokers), ",") != "k:9092" {
		t.Errorf("defaults: %+v", sc)
	}
	if _, err := parseConfig([]byte(fileSink+"debezium:\n  signal.enabled.channels: kafka\n  signal.kafka.bootstrap.servers: a:1,b:2\n  notification.enabled.channels: log\n"), env(nil)); err != nil {
		t.Errorf("signals with a file sink and its own brokers: %v", err)
	}
	for _, tc := range []struct{ sink, debezium, want string }{
		{kafkaSink, "signal.enabled.channels: source", `debezium.signal.enabled.channels: "source": icecdc reads signals from a Kafka topic only`},
		{kafkaSink, "signal.data.collection: db.signals", "debezium.signal.data.collection: icecdc has no signal table"},
		{kafkaSink, "signal.kafka.topic: s", "debezium.signal.kafka.topic: set, but signal.enabled.channels does not list kafka"},
		{fileSink, "signal.enabled.channels: kafka", "debezium.signal.kafka.bootstrap.servers: required: the sink is not Kafka"},
		{fileSink, "notification.enabled.channels: sink\n  notification.sink.topic.name: n", "debezium.notification.enabled.channels: sink writes notifications to a Kafka topic, and the sink is not Kafka"},
		{kafkaSink, "notification.enabled.channels: sink", "debezium.notification.sink.topic.name: required with notification.enabled.channels: sink"},
		{kafkaSink, "notification.enabled.channels: jmx", `debezium.notification.enabled.channels: "jmx": want sink or log`},
		{kafkaSink, "notification.sink.topic.name: n", "debezium.notification.sink.topic.name: set, but notification.enabled.channels does not list sink"},
	} {
		_, err := parseConfig([]byte(tc.sink+"debezium:\n  "+tc.debezium+"\n"), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line saying %s", tc.debezium, err, tc.want)
		}
	}
}

// TestMemberTargets: a cluster member's signals reach the pipelines of
// the tables it owns; a table it never owned, or whose pipeline stopped
// (the table moved to another member), is another member's.
func TestMemberTargets(t *testing.T) {
	m := &memberTargets{byTable: map[string]*cdc.Pipeline{}}
	if _, err := m.Snapshot(t.Context(), "shop.orders", cdc.SnapshotRequest{ID: "1"}); !errors.Is(err, signals.ErrNotOwned) {
		t.Fatalf("a table the member never owned: %v", err)
	}
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src := cdctest.New(cdctest.Info("shop", "orders"))
	first := src.Append(cdctest.Inserts(1, 10)...)
	p := &cdc.Pipeline{Name: "p", Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}},
		Encoder: &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "p"}}, Sink: &cdctest.Sink{}, Store: store, Poll: time.Millisecond,
		Ready: make(chan struct{})}
	m.set("shop.orders", p)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	<-p.Ready
	hang, stop := context.WithTimeout(t.Context(), 30*time.Second) // a hang guard only
	defer stop()
	if si, err := m.Snapshot(hang, "shop.orders", cdc.SnapshotRequest{ID: "2", Kind: "incremental"}); err != nil || si.ID != first.ID {
		t.Fatalf("the owned table's snapshot: %+v, %v", si, err)
	}
	if err := m.ControlSnapshot("shop.orders", cdc.PauseSnapshot); err != nil {
		t.Fatalf("pause the owned table's read: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := m.Snapshot(t.Context(), "shop.orders", cdc.SnapshotRequest{ID: "3"}); !errors.Is(err, signals.ErrNotOwned) {
		t.Fatalf("a table whose pipeline stopped: %v", err)
	}
	if err := m.ControlSnapshot("shop.orders", cdc.ResumeSnapshot); !errors.Is(err, signals.ErrNotOwned) {
		t.Fatalf("a control for a table whose pipeline stopped: %v", err)
	}
}
