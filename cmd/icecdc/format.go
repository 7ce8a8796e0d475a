package main

import (
	"fmt"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/sinks/kafka"
)

// Event formats (`format:` and `icecdc changes --format`).
const (
	formatDebeziumJSON    = "debezium-json"
	formatDebeziumConnect = "debezium-connect-json"
)

// DebeziumConfig holds Debezium's settings of the debezium formats, under
// Debezium's own names, so that a connector's configuration carries over.
type DebeziumConfig struct {
	// TopicPrefix starts the Connect schema names
	// (<prefix>.<namespace>.<table>.Envelope) and the transaction topic
	// (<prefix>.transaction). Default "icecdc", the start of the default
	// topic template.
	TopicPrefix string `yaml:"topic.prefix"`
	// TimePrecisionMode: adaptive (default), adaptive_time_microseconds,
	// connect or isostring.
	TimePrecisionMode string `yaml:"time.precision.mode"`
	// DecimalHandlingMode: precise (default), double or string.
	DecimalHandlingMode string `yaml:"decimal.handling.mode"`
	// VariantHandlingMode: string (default), a variant as a JSON string
	// holding its JSON text in both formats, or json, the document itself
	// in debezium-json (debezium-connect-json always writes
	// io.debezium.data.Json strings).
	VariantHandlingMode string `yaml:"variant.handling.mode"`
	// ProvideTransactionMetadata writes a BEGIN and an END record per
	// snapshot to the <prefix>.transaction topic (Kafka only). Default false.
	ProvideTransactionMetadata bool `yaml:"provide.transaction.metadata"`
	// IncludeSchemaChanges writes a record per schema change to the
	// <prefix>.schema-changes topic (Kafka only), as Debezium's
	// include.schema.changes. Default false.
	IncludeSchemaChanges bool `yaml:"include.schema.changes"`
	// Config is the signal and notification settings (package signals).
	signals.Config `yaml:",inline"`
}

// kafkaTopics sets the transaction and schema-change records of a Kafka
// sink's config as d asks, encoded by enc.
func (d DebeziumConfig) kafkaTopics(kc *kafka.Config, enc cdc.Encoder, format string) error {
	if d.ProvideTransactionMetadata {
		te, ok := enc.(cdc.TransactionEncoder)
		if !ok {
			return fmt.Errorf("config: debezium.provide.transaction.metadata: format %s has no transaction records", format)
		}
		kc.Transactions, kc.TransactionTopic = te, d.prefix()+".transaction"
	}
	if d.IncludeSchemaChanges {
		if _, ok := enc.(cdc.SchemaChangeEncoder); !ok {
			return fmt.Errorf("config: debezium.include.schema.changes: format %s has no schema-change records", format)
		}
		kc.SchemaChangeTopic = d.prefix() + ".schema-changes"
	}
	return nil
}

func (d DebeziumConfig) connectOptions() debezium.ConnectOptions {
	return debezium.ConnectOptions{
		Prefix:          d.TopicPrefix,
		TimePrecision:   debezium.TimePrecisionMode(d.TimePrecisionMode),
		DecimalHandling: debezium.DecimalHandlingMode(d.DecimalHandlingMode),
	}
}

// prefix returns the topic prefix with its default.
func (d DebeziumConfig) prefix() string {
	if d.TopicPrefix == "" {
		return debezium.DefaultConnectPrefix
	}
	return d.TopicPrefix
}

// defaultFormat is the format when none is configured: on Kafka, Connect's
// form, since Kafka Connect's JsonConverter expects schemas by default.
func defaultFormat(sinkType string) string {
	if sinkType == "kafka" {
		return formatDebeziumConnect
	}
	return formatDebeziumJSON
}

// newEncoder builds the encoder of a format.
func newEncoder(format string, d DebeziumConfig, pipeline string) (cdc.Encoder, error) {
	env := debezium.Envelope{Pipeline: pipeline, Version: version}
	switch format {
	case formatDebeziumJSON:
		vh := debezium.VariantHandlingMode(d.VariantHandlingMode)
		if err := vh.Validate(); err != nil {
			return nil, fmt.Errorf("config: debezium.%w", err)
		}
		return &debezium.JSON{Envelope: env, VariantHandling: vh}, nil
	case formatDebeziumConnect:
		return debezium.NewConnectJSON(env, d.connectOptions())
	}
	return nil, fmt.Errorf("format %q: want %s or %s", format, formatDebeziumJSON, formatDebeziumConnect)
}
