package main

import (
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/shape"
)

// changesConfig is what `changes --config FILE` takes from a daemon's
// configuration, so that changes prints what that daemon's sink receives:
// the format and its debezium settings, the column and row shaping
// (filters, masks, hashes, truncations, message.key.columns,
// skipped.operations), the transforms (unwrap, ByLogicalTableRouter), the
// table's key, columns and branch, and the catalog when no flag names
// one. A flag given on the command line wins over the file.
type changesConfig struct {
	path    string
	cfg     *Config
	shaping *shape.Shaping
}

// applyConfig loads f.config, when set, into f; changed reports whether
// a flag was given.
func (f *changesFlags) applyConfig(changed func(string) bool, log *slog.Logger) (*changesConfig, error) {
	if f.config == "" {
		return nil, nil
	}
	if f.unwrap || len(f.unwrapOpts) > 0 {
		return nil, fmt.Errorf("changes: --unwrap: not with --config, whose transforms block says whether records are flattened")
	}
	cfg, err := loadConfig(f.config)
	if err != nil {
		return nil, fmt.Errorf("changes: --config %w", err)
	}
	take := func(flag string, dst *string, v string) {
		if !changed(flag) && v != "" {
			*dst = v
		}
	}
	take("format", &f.format, cfg.Format)
	take("name", &f.pipeline, cfg.Name)
	take("topic", &f.topic, cfg.Sink.Kafka.Topic)
	d := cfg.Debezium
	for _, o := range []struct {
		flag     string
		dst, own *string
	}{
		{"topic-prefix", &d.TopicPrefix, &f.dbz.TopicPrefix},
		{"time-precision-mode", &d.TimePrecisionMode, &f.dbz.TimePrecisionMode},
		{"decimal-handling-mode", &d.DecimalHandlingMode, &f.dbz.DecimalHandlingMode},
		{"variant-handling-mode", &d.VariantHandlingMode, &f.dbz.VariantHandlingMode},
	} {
		if changed(o.flag) || *o.dst == "" {
			*o.dst = *o.own
		}
	}
	f.dbz = d
	// The daemon's configuration, as changes prints with it.
	cfg.Format, cfg.Name, cfg.Sink.Kafka.Topic, cfg.Debezium = f.format, f.pipeline, f.topic, f.dbz
	if f.format == "table" && len(cfg.Transforms) > 0 {
		return nil, fmt.Errorf("changes: --config %s: its transforms write records of a format; --format table shows the rows (choose %s)", f.config, formatNames)
	}
	if f.format != "table" {
		if errs := cfg.Transforms.check(f.format, &cfg.Sink); len(errs) > 0 {
			return nil, fmt.Errorf("changes: --config %s: %w", f.config, errs[0])
		}
		if o, _ := cfg.Transforms.unwrap(); o != nil && len(o.AddHeaders) > 0 {
			return nil, fmt.Errorf("changes: --config %s: transforms.unwrap.add.headers: changes prints keys and values, which have no headers", f.config)
		}
	}
	if f.o.MetadataPath == "" && !changed("catalog-uri") && !changed("catalog-type") {
		base := sourceOptions(cfg, log)
		f.o.CatalogName, f.o.CatalogType, f.o.CatalogURI, f.o.Warehouse = base.CatalogName, base.CatalogType, base.CatalogURI, base.Warehouse
		f.o.MaxResponseBytes = base.MaxResponseBytes
		props := maps.Clone(base.Props)
		if props == nil {
			props = map[string]string{}
		}
		maps.Copy(props, f.props)
		f.props = props
	}
	if f.o.Table == "" && f.o.MetadataPath == "" && len(cfg.Tables) == 1 && !strings.HasSuffix(cfg.Tables[0].Name, ".*") {
		f.o.Table = cfg.Tables[0].Name
	}
	if t := configTable(cfg, f.o.Table); t != nil {
		if !changed("branch") && t.Branch != "" {
			f.o.Branch = t.Branch
		}
		if !changed("columns") && len(t.Columns) > 0 {
			f.columns = t.Columns
		}
		f.o.KeyFields = t.Key
	}
	keys, _ := cfg.Debezium.keyColumns() // checked by loadConfig
	if k := keyFor(keys, f.o.Table); k != nil {
		if len(f.o.KeyFields) > 0 {
			return nil, fmt.Errorf("changes: --config %s: debezium.message.key.columns: table %s: its key is set by tables[].key too; set one of them", f.config, f.o.Table)
		}
		f.o.KeyFields = k
	}
	sh, _ := cfg.Debezium.shaping() // checked by loadConfig
	return &changesConfig{path: f.config, cfg: cfg, shaping: sh}, nil
}

// configTable is the entry of cfg's tables that names table (itself, or
// its namespace.*); nil for none.
func configTable(cfg *Config, table string) *TableConfig {
	for i, t := range cfg.Tables {
		ns, pattern := strings.CutSuffix(t.Name, ".*")
		if t.Name == table || pattern && strings.HasPrefix(table, ns+".") && !strings.Contains(table[len(ns)+1:], ".") {
			return &cfg.Tables[i]
		}
	}
	return nil
}

// encoder wraps enc in the configuration's transforms, as the daemon
// does: unwrap, then the router (in the order the block lists them).
func (cc *changesConfig) encoder(enc cdc.Encoder) (cdc.Encoder, error) {
	if cc == nil || enc == nil {
		return enc, nil
	}
	enc, err := cc.cfg.Transforms.apply(enc)
	if err != nil {
		return nil, fmt.Errorf("changes: --config %w", err)
	}
	return routeEncoder(cc.cfg, enc), nil
}

// tombstones reports whether the configuration's sink follows each
// delete with a tombstone (Kafka's sink.kafka.tombstones, as a flattened
// stream keeps them): changes prints them where that sink has them.
func (cc *changesConfig) tombstones(enc cdc.Encoder) bool {
	if cc == nil || cc.cfg.Sink.Type != "kafka" || enc == nil {
		return false
	}
	kc := cc.cfg.Sink.Kafka
	unwrapKafka(&kc, enc)
	return kc.Tombstones == nil || *kc.Tombstones
}

// route returns the router's topic function, nil without one: the
// subjects of debezium-avro follow routed topics.
func (cc *changesConfig) route() func(string) string {
	if cc == nil {
		return nil
	}
	if r, _ := cc.cfg.router(); r != nil {
		return r.Topic
	}
	return nil
}

// shaper resolves the shaping for the table of info; nil without any.
func (cc *changesConfig) shaper(info cdc.TableInfo) (cdc.Stage, error) {
	if cc == nil || cc.shaping == nil {
		return nil, nil
	}
	table := info.Namespace + "." + info.Name
	sh, err := cc.shaping.ForTable(table, info.Schema, info.KeyFields, nil)
	if err != nil {
		return nil, fmt.Errorf("changes: --config %s: table %s: debezium.%w", cc.path, table, err)
	}
	return sh, nil
}
