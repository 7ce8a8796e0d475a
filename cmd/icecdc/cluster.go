package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/icecdc/icecdc/catalogwatch"
	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/cluster"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/signals"
	"github.com/icecdc/icecdc/snapreq"
	"github.com/icecdc/icecdc/source"
)

// runCluster is `icecdc run` in cluster mode: no state file; the member
// follows the tables the group assigns it, with checkpoints in the Kafka
// checkpoint topic.
func runCluster(ctx context.Context, d *runBase, out io.Writer) (err error) {
	cfg, log := d.cfg, d.log
	m := &memberRun{runBase: d, health: &health.Health{Log: log, Sink: cfg.Sink.Type},
		targets: &memberTargets{byTable: map[string]*cdc.Pipeline{}}, gate: &heartbeatGate{}}
	eo := exactlyOnce(cfg)
	if m.enc, err = runEncoder(cfg); err != nil {
		return err
	}
	if !eo {
		if m.shared, err = buildSink(cfg, out, log, d.metrics, m.enc); err != nil {
			return err
		}
		defer closeSink(m.shared, &err)
	}
	kc := cfg.Cluster.Kafka
	if cfg.Sink.caps().Topics { // the sink's Kafka is the cluster's
		if kc, err = kafkaSinkConfig(cfg, m.enc); err != nil {
			return err
		}
	}
	ready := make(chan struct{})
	if cfg.HTTP.Listen != "" {
		srv, err := serveHTTP(cfg.HTTP, log, endpoints{reg: d.reg, ready: ready, health: m.health, status: m.status,
			snapshot: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "on-demand snapshots are not available in cluster mode yet: the table's owner is not known to this member", http.StatusNotImplemented)
			})})
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
	m.notifier = notifier
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go catalogwatch.WatchCatalog(wctx, cat, cfg.Poll.Interval, cfg.Poll.MaxInterval, m.health, log)
	tables := clusterTables(ts, cat)
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.spec.Name
	}
	if m.sigs, err = clusterSignals(cfg, log, signalTargets{target: m.targets, tables: names, notify: m.notifier}); err != nil {
		return err
	}
	// The member that owns partition 0 writes the heartbeats.
	stopHeartbeats, err := startGatedHeartbeats(ctx, cfg, m.enc, m.shared, log, m.gate)
	if err != nil {
		return err
	}
	defer stopHeartbeats() // before the shared sink closes: a webhook ping uses it
	m.member, err = cluster.New(cluster.Options{
		Pipeline: cfg.Name, Version: version, Fingerprint: configFingerprint(cfg),
		Config: cfg.Cluster, Kafka: kc, ExactlyOnce: eo, Sink: m.shared, Tables: tables,
		NewPipeline: m.newPipeline,
		Log:         log, Metrics: cluster.NewMetrics(d.reg), Ready: ready,
		Released: m.released, Assigned: m.assigned, Revoked: m.revoked,
	})
	if err != nil {
		return err
	}
	log.Info("icecdc started in cluster mode", "pipeline", cfg.Name, "group", cfg.Cluster.Group, "member", m.member.Name(),
		"tables", len(tables), "sink", cfg.Sink.Type, "version", version)
	if m.sigs != nil {
		m.sigs.Marks = m.member
		sctx, stopSignals := context.WithCancel(ctx)
		now := make(chan struct{})
		close(now) // the channel reads for the partitions as they come
		waitSignals := runSignals(sctx, log, now, m.sigs.Run)
		defer func() { stopSignals(); waitSignals() }()
	}
	err = m.member.Run(ctx)
	log.Info("icecdc stopped", "pipeline", cfg.Name)
	return err
}

// memberRun is `icecdc run` in cluster mode, as runCluster builds it: what
// the member's callbacks use.
type memberRun struct {
	*runBase
	health   *health.Health
	enc      cdc.Encoder
	shared   cdc.Sink // the sink of every table, but with exactly-once delivery
	member   *cluster.Member
	targets  *memberTargets // the pipelines of the tables owned, for signals
	gate     *heartbeatGate // open while the member owns partition 0
	sigs     *signals.ClusterChannel
	notifier *signals.Notifier
}

// status is /status in cluster mode: this member's tables.
func (m *memberRun) status() (any, error) {
	if m.member == nil {
		return clusterStatus{}, nil
	}
	return clusterStatus{Member: m.member.Name(), Generation: m.member.Generation(), Tables: m.member.Owned(), Health: m.health.Tables()}, nil
}

// newPipeline is the pipeline of a table the member took over.
func (m *memberRun) newPipeline(spec cdc.TableSpec, sink cdc.Sink, store cdc.Store) *cdc.Pipeline {
	p := m.pipeline(m.enc, m.health)
	p.Tables, p.Sink, p.Store = []cdc.TableSpec{spec}, sink, store
	if m.notifier != nil {
		p.Notify = m.notifier.Notice
	}
	m.targets.set(spec.Name, p)
	return p
}

// released forgets the metrics and health of a table the member gave up.
func (m *memberRun) released(table string) {
	m.metrics.Forget(table)
	m.health.Forget(table)
}

// assigned opens the heartbeats' gate with partition 0, and hands the
// partitions to the signal channel.
func (m *memberRun) assigned(parts []int32) {
	if slices.Contains(parts, 0) {
		m.gate.set(true)
	}
	if m.sigs != nil {
		m.sigs.Assigned(parts)
	}
}

// revoked closes the heartbeats' gate with partition 0, and takes the
// partitions from the signal channel.
func (m *memberRun) revoked(parts []int32, lost bool) {
	if slices.Contains(parts, 0) {
		m.gate.set(false)
	}
	if m.sigs != nil {
		m.sigs.Revoked(parts, lost)
	}
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
	Member     string               `json:"member"`
	Generation int32                `json:"generation"`
	Tables     []string             `json:"tables"`
	Health     []health.TableHealth `json:"health,omitempty"`
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

func (m *memberTargets) Snapshot(ctx context.Context, table string, req snapreq.SnapshotRequest) (cdc.SnapshotInfo, error) {
	p := m.get(table)
	if p == nil {
		return cdc.SnapshotInfo{}, signals.ErrNotOwned
	}
	si, err := p.Snapshot(ctx, table, req)
	// A table this member follows that has nothing to read refuses the
	// request, as in one process; any other table not served is starting,
	// stopped or moving: its owner (this member once it serves it, or the
	// next) acts on the signal.
	if errors.Is(err, snapreq.ErrNotServing) && !errors.Is(err, snapreq.ErrNothingToRead) {
		return si, fmt.Errorf("%w: %v", signals.ErrNotOwned, err)
	}
	return si, err
}

func (m *memberTargets) ControlSnapshot(table string, c snapreq.SnapshotControl) error {
	p := m.get(table)
	if p == nil {
		return signals.ErrNotOwned
	}
	err := p.ControlSnapshot(table, c)
	if errors.Is(err, snapreq.ErrNotServing) {
		return fmt.Errorf("%w: %v", signals.ErrNotOwned, err)
	}
	return err
}
