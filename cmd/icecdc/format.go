package main

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/registry"
	"github.com/icecdc/icecdc/shape"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/sinks/kafka"
)

// Event formats (`format:` and `icecdc changes --format`).
const (
	formatDebeziumJSON    = "debezium-json"
	formatDebeziumConnect = "debezium-connect-json"
	formatDebeziumAvro    = "debezium-avro"
	formatNames           = formatDebeziumJSON + ", " + formatDebeziumConnect + " or " + formatDebeziumAvro
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
	// HeartbeatIntervalMs, when above 0, writes Debezium's heartbeat
	// record every so many milliseconds (heartbeat.go). Default 0: none.
	HeartbeatIntervalMs int64 `yaml:"heartbeat.interval.ms"`
	// HeartbeatTopicsPrefix starts the heartbeat topic,
	// <prefix>.<topic.prefix>. Default "__debezium-heartbeat".
	HeartbeatTopicsPrefix string `yaml:"heartbeat.topics.prefix"`
	// SchemaNameAdjustmentMode and FieldNameAdjustmentMode: none
	// (default), avro or avro_unicode; what debezium-avro does with a
	// schema or field name Avro does not allow.
	SchemaNameAdjustmentMode string `yaml:"schema.name.adjustment.mode"`
	FieldNameAdjustmentMode  string `yaml:"field.name.adjustment.mode"`

	// Config is the signal and notification settings (package signals).
	signals.Config `yaml:",inline"`

	// avro is what debezium-avro needs beyond these settings, set from
	// the rest of the configuration (prepareAvro) or by icecdc changes.
	avro *avroSetup

	// ColumnIncludeList and ColumnExcludeList keep or leave out columns,
	// named by fully-qualified regular expressions
	// (<namespace>.<table>.<column>); set one of them at most.
	ColumnIncludeList string `yaml:"column.include.list"`
	ColumnExcludeList string `yaml:"column.exclude.list"`
	// MessageKeyColumns chooses the key of tables:
	// "<table regex>:<column>,<column>;<table regex>:…" (default: the
	// table's key, tables[].key).
	MessageKeyColumns string `yaml:"message.key.columns"`
	// SkippedOperations are the operations not delivered: c, u, d, r, t,
	// comma-separated, or none (the default).
	SkippedOperations string `yaml:"skipped.operations"`
	// Masks are the column.truncate.to.N.chars, column.mask.with.N.chars
	// and column.mask.hash[.v2].<algorithm>.with.salt.<salt> options,
	// whose keys carry their parameters.
	Masks ColumnMasks `yaml:",inline"`
}

// ColumnMasks holds Debezium's column mask options by their keys.
type ColumnMasks map[string]string

// AcceptsKey reports whether key is one of the masks' (the config checker
// takes such keys into the inline map).
func (ColumnMasks) AcceptsKey(key string) bool {
	return strings.HasPrefix(key, "column.mask.") || strings.HasPrefix(key, "column.truncate.")
}

// DocumentedKeys are the masks' keys as the configuration reference names
// them.
func (ColumnMasks) DocumentedKeys() []string {
	return []string{"column.truncate.to.N.chars", "column.mask.with.N.chars",
		"column.mask.hash.ALGORITHM.with.salt.SALT", "column.mask.hash.v2.ALGORITHM.with.salt.SALT"}
}

// shaping returns the column and row shaping d asks for; nil for none.
// Its errors name the option under debezium.
func (d DebeziumConfig) shaping() (*shape.Shaping, error) {
	opts := map[string]string{}
	for k, v := range d.Masks {
		opts[k] = v
	}
	for k, v := range map[string]string{"column.include.list": d.ColumnIncludeList, "column.exclude.list": d.ColumnExcludeList,
		"skipped.operations": d.SkippedOperations} {
		if v != "" {
			opts[k] = v
		}
	}
	if len(opts) == 0 {
		return nil, nil
	}
	s, err := shape.Parse(opts)
	if err != nil {
		return nil, fmt.Errorf("config: debezium.%w", err)
	}
	if s.Empty() {
		return nil, nil
	}
	return s, nil
}

