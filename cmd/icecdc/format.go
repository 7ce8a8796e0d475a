package main

import (
	"fmt"

	"github.com/icecdc/icecdc/cdc"
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
	// ProvideTransactionMetadata writes a BEGIN and an END record per
	// snapshot to the <prefix>.transaction topic (Kafka only). Default false.
	ProvideTransactionMetadata bool `yaml:"provide.transaction.metadata"`
}

func (d DebeziumConfig) connectOptions() cdc.ConnectOptions {
	return cdc.ConnectOptions{
		Prefix:          d.TopicPrefix,
		TimePrecision:   cdc.TimePrecisionMode(d.TimePrecisionMode),
		DecimalHandling: cdc.DecimalHandlingMode(d.DecimalHandlingMode),
	}
}

// prefix returns the topic prefix with its default.
func (d DebeziumConfig) prefix() string {
	if d.TopicPrefix == "" {
		return cdc.DefaultConnectPrefix
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
	env := cdc.Envelope{Pipeline: pipeline, Version: version}
	switch format {
	case formatDebeziumJSON:
		return &cdc.DebeziumJSON{Envelope: env}, nil
	case formatDebeziumConnect:
		return cdc.NewDebeziumConnectJSON(env, d.connectOptions())
	}
	return nil, fmt.Errorf("format %q: want %s or %s", format, formatDebeziumJSON, formatDebeziumConnect)
}
