package debezium

import (
	"fmt"
	"strings"
)

// TimePrecisionMode is Debezium's time.precision.mode: how dates, times
// and timestamps are written by the debezium-connect-json format.
type TimePrecisionMode string

// The time precision modes, with Debezium's names. Columns with a time
// zone (timestamptz, timestamptz_ns) are io.debezium.time.ZonedTimestamp
// strings in every mode, as Debezium writes them.
const (
	// TimeAdaptive (the default) keeps every column's precision:
	// io.debezium.time.Date (int32 days), MicroTime (int64 µs of the
	// day), MicroTimestamp (int64 µs), NanoTimestamp (int64 ns).
	TimeAdaptive TimePrecisionMode = "adaptive"
	// TimeAdaptiveMicroseconds is TimeAdaptive: Iceberg times always
	// have microsecond precision, so the two modes coincide.
	TimeAdaptiveMicroseconds TimePrecisionMode = "adaptive_time_microseconds"
	// TimeConnect uses Kafka Connect's own logical types, which hold
	// milliseconds: org.apache.kafka.connect.data.Date (int32 days),
	// Time (int32 ms of the day) and Timestamp (int64 ms). Sub-millisecond
	// digits are dropped (rounded towards the past), as Debezium does.
	TimeConnect TimePrecisionMode = "connect"
	// TimeISOString writes ISO-8601 strings: io.debezium.time.IsoDate,
	// IsoTime and IsoTimestamp.
	TimeISOString TimePrecisionMode = "isostring"
)

// DecimalHandlingMode is Debezium's decimal.handling.mode.
type DecimalHandlingMode string

// The decimal handling modes, with Debezium's names.
const (
	// DecimalPrecise (the default) writes org.apache.kafka.connect.data.Decimal:
	// the unscaled value as big-endian two's-complement bytes (base64 in
	// JSON), with the scale and precision as schema parameters.
	DecimalPrecise DecimalHandlingMode = "precise"
	// DecimalDouble writes a double, which may lose digits.
	DecimalDouble DecimalHandlingMode = "double"
	// DecimalString writes the plain decimal string, e.g. "-12.30".
	DecimalString DecimalHandlingMode = "string"
)

// DefaultConnectPrefix is the default ConnectOptions.Prefix: with the
// Kafka sink's default topic template icecdc.{namespace}.{table}, schema
// names are the topic name plus .Envelope, .Key or .Value, as Debezium's
// are.
const DefaultConnectPrefix = "icecdc"

// ConnectOptions are the settings of the debezium-connect-json format.
// The zero value is Debezium's defaults.
type ConnectOptions struct {
	// Prefix starts the schema names, <prefix>.<namespace>.<table>.Envelope
	// (Debezium's topic.prefix). Default DefaultConnectPrefix.
	Prefix string
	// TimePrecision is the time.precision.mode. Default TimeAdaptive.
	TimePrecision TimePrecisionMode
	// DecimalHandling is the decimal.handling.mode. Default DecimalPrecise.
	DecimalHandling DecimalHandlingMode
}

func (o ConnectOptions) withDefaults() ConnectOptions {
	if o.Prefix == "" {
		o.Prefix = DefaultConnectPrefix
	}
	if o.TimePrecision == "" {
		o.TimePrecision = TimeAdaptive
	}
	if o.DecimalHandling == "" {
		o.DecimalHandling = DecimalPrecise
	}
	return o
}

// Validate checks the modes; errors name the Debezium setting.
func (o ConnectOptions) Validate() error {
	o = o.withDefaults()
	switch o.TimePrecision {
	case TimeAdaptive, TimeAdaptiveMicroseconds, TimeConnect, TimeISOString:
	default:
		return fmt.Errorf("time.precision.mode %q: want %s", o.TimePrecision,
			strings.Join([]string{string(TimeAdaptive), string(TimeAdaptiveMicroseconds), string(TimeConnect), string(TimeISOString)}, ", "))
	}
	switch o.DecimalHandling {
	case DecimalPrecise, DecimalDouble, DecimalString:
	default:
		return fmt.Errorf("decimal.handling.mode %q: want %s, %s or %s", o.DecimalHandling, DecimalPrecise, DecimalDouble, DecimalString)
	}
	if strings.ContainsAny(o.Prefix, "\"\\") || strings.TrimSpace(o.Prefix) != o.Prefix {
		return fmt.Errorf("topic.prefix %q: no quotes, backslashes or surrounding spaces", o.Prefix)
	}
	return nil
}
