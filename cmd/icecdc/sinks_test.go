package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/sinks/opensearch"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

const sinkBase = "name: p\ntables: [{name: a.b}]\n"

func TestSinkTypeDidYouMean(t *testing.T) {
	_, err := parseConfig([]byte(sinkBase+"sink: {type: webhok}\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), `sink.type: "webhok": want kafka, webhook, stdout, file, opensearch, nats, redis, rabbitmq, sqs, sns, kinesis or iceberg (did you mean webhook?)`) {
		t.Fatalf("misspelt sink type: %v", err)
	}
}

// The OpenSearch sink comes from its section alone: the registry finds
// it, its defaults apply, and the capabilities it declares refuse what an
// index cannot hold.
func TestOpenSearchSinkFromConfig(t *testing.T) {
	c, err := parseConfig([]byte(sinkBase+"sink: {type: opensearch, opensearch: {urls: [\"http://127.0.0.1:9\"], password: ${OS_PW}, username: u}}\n"),
		env(map[string]string{"OS_PW": "pw"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Format != formatDebeziumJSON || c.Sink.OpenSearch.Password != "pw" {
		t.Errorf("format %s, password expanded %t", c.Format, c.Sink.OpenSearch.Password == "pw")
	}
	if o, _ := c.transforms().unwrap(); o == nil || o.DeleteHandling != "delete-to-tombstone" {
		t.Errorf("unwrap options %+v: a sink that keeps rows gets them flattened", o)
	}
	s, err := buildSink(c, nil, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*opensearch.Sink); !ok {
		t.Fatalf("built %T", s)
	}
	for _, tc := range []struct{ extra, want string }{
		{"debezium: {heartbeat.interval.ms: 1000}\n", "sink opensearch has no place for heartbeats (only kafka and webhook carry them)"},
		{"debezium: {provide.transaction.metadata: true}\n", "only the kafka sink writes transaction records"},
		{"format: debezium-connect-json\n", "format: sink opensearch takes debezium-json, not debezium-connect-json"},
		{"transforms: {unwrap: {type: io.debezium.transforms.ExtractNewRecordState, delete.tombstone.handling.mode: drop}}\n", "would never delete one"},
	} {
		_, err := parseConfig([]byte(sinkBase+tc.extra+"sink: {type: opensearch, opensearch: {urls: [\"http://127.0.0.1:9\"]}}\n"), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", strings.TrimSpace(tc.extra), err, tc.want)
		}
	}
	_, err = parseConfig([]byte(sinkBase+"sink: {type: opensearch, opensearch: {index: \"{tabel}\"}}\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "sink.opensearch.urls: at least one") {
		t.Errorf("no urls: %v", err)
	}
}

// The message-queue sinks come from their sections alone: the registry
// finds each, its section is checked naming its keys, and its
// constructor builds it without contacting the server.
func TestQueueSinksFromConfig(t *testing.T) {
	for _, tc := range []struct{ yaml, bad, want string }{
		{"sink: {type: nats, nats: {urls: [\"nats://127.0.0.1:4222\"], subject: \"cdc.{table}\"}}\n",
			"sink: {type: nats, nats: {subject: \"cdc.*.{table}\"}}\n", "config: sink.nats.subject:"},
		{"sink: {type: redis, redis: {url: \"redis://:${PW}@127.0.0.1:6379/0\", max_len: 1000}}\n",
			"sink: {type: redis, redis: {url: \"http://x\"}}\n", "config: sink.redis.url:"},
		{"sink: {type: rabbitmq, rabbitmq: {url: \"amqp://u:${PW}@127.0.0.1:5672/\", routing_key: \"{table}\"}}\n",
			"sink: {type: rabbitmq, rabbitmq: {exchange_type: fan}}\n", "config: sink.rabbitmq.exchange_type:"},
	} {
		c, err := parseConfig([]byte(sinkBase+tc.yaml), env(map[string]string{"PW": "pw"}))
		if err != nil {
			t.Fatalf("%s: %v", tc.yaml, err)
		}
		k, ok := c.Sink.kind()
		if !ok {
			t.Fatalf("%s: kind %s not found", tc.yaml, c.Sink.Type)
		}
		s, err := k.New(sinkkind.Env{Pipeline: "p"})
		if err != nil {
			t.Fatalf("%s: New: %v", tc.yaml, err)
		}
		_ = s.Close(t.Context())
		if _, err := parseConfig([]byte(sinkBase+tc.bad), env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.bad, err, tc.want)
		}
	}
}

// The SQS, SNS and Kinesis sinks come from their sections: built without
// contacting AWS, their sections checked by key, their formats and the
// records they have no place for refused.
func TestAWSSinksFromConfig(t *testing.T) {
	conn := `region: eu-west-1, endpoint: "http://127.0.0.1:9", access_key_id: AKIA1, secret_access_key: ${AWS_SK}`
	for _, tc := range []struct{ kind, section string }{
		{"sqs", `queue: "icecdc-{table}.fifo"`},
		{"sns", `topic_arn: "arn:aws:sns:eu-west-1:1:icecdc-{table}"`},
		{"kinesis", `stream: "icecdc-{table}"`},
	} {
		yml := sinkBase + "sink: {type: " + tc.kind + ", " + tc.kind + ": {" + tc.section + ", " + conn + "}}\n"
		c, err := parseConfig([]byte(yml), env(map[string]string{"AWS_SK": "secret-value"}))
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		s, err := buildSink(c, nil, nil, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if got := fmt.Sprintf("%T", s); got != "*"+tc.kind+".Sink" {
			t.Errorf("%s: built %s", tc.kind, got)
		}
		_, err = parseConfig([]byte("debezium: {heartbeat.interval.ms: 1000}\n"+yml), env(map[string]string{"AWS_SK": "x"}))
		if err == nil || !strings.Contains(err.Error(), "sink "+tc.kind+" has no place for heartbeats") {
			t.Errorf("%s with heartbeats: %v", tc.kind, err)
		}
		_, err = parseConfig([]byte(sinkBase+"sink: {type: "+tc.kind+", "+tc.kind+": {access_key_id: AKIA1}}\n"), env(nil))
		if err == nil || !strings.Contains(err.Error(), "sink."+tc.kind+".") || !strings.Contains(err.Error(), "required") {
			t.Errorf("%s without a destination: %v", tc.kind, err)
		}
	}
	_, err := parseConfig([]byte(sinkBase+"format: debezium-avro\nschema_registry: {url: 'http://127.0.0.1:9'}\nsink: {type: sqs, sqs: {queue: q}}\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "sink sqs takes debezium-json or debezium-connect-json") {
		t.Errorf("avro on SQS: %v", err)
	}
}
