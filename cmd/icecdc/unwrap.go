package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// TransformsConfig is Debezium Server's transforms block, by transform
// name: icecdc has one, unwrap (Debezium's ExtractNewRecordState), whose
// options keep Debezium's names.
type TransformsConfig map[string]map[string]string

// unwrapName is the one transform icecdc has.
const unwrapName = "unwrap"

// unwrapFormats are the formats with a flattened form.
var unwrapFormats = []string{formatDebeziumJSON, formatDebeziumConnect, formatDebeziumAvro}

// unwrap returns the unwrap options, or nil without the transform.
func (t TransformsConfig) unwrap() (*debezium.UnwrapOptions, error) {
	kv, ok := t[unwrapName]
	if !ok {
		return nil, nil
	}
	o, err := debezium.ParseUnwrapOptions(kv)
	if err != nil {
		return nil, fmt.Errorf("%s.%w", unwrapName, err)
	}
	return &o, nil
}

// check validates the block against the format and the sink; every
// error is one line naming its key under transforms.
func (t TransformsConfig) check(format string, sink *SinkConfig) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(t)) {
		if name != unwrapName && t[name]["type"] == "" {
			errs = append(errs, fmt.Errorf("config: transforms.%s: unknown transform; icecdc has %s (io.debezium.transforms.ExtractNewRecordState)", name, unwrapName))
		}
	}
	o, err := t.unwrap()
	if err != nil {
		return append(errs, fmt.Errorf("config: transforms.%w", err))
	}
	if o == nil {
		return errs
	}
	if !slices.Contains(unwrapFormats, format) {
		errs = append(errs, fmt.Errorf("config: transforms.unwrap: format %s has no flattened form (%s have)", format, strings.Join(unwrapFormats, ", ")))
	}
	if slices.Contains(unwrapFormats, format) {
		// add.fields names fields of the format's envelope; debezium-avro's
		// are the Connect format's, which needs no registry to check them.
		f := format
		if f == formatDebeziumAvro {
			f = formatDebeziumConnect
		}
		if enc, err := newEncoder(f, DebeziumConfig{}, ""); err == nil {
			if _, err := withUnwrap(enc, o); err != nil {
				errs = append(errs, fmt.Errorf("config: %w", err))
			}
		}
	}
	if len(o.AddHeaders) > 0 && !sink.caps().Topics {
		errs = append(errs, fmt.Errorf("config: transforms.unwrap.add.headers: sink %s has no record headers (only %s has)", sink.Type, sink.kindNames(func(c sinkkind.Caps) bool { return c.Topics })))
	}
	if o.DeleteHandling == debezium.DeleteDrop && sink.caps().Rows {
		errs = append(errs, fmt.Errorf("config: transforms.unwrap.delete.tombstone.handling.mode: drop: sink %s keeps rows and would never delete one", sink.Type))
	}
	return errs
}

// transforms returns the transforms the events go through: the block,
// with the flattened form for a sink that keeps rows when the block has
// none (such a sink deletes by the event's op, not by a value).
func (c *Config) transforms() TransformsConfig {
	if !c.Sink.caps().Rows || c.Transforms[unwrapName] != nil {
		return c.Transforms
	}
	t := maps.Clone(c.Transforms)
	if t == nil {
		t = TransformsConfig{}
	}
	t[unwrapName] = map[string]string{"delete.tombstone.handling.mode": "delete-to-tombstone"}
	return t
}

// withUnwrap wraps enc in the flattened form when opts is set.
func withUnwrap(enc cdc.Encoder, opts *debezium.UnwrapOptions) (cdc.Encoder, error) {
	if opts == nil {
		return enc, nil
	}
	u, err := debezium.NewUnwrap(enc, *opts)
	if err != nil {
		return nil, fmt.Errorf("transforms.unwrap.%w", err)
	}
	return u, nil
}

// eventEncoder builds the configured format's encoder, flattened when
// transforms.unwrap is set.
func eventEncoder(cfg *Config) (cdc.Encoder, error) {
	enc, err := newEncoder(cfg.Format, cfg.Debezium, cfg.Name)
	if err != nil {
		return nil, err
	}
	return cfg.transforms().apply(enc)
}

// apply wraps enc in the transforms: the flattened form with unwrap.
func (t TransformsConfig) apply(enc cdc.Encoder) (cdc.Encoder, error) {
	o, err := t.unwrap()
	if err != nil {
		return nil, fmt.Errorf("transforms.%w", err)
	}
	return withUnwrap(enc, o)
}

// unwrapKafka sets the Kafka sink's tombstones as a flattened stream
// keeps them: only rewrite-with-tombstone keeps the tombstone after a
// delete (with the op header when add.headers names op); the other modes
// drop it.
func unwrapKafka(kc *kafka.Config, enc cdc.Encoder) {
	u, ok := debezium.Unrouted(enc).(*debezium.Unwrap)
	if !ok {
		return
	}
	on := kc.Tombstones == nil || *kc.Tombstones
	on = on && u.Options().DeleteHandling.KeepsTombstones()
	kc.Tombstones = &on
	if on {
		kc.TombstoneHeaders = u.TombstoneHeaders()
	}
}

// fingerprint is the block's part of the cluster's configuration
// fingerprint: empty without transforms.
func (t TransformsConfig) fingerprint() []string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(t)) {
		for _, k := range slices.Sorted(maps.Keys(t[name])) {
			parts = append(parts, "transforms."+name+"."+k+"="+t[name][k])
		}
	}
	return parts
}

// unwrapFlag is --unwrap-option KEY=VALUE, repeatable.
type unwrapFlag map[string]string

func (u unwrapFlag) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(u)) {
		parts = append(parts, k+"="+u[k])
	}
	return strings.Join(parts, ",")
}

func (u unwrapFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want KEY=VALUE", v)
	}
	u[strings.TrimSpace(k)] = val
	return nil
}

func (u unwrapFlag) Type() string { return "KEY=VALUE" }
