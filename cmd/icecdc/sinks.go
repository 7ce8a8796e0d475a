package main

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/icecdc/icecdc/metrics"
	"github.com/icecdc/icecdc/sinks/file"
	icebergsink "github.com/icecdc/icecdc/sinks/iceberg"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/sinks/kinesis"
	natssink "github.com/icecdc/icecdc/sinks/nats"
	"github.com/icecdc/icecdc/sinks/opensearch"
	"github.com/icecdc/icecdc/sinks/rabbitmq"
	redissink "github.com/icecdc/icecdc/sinks/redis"
	"github.com/icecdc/icecdc/sinks/sinkkind"
	"github.com/icecdc/icecdc/sinks/sns"
	"github.com/icecdc/icecdc/sinks/sqs"
	"github.com/icecdc/icecdc/sinks/stdout"
	"github.com/icecdc/icecdc/sinks/webhook"
)

// SinkConfig chooses the sink (Type) and holds the sink kinds' sections:
// one field per kind, whose type declares the kind (sinkkind.Section).
// It is the registry of sinks: adding one is its package and a field
// here; the daemon asks the kinds' Caps, never their names.
type SinkConfig struct {
	Type       string             `yaml:"type"`
	Kafka      kafka.Config       `yaml:"kafka"`
	Webhook    WebhookConfig      `yaml:"webhook"`
	Stdout     stdout.Config      `yaml:"-"` // no settings
	File       file.Config        `yaml:"file"`
	OpenSearch opensearch.Config  `yaml:"opensearch"`
	NATS       natssink.Config    `yaml:"nats"`
	Redis      redissink.Config   `yaml:"redis"`
	RabbitMQ   rabbitmq.Config    `yaml:"rabbitmq"`
	SQS        sqs.Config         `yaml:"sqs"`
	SNS        sns.Config         `yaml:"sns"`
	Kinesis    kinesis.Config     `yaml:"kinesis"`
	Iceberg    icebergsink.Config `yaml:"iceberg"`
}

// WebhookConfig is the webhook sink's section.
type WebhookConfig = webhook.Section

// kinds returns the sink kinds, in the order SinkConfig lists them.
func (s *SinkConfig) kinds() []sinkkind.Kind {
	v := reflect.ValueOf(s).Elem()
	var out []sinkkind.Kind
	for i := range v.NumField() {
		if sec, ok := v.Field(i).Addr().Interface().(sinkkind.Section); ok {
			out = append(out, sec.Kind())
		}
	}
	return out
}

// kind returns the configured kind; ok is false for an unknown type.
func (s *SinkConfig) kind() (k sinkkind.Kind, ok bool) {
	for _, k := range s.kinds() {
		if k.Name == s.Type {
			return k, true
		}
	}
	return sinkkind.Kind{}, false
}

// caps returns the configured kind's capabilities (none for an unknown
// type, which validate reports).
func (s *SinkConfig) caps() sinkkind.Caps {
	k, _ := s.kind()
	return k.Caps
}

// kindNames lists the kinds for messages: "a, b or c"; with has, only
// those whose caps it accepts, joined with "and".
func (s *SinkConfig) kindNames(has func(sinkkind.Caps) bool) string {
	var names []string
	for _, k := range s.kinds() {
		if has == nil || has(k.Caps) {
			names = append(names, k.Name)
		}
	}
	sep := " or "
	if has != nil {
		sep = " and "
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + sep + names[len(names)-1]
}

// check validates sink.type and the chosen kind's section.
func (s *SinkConfig) check() []error {
	k, ok := s.kind()
	switch {
	case s.Type == "":
		// Once the default: a forgotten or mis-indented sink section then
		// sent the events to stdout, where no one was reading.
		return []error{fmt.Errorf("config: sink.type: required: %s", s.kindNames(nil))}
	case !ok:
		// (the config's value errors add the nearest name: locateOne)
		return []error{fmt.Errorf("config: sink.type: %q: want %s", s.Type, s.kindNames(nil))}
	case k.Check == nil:
		return nil
	}
	var errs []error
	for _, err := range k.Check() {
		errs = append(errs, fmt.Errorf("config: sink.%s.%w", k.Name, err))
	}
	return errs
}

// checkFormat refuses a format the sink does not carry.
func (s *SinkConfig) checkFormat(format string) error {
	if c := s.caps(); c.Formats != nil && !slices.Contains(c.Formats, format) {
		return fmt.Errorf("config: format: sink %s takes %s, not %s", s.Type, strings.Join(c.Formats, " or "), format)
	}
	return nil
}

// retriesCounter counts a sink's retries by status in metrics m.
func retriesCounter(name string, m *metrics.Metrics) func(int) {
	if m == nil {
		return nil
	}
	return func(status int) { m.SinkRetries.WithLabelValues(name, strconv.Itoa(status)).Inc() }
}

// webhookMetrics is a webhook.Observer counting retries in m, for a
// webhook sink built by hand.
type webhookMetrics struct{ m *metrics.Metrics }

func (w webhookMetrics) Retry(status int, _ error) { retriesCounter("webhook", w.m)(status) }

func (webhookMetrics) Delivered(int) {}
