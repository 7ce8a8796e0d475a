package main

import (
	"strings"
	"testing"
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