// shapingParts are the shaping options as key=value, sorted, for the
// cluster's configuration fingerprint: members that mask differently must
// not share a pipeline.
func (d DebeziumConfig) shapingParts() []string {
	var out []string
	for k, v := range d.Masks {
		out = append(out, k+"="+v)
	}
	for k, v := range map[string]string{"column.include.list": d.ColumnIncludeList, "column.exclude.list": d.ColumnExcludeList,
		"skipped.operations": d.SkippedOperations, "message.key.columns": d.MessageKeyColumns} {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	slices.Sort(out)
	return out
}

// keyColumns parses message.key.columns into its table patterns and their
// columns, in order.
func (d DebeziumConfig) keyColumns() ([]tableKey, error) {
	var out []tableKey
	if strings.TrimSpace(d.MessageKeyColumns) == "" {
		return nil, nil
	}
	for _, part := range strings.Split(d.MessageKeyColumns, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		tbl, cols, ok := strings.Cut(part, ":")
		if !ok || strings.TrimSpace(tbl) == "" {
			return nil, fmt.Errorf("config: debezium.message.key.columns: %q: want <table>:<column>[,<column>…]", part)
		}
		re, err := regexp.Compile("^(?i:" + strings.TrimSpace(tbl) + ")$")
		if err != nil {
			return nil, fmt.Errorf("config: debezium.message.key.columns: table pattern %q: %v", tbl, err)
		}
		k := tableKey{pattern: re, text: strings.TrimSpace(tbl)}
		for _, c := range strings.Split(cols, ",") {
			if c = strings.TrimSpace(c); c != "" {
				k.columns = append(k.columns, c)
			}
		}
		if len(k.columns) == 0 {
			return nil, fmt.Errorf("config: debezium.message.key.columns: table %s: no columns", k.text)
		}
		out = append(out, k)
	}
	return out, nil
}

// tableKey is one table pattern of message.key.columns.
type tableKey struct {
	pattern *regexp.Regexp
	text    string
	columns []string
}

// keyFor returns the key columns message.key.columns gives table; nil
// when no pattern matches it (the first that does applies).
func keyFor(keys []tableKey, table string) []string {
	for _, k := range keys {
		if k.pattern.MatchString(table) {
			return k.columns
		}
	}
	return nil
}

// avroSetup is the registry of debezium-avro and the topic of a table's
// events, which its subjects follow.
type avroSetup struct {
	registry registry.Config
	topic    func(*cdc.TableInfo) (string, error)
}

// kafkaTopics sets the transaction and schema-change records of a Kafka
// sink's config as d asks, encoded by enc.
func (d DebeziumConfig) kafkaTopics(kc *kafka.Config, enc cdc.Encoder, format string) error {
	enc = debezium.Unrouted(enc) // transaction records are not routed
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

// defaultFormat is the format when none is configured: the sink's own
// (on Kafka, Connect's form, since Kafka Connect's JsonConverter expects
// schemas by default), else debezium-json.
func defaultFormat(sinkType string) string {
	s := SinkConfig{Type: sinkType}
	return cmp.Or(s.caps().DefaultFormat, formatDebeziumJSON)
}

// TransformConfig is one of Debezium's single message transforms: its
// type and options, by Debezium's names.
type TransformConfig map[string]string

const byLogicalTableRouter = "io.debezium.transforms.ByLogicalTableRouter"

// routerOptions are the options a ByLogicalTableRouter takes.
var routerOptions = []string{"type", "topic.regex", "topic.replacement", "key.enforce.uniqueness", "key.field.name", "key.field.regex", "key.field.replacement"}

// router returns the topic router c's transforms configure; nil for none.
// Its errors name the transform.
func (c *Config) router() (*debezium.Router, error) {
	var names []string
	for name := range c.Transforms {
		names = append(names, name)
	}
	slices.Sort(names)
	var r *debezium.Router
	for _, name := range names {
		if name == unwrapName {
			continue // TransformsConfig.check's
		}
		t := c.Transforms[name]
		key := "transforms." + name
		switch typ := t["type"]; typ {
		case byLogicalTableRouter:
		default:
			if typ == "" {
				continue // TransformsConfig.check names it
			}
			return nil, fmt.Errorf("config: %s.type: %q: want %s (ExtractNewRecordState is transforms.unwrap)", key, typ, byLogicalTableRouter)
		}
		for k := range t {
			if !slices.Contains(routerOptions, k) {
				return nil, fmt.Errorf("config: %s: unknown option %q (want %s)", key, k, strings.Join(routerOptions, ", "))
			}
		}
		if !c.Sink.caps().Topics {
			return nil, fmt.Errorf("config: %s: ByLogicalTableRouter routes Kafka topics, and sink type %s has none", key, c.Sink.Type)
		}
		if r != nil {
			return nil, fmt.Errorf("config: %s: a second ByLogicalTableRouter; one routes every table", key)
		}
		field := cmp.Or(t["key.field.name"], debezium.DefaultRouterKeyField)
		switch t["key.enforce.uniqueness"] {
		case "", "true":
		case "false":
			field = ""
		default:
			return nil, fmt.Errorf("config: %s.key.enforce.uniqueness: %q: want true or false", key, t["key.enforce.uniqueness"])
		}
		var err error
		if r, err = debezium.NewRouter(t["topic.regex"], t["topic.replacement"], field, t["key.field.regex"], t["key.field.replacement"]); err != nil {
			return nil, fmt.Errorf("config: %s.%w", key, err)
		}
	}
	return r, nil
}

// unwrapFirst reports whether transforms.unwrap runs before the router:
// transforms run in the order the block lists them, as Connect runs
// "transforms: unwrap,route" (a block made in code, without that order,
// runs its transforms by name).
func (c *Config) unwrapFirst() bool {
	order := c.transformOrder
	if len(order) == 0 {
		order = slices.Sorted(maps.Keys(c.Transforms))
	}
	for _, name := range order {
		switch {
		case name == unwrapName:
			return true
		case c.Transforms[name]["type"] == byLogicalTableRouter:
			return false
		}
	}
	return false
}

// routeEncoder wraps enc in the topic router cfg configures, if any
// (checked by validate). With transforms.unwrap, enc is the flattened
// form, and the router sees what the transforms' order gives it.
func routeEncoder(cfg *Config, enc cdc.Encoder) cdc.Encoder {
	r, _ := cfg.router()
	if r == nil {
		return enc
	}
	kc := cfg.Sink.Kafka
	kc.Pipeline = cfg.Name
	re := &debezium.Routed{Inner: enc, Router: r, TopicOf: kc.TopicOf}
	if cfg.Format == formatDebeziumConnect || cfg.Format == formatDebeziumAvro {
		prefix := cfg.Debezium.prefix()
		re.SchemaBase = func(t *cdc.TableInfo) string { return prefix + "." + t.Namespace + "." + t.Name }
	}
	_, flat := enc.(*debezium.Unwrap)
	re.Flattened = flat && cfg.unwrapFirst()
	return re
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
	case formatDebeziumAvro:
		if d.avro == nil {
			return nil, fmt.Errorf("format %s: needs a schema registry (schema_registry.url, or --schema-registry-url)", format)
		}
		enc, _, err := newAvroEncoder(d.avro.registry, d, pipeline, d.avro.topic)
		return enc, err
	}
	return nil, fmt.Errorf("format %q: want %s", format, formatNames)
}

// newAvroEncoder builds debezium-avro with the registry rc; topic names a
// table's topic, which the subjects follow.
func newAvroEncoder(rc registry.Config, d DebeziumConfig, pipeline string, topic func(*cdc.TableInfo) (string, error)) (*debezium.Avro, *registry.Client, error) {
	if err := rc.Validate(); err != nil {
		return nil, nil, err
	}
	reg, err := registry.New(rc)
	if err != nil {
		return nil, nil, err
	}
	strategy := rc.Strategy()
	o := debezium.AvroOptions{
		Registry: reg,
		Subject: func(topic, record string, isKey bool) string {
			return registry.Subject(strategy, topic, record, isKey)
		},
		Topic:       topic,
		SchemaNames: debezium.NameAdjustment(d.SchemaNameAdjustmentMode),
		FieldNames:  debezium.NameAdjustment(d.FieldNameAdjustmentMode),
	}
	if d.ProvideTransactionMetadata {
		o.TransactionTopic = d.prefix() + ".transaction"
	}
	if d.IncludeSchemaChanges {
		o.SchemaChangeTopic = d.prefix() + ".schema-changes"
	}
	if d.HeartbeatIntervalMs > 0 {
		o.HeartbeatTopic = d.heartbeatTopic()
	}
	env := debezium.Envelope{Pipeline: pipeline, Version: version}
	enc, err := debezium.NewAvro(env, d.connectOptions(), o)
	if err != nil {
		return nil, nil, fmt.Errorf("debezium.%w", err)
	}
	return enc, reg, nil
}

// validateAvro checks what format debezium-avro needs, and that its
// settings are not set in vain; with that format it hands the encoder the
// registry and the Kafka sink's topics.
func (c *Config) validateAvro() []error {
	if c.Format == formatDebeziumAvro {
		kc := c.Sink.Kafka
		kc.Pipeline = c.Name
		// Subjects follow the topic a record is written to: the routed
		// one for a routed table, as AvroConverter sees it after the SMT.
		if r, err := c.router(); err == nil && r != nil {
			kc.Route = r.Topic
		}
		c.Debezium.avro = &avroSetup{registry: c.SchemaRegistry, topic: func(t *cdc.TableInfo) (string, error) { return kafka.TopicName(kc, *t) }}
	}
	var errs []error
	for _, m := range []struct{ key, v string }{
		{"schema.name.adjustment.mode", c.Debezium.SchemaNameAdjustmentMode},
		{"field.name.adjustment.mode", c.Debezium.FieldNameAdjustmentMode},
	} {
		if err := debezium.NameAdjustment(m.v).Validate(m.key); err != nil {
			errs = append(errs, fmt.Errorf("config: debezium.%w", err))
		}
	}
	if c.Format != formatDebeziumAvro {
		if c.SchemaRegistry.Enabled() {
			errs = append(errs, fmt.Errorf("config: schema_registry: set, but format is %s: only %s uses a registry", c.Format, formatDebeziumAvro))
		}
		return errs
	}
	if !c.Sink.caps().Topics {
		errs = append(errs, fmt.Errorf("config: format: %s writes Kafka records (the wire format of a schema registry); sink %s takes %s or %s", formatDebeziumAvro, c.Sink.Type, formatDebeziumJSON, formatDebeziumConnect))
	}
	if c.Sink.caps().Topics && c.Sink.Kafka.CloudEvents {
		errs = append(errs, fmt.Errorf("config: sink.kafka.cloudevents: its headers say application/json; not with format %s", formatDebeziumAvro))
	}
	if c.SchemaRegistry.URL == "" {
		errs = append(errs, fmt.Errorf("config: schema_registry.url: required with format %s (or --schema-registry-url on icecdc run)", formatDebeziumAvro))
	} else if err := c.SchemaRegistry.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	return errs
}
