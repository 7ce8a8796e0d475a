package signals

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Config is the signal and notification settings, with Debezium's names;
// it sits inline in the configuration's debezium section.
type Config struct {
	// EnabledChannels lists the signal channels, comma-separated: kafka,
	// the only one icecdc reads. Default empty: no signals.
	EnabledChannels string `yaml:"signal.enabled.channels"`
	// KafkaTopic is the signal topic (one partition; created when
	// missing). Default "<topic.prefix>-signal".
	KafkaTopic string `yaml:"signal.kafka.topic"`
	// KafkaBootstrapServers are the signal topic's brokers,
	// comma-separated. Default: the Kafka sink's brokers; required with
	// another sink.
	KafkaBootstrapServers string `yaml:"signal.kafka.bootstrap.servers"`
	// KafkaGroupID is the consumer group whose committed offset says
	// where the signal topic is read from. Default "kafka-signal".
	KafkaGroupID string `yaml:"signal.kafka.groupId"`
	// DataCollection names Debezium's signal table (its source channel);
	// icecdc has none and refuses it.
	DataCollection string `yaml:"signal.data.collection"`
	// NotificationChannels lists the notification channels,
	// comma-separated: sink (a Kafka topic, with the Kafka sink) and log.
	// Default empty: none.
	NotificationChannels string `yaml:"notification.enabled.channels"`
	// NotificationTopic is the sink channel's topic; required with it.
	NotificationTopic string `yaml:"notification.sink.topic.name"`
}

// The defaults, as Debezium's.
const (
	DefaultGroupID     = "kafka-signal"
	DefaultTopicSuffix = "-signal"
)

// list splits a comma-separated setting.
func list(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, strings.ToLower(x))
		}
	}
	return out
}

// Signals reports whether the Kafka signal channel is on.
func (c Config) Signals() bool { return slices.Contains(list(c.EnabledChannels), "kafka") }

// NotifySink and NotifyLog report the notification channels.
func (c Config) NotifySink() bool { return slices.Contains(list(c.NotificationChannels), "sink") }
func (c Config) NotifyLog() bool  { return slices.Contains(list(c.NotificationChannels), "log") }

// Brokers returns the signal topic's brokers, or sink's.
func (c Config) Brokers(sink []string) []string {
	if b := list(c.KafkaBootstrapServers); len(b) > 0 {
		return b
	}
	return sink
}

// Topic returns the signal topic.
func (c Config) Topic(prefix string) string {
	if c.KafkaTopic != "" {
		return c.KafkaTopic
	}
	return prefix + DefaultTopicSuffix
}

// GroupID returns the signal consumer group.
func (c Config) GroupID() string {
	if c.KafkaGroupID != "" {
		return c.KafkaGroupID
	}
	return DefaultGroupID
}

// Validate checks the settings against the sink's type (kafkaSink: the
// sink is Kafka). Each error names its key under debezium.
func (c Config) Validate(kafkaSink bool) error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("config: debezium.%s: %s", key, fmt.Sprintf(format, a...)))
	}
	for _, ch := range list(c.EnabledChannels) {
		if ch != "kafka" {
			bad("signal.enabled.channels", "%q: icecdc reads signals from a Kafka topic only (kafka)", ch)
		}
	}
	if c.DataCollection != "" {
		bad("signal.data.collection", "icecdc has no signal table (Debezium's source channel); send signals to the Kafka topic with signal.enabled.channels: kafka")
	}
	if !c.Signals() {
		for _, kv := range [][2]string{{"signal.kafka.topic", c.KafkaTopic}, {"signal.kafka.bootstrap.servers", c.KafkaBootstrapServers}, {"signal.kafka.groupId", c.KafkaGroupID}} {
			if kv[1] != "" {
				bad(kv[0], "set, but signal.enabled.channels does not list kafka")
			}
		}
	} else if !kafkaSink && len(list(c.KafkaBootstrapServers)) == 0 {
		bad("signal.kafka.bootstrap.servers", "required: the sink is not Kafka, so there are no brokers to default to")
	}
	for _, ch := range list(c.NotificationChannels) {
		if ch != "sink" && ch != "log" {
			bad("notification.enabled.channels", "%q: want sink or log", ch)
		}
	}
	switch {
	case c.NotifySink() && !kafkaSink:
		bad("notification.enabled.channels", "sink writes notifications to a Kafka topic, and the sink is not Kafka; use log")
	case c.NotifySink() && c.NotificationTopic == "":
		bad("notification.sink.topic.name", "required with notification.enabled.channels: sink")
	case !c.NotifySink() && c.NotificationTopic != "":
		bad("notification.sink.topic.name", "set, but notification.enabled.channels does not list sink")
	}
	return errors.Join(errs...)
}
