package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cluster"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/source"
)

// runCluster is `icecdc run` in cluster mode: no state file; the member
// follows the tables the group assigns it, with checkpoints in the Kafka
// checkpoint topic.
func runCluster(ctx context.Context, cfg *Config, out io.Writer, log *slog.Logger, reg *prometheus.Registry, metrics *cdc.Metrics, tracer trace.TracerProvider) (err error) {
	health := &cdc.Health{Log: log, Sink: cfg.Sink.Type}
	eo := exactlyOnce(cfg)
	enc, err := newEncoder(cfg.Format, cfg.Debezium, cfg.Name)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if enc, err = cfg.transforms().apply(enc); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	enc = routeEncoder(cfg, enc)
	var shared cdc.Sink
	if !eo {
		if shared, err = buildSink(cfg, out, log, metrics, enc); err != nil {
			return err
		}
		defer closeSink(shared, &err)
	}
	kc := cfg.Cluster.Kafka
	if cfg.Sink.caps().Topics { // the sink's Kafka is the cluster's
		if kc, err = kafkaSinkConfig(cfg, enc); err != nil {
			return err
		}
	}
	ready := make(chan struct{})
	var member *cluster.Member
	if cfg.HTTP.Listen != "" {
		srv, err := serveHTTP(cfg.HTTP, log, reg, ready, health, func() (any, error) {
			if member == nil {
				return clusterStatus{}, nil
			}
			return clusterStatus{Member: member.Name(), Generation: member.Generation(), Tables: member.Owned(), Health: health.Tables()}, nil
		}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "on-demand snapshots are not available in cluster mode yet: the table's owner is not known to this member", http.StatusNotImplemented)
		}))
		if err != nil {
			return err
		}
		defer srv.stop()
	}
	ts, err := waitForTableSources(ctx, cfg, log)
	if err != nil || ts == nil {
		return err
	}
	// One catalog for every table the member comes to own, closed when
	// the member has stopped them all.
	cat := openCatalog(cfg, log)
	defer cat.Close()
	notifier, closeNotifier, err := newNotifier(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer closeNotifier()
	targets := &memberTargets{byTable: map[string]*cdc.Pipeline{}}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go cdc.WatchCatalog(wctx, cat, cfg.Poll.Interval, cfg.Poll.MaxInterval, health, log)
	tables := clusterTables(ts, cat)
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.spec.Name
	}
	sigs, err := clusterSignals(cfg, log, targets, names, notifier)
	if err != nil {
		return err
	}
	// The member that owns partition 0 writes the heartbeats.
	gate := &heartbeatGate{}
	stopHeartbeats, err := startGatedHeartbeats(ctx, cfg, enc, shared, log, gate)
	if err != nil {
		return err
	}
	defer stopHeartbeats() // before the shared sink closes: a webhook ping uses it
	member, err = cluster.New(cluster.Options{
		Pipeline: cfg.Name, Version: version, Fingerprint: configFingerprint(cfg),
		Config: cfg.Cluster, Kafka: kc, ExactlyOnce: eo, Sink: shared, Tables: tables,
		NewPipeline: func(spec cdc.TableSpec, sink cdc.Sink, store cdc.Store) *cdc.Pipeline {
			p := &cdc.Pipeline{
				Name: cfg.Name, Tables: []cdc.TableSpec{spec}, Sink: sink, Store: store,
				Encoder:   enc,
				Poll:      cfg.Poll.Interval,
				MaxPoll:   cfg.Poll.MaxInterval,
				ChunkSize: cfg.Chunk, ChunkBytes: int(cfg.ChunkBytes),
				Log:           log,
				Metrics:       metrics,
				Health:        health,
				HoldInterval:  cfg.HoldInterval,
				SchemaChanges: cfg.Debezium.IncludeSchemaChanges,
				Tracer:        tracer,
				RowFilters:    rowfilter.Language{},
			}
			p.OnHistoryLoss, _ = cdc.ParseHistoryLossPolicy(cfg.OnHistoryLoss)
			if notifier != nil {
				p.Notify = notifier.Notice
			}
			targets.set(spec.Name, p)
			if sh, _ := cfg.Debezium.shaping(); sh != nil {
				p.Shaping = sh
			}
			return p
		},
		Log: log, Metrics: cluster.NewMetrics(reg), Ready: ready,
		Released: func(table string) { metrics.Forget(table); health.Forget(table) },
		Assigned: func(parts []int32) {
			if slices.Contains(parts, 0) {
				gate.set(true)
			}
			if sigs != nil {
				sigs.Assigned(parts)
			}
		},
		Revoked: func(parts []int32, lost bool) {
			if slices.Contains(parts, 0) {
				gate.set(false)
			}
			if sigs != nil {
				sigs.Revoked(parts, lost)
			}
		},
	})
	if err != nil {
		return err
	}
	log.Info("icecdc started in cluster mode", "pipeline", cfg.Name, "group", cfg.Cluster.Group, "member", member.Name(),
		"tables", len(tables), "sink", cfg.Sink.Type, "version", version)
	if sigs != nil {
		sigs.Marks = member
		sctx, stopSignals := context.WithCancel(ctx)
		now := make(chan struct{})
		close(now) // the channel reads for the partitions as they come
		waitSignals := runSignals(sctx, log, now, sigs.Run)
		defer func() { stopSignals(); waitSignals() }()
	}
	err = member.Run(ctx)
	log.Info("icecdc stopped", "pipeline", cfg.Name)
	return err
}

// clusterTables are the member's tables: every table of the pipeline, of
// which it follows those of its partitions. Each Open reads its options
// from ts when the table is taken over instead of holding a copy of them:
// the copies took 208 bytes a table more, 21 MB on each member of a
// pipeline of 100,000 tables.
func clusterTables(ts []tableSource, cat *source.Catalog) []cluster.Table {
	tables := make([]cluster.Table, len(ts))
	for i, t := range ts {
		tables[i] = cluster.Table{TableSpec: t.spec, Open: func() (cdc.Source, error) {
			o := ts[i].opts
			o.Catalog = cat
			return source.New(o)
		}}
	}
	return tables
}

// clusterStatus is /status in cluster mode: this member's tables.
type clusterStatus struct {
	Member     string            `json:"member"`
	Generation int32             `json:"generation"`
	Tables     []string          `json:"tables"`
	Health     []cdc.TableHealth `json:"health,omitempty"`
}

// configFingerprint digests what every member of a cluster must share:
// the pipeline, its tables and where and how events and checkpoints go.
func configFingerprint(cfg *Config) string {
	// Only values, never pointers: the fingerprint must be the same in
	// every process that reads the same file.
	parts := []string{cfg.Name, cfg.Format, fmt.Sprint(cfg.Chunk), fmt.Sprint(cfg.ChunkBytes), cfg.Sink.Type,
		cfg.Cluster.Group, cfg.Cluster.Topic, fmt.Sprint(cfg.Cluster.Partitions),
		cfg.Catalog.Type, cfg.Catalog.Name}
	d := cfg.Debezium
	parts = append(parts, d.TopicPrefix, d.TimePrecisionMode, d.DecimalHandlingMode, fmt.Sprint(d.ProvideTransactionMetadata), fmt.Sprint(d.IncludeSchemaChanges),
		fmt.Sprint(cfg.NetMaxRows))
	for _, t := range cfg.Tables {
		parts = append(parts, t.Name, t.Metadata, t.Branch, t.Start, strings.Join(t.Key, ","),
			strings.Join(t.Columns, ","), fmt.Sprint(t.Net), fmt.Sprint(t.Hold))
	}
	if k, _ := cfg.Sink.kind(); k.Fingerprint != nil {
		parts = append(parts, k.Fingerprint()...)
	}
	parts = append(parts, cfg.Cluster.Kafka.WithDefaults().CheckpointTopic)
	// Settings added since members first compared fingerprints count only
	// when they differ from their default, so that a configuration that
	// leaves them out keeps the fingerprint earlier versions compute.
	if m := d.VariantHandlingMode; m != "" && m != "string" {
		parts = append(parts, "variant.handling.mode="+m)
	}
	parts = append(parts, cfg.Transforms.fingerprint()...)
	// The order of two or more transforms is part of what they write
	// (route,unwrap and unwrap,route name the value schema differently).
	if len(cfg.transformOrder) > 1 {
		parts = append(parts, "transforms.order="+strings.Join(cfg.transformOrder, ","))
	}
	if m := d.SchemaNameAdjustmentMode; m != "" && m != "none" {
		parts = append(parts, "schema.name.adjustment.mode="+m)
	}
	if m := d.FieldNameAdjustmentMode; m != "" && m != "none" {
		parts = append(parts, "field.name.adjustment.mode="+m)
	}
	if r := cfg.SchemaRegistry; r.Enabled() {
		parts = append(parts, "schema_registry="+redact.URL(r.URL)+" "+r.Strategy())
	}
	return cluster.Fingerprint(parts...)
}

// memberTargets are the pipelines of the tables a cluster member owns,
// for signals: a table it does not own (or no longer: its pipeline
// stopped) is signals.ErrNotOwned.
type memberTargets struct {
	mu      sync.Mutex
	byTable map[string]*cdc.Pipeline
}

func (m *memberTargets) set(table string, p *cdc.Pipeline) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byTable[table] = p
}

func (m *memberTargets) get(table string) *cdc.Pipeline {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byTable[table]
}

func (m *memberTargets) Snapshot(ctx context.Context, table string, req cdc.SnapshotRequest) (cdc.SnapshotInfo, error) {
	p := m.get(table)
	if p == nil {
		return cdc.SnapshotInfo{}, signals.ErrNotOwned
	}
	si, err := p.Snapshot(ctx, table, req)
	// A table this member follows that has nothing to read refuses the
	// request, as in one process; any other table not served is starting,
	// stopped or moving: its owner (this member once it serves it, or the
	// next) acts on the signal.
	if errors.Is(err, cdc.ErrNotServing) && !errors.Is(err, cdc.ErrNothingToRead) {
		return si, fmt.Errorf("%w: %v", signals.ErrNotOwned, err)
	}
	return si, err
}

func (m *memberTargets) ControlSnapshot(table string, c cdc.SnapshotControl) error {
	p := m.get(table)
	if p == nil {
		return signals.ErrNotOwned
	}
	err := p.ControlSnapshot(table, c)
	if errors.Is(err, cdc.ErrNotServing) {
		return fmt.Errorf("%w: %v", signals.ErrNotOwned, err)
	}
	return err
}
