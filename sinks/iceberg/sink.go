package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
	"github.com/icecdc/icecdc/source"
)

// CheckpointPrefix starts the snapshot summary property that holds a
// source table's checkpoint: CheckpointPrefix + pipeline + "/" +
// namespace.table.
const CheckpointPrefix = "icecdc.checkpoint."

// CheckpointKey is the summary property of a source table's checkpoint.
func CheckpointKey(pipeline string, t cdc.TableInfo) string {
	return CheckpointPrefix + pipeline + "/" + t.Namespace + "." + t.Name
}

// Sink writes each source table's changes to its target table (see the
// package comment).
type Sink struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	cat     catalog.Catalog
	targets map[string]*target // by source table, namespace.name
	closed  bool

	stop chan struct{}
	done chan struct{}

	// beforeCommit, when set (tests), runs after a commit's data files are
	// written and before the catalog is asked to commit them.
	beforeCommit func(t *target) error
	// retried counts the commits made again after a conflict.
	retried atomic.Int64
}

var (
	_ cdc.CheckpointSink   = (*Sink)(nil)
	_ cdc.NonRetainingSink = (*Sink)(nil)
)

// RetainsNoBatch implements cdc.NonRetainingSink: Write copies every value
// into its builders.
func (*Sink) RetainsNoBatch() {}

// target is one source table's target table and its buffered rows.
type target struct {
	mu   sync.Mutex
	name string // the target's name, namespace.table
	key  string // the checkpoint's summary property
	tbl  *table.Table
	lay  *layout
	recs []arrow.RecordBatch
	rows int
	// recBytes and recRows are the bytes and rows of recs.
	recBytes, recRows int64
	since             time.Time // when the oldest buffered row came
	// pending is the checkpoint of the last batch buffered.
	pending *cdc.Checkpoint
	// committed says the target holds a checkpoint of the table: until it
	// does, a batch is committed before Write returns, so that the
	// pipeline's own store never runs ahead of a target that would send
	// it back to the configured start.
	committed bool
	// unsettled: a commit's outcome is unknown; the next one first reads
	// the target to learn whether it landed.
	unsettled bool
	commits   int
}

// New returns a sink writing to the catalog c names.
func New(c Config) (*Sink, error) {
	c = c.WithDefaults()
	if errs := c.Check(); len(errs) > 0 {
		return nil, fmt.Errorf("iceberg sink: %w", errors.Join(errs...))
	}
	s := &Sink{cfg: c, log: c.Logger, targets: map[string]*target{}, stop: make(chan struct{}), done: make(chan struct{})}
	go s.flushLoop()
	return s, nil
}

// catalog opens the catalog on first use.
func (s *Sink) catalog(ctx context.Context) (catalog.Catalog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cat != nil {
		return s.cat, nil
	}
	cat, err := source.OpenCatalog(ctx, s.cfg.catalogOptions())
	if err != nil {
		return nil, err
	}
	s.cat = cat
	return cat, nil
}

// target returns ti's target, loading the table, or creating it with the
// shape of source schema src (the schema of the events, after masks and
// column filters); with src nil, a missing table is (nil, nil).
func (s *Sink) target(ctx context.Context, ti cdc.TableInfo, src *iceberg.Schema) (*target, error) {
	key := ti.Namespace + "." + ti.Name
	s.mu.Lock()
	t := s.targets[key]
	s.mu.Unlock()
	if t != nil {
		return t, nil
	}
	name := sinkkind.ExpandName(s.cfg.Table, &ti, s.cfg.Pipeline)
	cat, err := s.catalog(ctx)
	if err != nil {
		return nil, fmt.Errorf("iceberg sink: target %s: %w", name, err)
	}
	tbl, err := s.openTarget(ctx, cat, name, src)
	if err != nil {
		return nil, fmt.Errorf("iceberg sink: target %s: %w", name, err)
	}
	if tbl == nil {
		return nil, nil
	}
	if err := checkMeta(tbl.Schema()); err != nil {
		return nil, cdc.Permanent(fmt.Errorf("iceberg sink: target %s: %w", name, err))
	}
	if allowed := s.cfg.PipelineCatalog.AllowedLocations; len(allowed) > 0 {
		in, err := source.Within(tbl.Location(), allowed)
		if err == nil && !in {
			err = errors.New("outside allowed_locations")
		}
		if err != nil {
			return nil, cdc.Permanent(fmt.Errorf("iceberg sink: target %s: location %s: %w", name, tbl.Location(), err))
		}
	}
	t = &target{name: name, key: CheckpointKey(s.cfg.Pipeline, ti), tbl: tbl}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.targets[key]; old != nil {
		return old, nil
	}
	s.targets[key] = t
	return t, nil
}

// Restore implements cdc.CheckpointSink: the checkpoint of the target's
// latest snapshot that holds one for the table. Rows buffered and not
// committed are dropped: the pipeline delivers them again from here.
func (s *Sink) Restore(ctx context.Context, pipeline string, ti cdc.TableInfo) (cdc.Checkpoint, bool, error) {
	// Not created here: ti.Schema is the table's, before masks and column
	// filters; the first Write creates it with the events' schema.
	t, err := s.target(ctx, ti, nil)
	if err != nil || t == nil {
		return cdc.Checkpoint{}, false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drop()
	if err := t.tbl.Refresh(ctx); err != nil {
		return cdc.Checkpoint{}, false, fmt.Errorf("iceberg sink: target %s: refresh: %w", t.name, err)
	}
	t.unsettled = false
	cp, found, err := lastCheckpoint(t.tbl, t.key)
	if err != nil {
		return cdc.Checkpoint{}, false, cdc.Permanent(fmt.Errorf("iceberg sink: target %s: %w", t.name, err))
	}
	t.committed = found
	return cp, found, nil
}

// lastCheckpoint walks the target's snapshots from the current one back
// to the latest that holds property key (other writers' snapshots hold
// none).
func lastCheckpoint(tbl *table.Table, key string) (cdc.Checkpoint, bool, error) {
	meta := tbl.Metadata()
	snap := meta.CurrentSnapshot()
	for snap != nil {
		if snap.Summary != nil {
			if v, ok := snap.Summary.Properties[key]; ok {
				var cp cdc.Checkpoint
				if err := json.Unmarshal([]byte(v), &cp); err != nil {
					return cdc.Checkpoint{}, false, fmt.Errorf("snapshot %d: property %s: %w", snap.SnapshotID, key, err)
				}
				return cp, true, nil
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return cdc.Checkpoint{}, false, nil
}

// drop forgets the buffered rows.
func (t *target) drop() {
	for _, r := range t.recs {
		r.Release()
	}
	t.recs, t.rows, t.recBytes, t.recRows, t.pending = nil, 0, 0, 0, nil
	if t.lay != nil {
		t.lay.rb.Release()
		t.lay = nil // remade from the table's schema on the next row
	}
}

// Write buffers b's rows, and commits them with b's checkpoint when the
// table's buffer is due (Config.CommitInterval, CommitBytes) or the
// target holds no checkpoint of the table yet.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	t, err := s.target(ctx, b.Table, b.Table.Schema)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(b.Messages) > 0 {
		if err := s.buffer(ctx, t, b); err != nil {
			t.drop()
			return err
		}
	}
	cp := b.Checkpoint
	t.pending = &cp
	if t.rows > 0 && (!t.committed || t.size() >= s.cfg.CommitBytes || time.Since(t.since) >= s.cfg.CommitInterval) {
		return s.commit(ctx, t)
	}
	return nil
}

// buffer decodes b's messages into t's builders.
func (s *Sink) buffer(ctx context.Context, t *target, b *cdc.Batch) error {
	if err := s.follow(ctx, t, b.Table.Schema); err != nil {
		return err
	}
	if t.rows == 0 {
		t.since = time.Now()
	}
	m := rowMeta{seq: b.Snapshot.SequenceNumber, snapshot: b.Snapshot.ID, tsMicros: b.Snapshot.TimestampMs * 1000}
	for i := range b.Messages {
		msg := &b.Messages[i]
		d := decoder{b: msg.Value}
		rowID, beforeID := d.varint(), d.varint()
		before, after := d.image(), d.image()
		if d.err == nil && len(d.b) != 0 {
			d.err = fmt.Errorf("%d bytes left over", len(d.b))
		}
		if d.err != nil {
			return cdc.Permanent(fmt.Errorf("iceberg sink: target %s: event %s: decode: %w", t.name, msg.ID, d.err))
		}
		types, images, err := changeRows(msg.Op, before, after)
		if err != nil {
			return cdc.Permanent(fmt.Errorf("iceberg sink: target %s: event %s: %w", t.name, msg.ID, err))
		}
		m.eventID = msg.ID
		for k, ct := range types {
			m.changeType, m.rowID = ct, rowID
			if ct == UpdateBefore {
				m.rowID = beforeID
			}
			if err := t.lay.add(images[k], &m); err != nil {
				return cdc.Permanent(fmt.Errorf("iceberg sink: target %s: event %s: %w", t.name, msg.ID, err))
			}
			t.rows++
		}
		if t.lay.rb.Field(0).Len() >= recordRows {
			t.seal()
		}
	}
	return nil
}

// seal turns the builders' rows into a record batch, and counts its
// bytes.
func (t *target) seal() {
	rec := t.lay.rb.NewRecordBatch()
	t.recs = append(t.recs, rec)
	for _, c := range rec.Columns() {
		t.recBytes += dataSize(c.Data())
	}
	t.recRows += rec.NumRows()
}

// dataSize is the bytes of d's buffers and its children's.
func dataSize(d arrow.ArrayData) int64 {
	n := int64(0)
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataSize(c)
	}
	return n
}

// size is about the bytes the buffered rows take: those of the record
// batches, and the builders' rows at the batches' bytes per row.
func (t *target) size() int64 {
	per := int64(256) // before the first batch: a guess
	if t.recRows > 0 {
		per = t.recBytes / t.recRows
	}
	n := int64(0)
	if t.lay != nil {
		n = int64(t.lay.rb.Field(0).Len())
	}
	return t.recBytes + n*per
}

// recordRows is the most rows of one buffered record batch.
const recordRows = 8192

// follow makes the target take rows of source schema src: a column the
// source added is added to the target, a widened type widened (the rows
// buffered are committed first); a change it cannot follow stops the
// table.
func (s *Sink) follow(ctx context.Context, t *target, src *iceberg.Schema) error {
	if t.lay != nil && t.lay.src == src {
		return nil
	}
	change, err := evolution(t.tbl.Schema(), src)
	if err != nil {
		return cdc.Permanent(fmt.Errorf("iceberg sink: target %s: %w", t.name, err))
	}
	if change {
		if t.rows > 0 {
			if err := s.commit(ctx, t); err != nil {
				return err
			}
		}
		want, err := targetSchema(src)
		if err != nil {
			return cdc.Permanent(fmt.Errorf("iceberg sink: target %s: %w", t.name, err))
		}
		tx := t.tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).UnionByNameWith(want).Commit(); err != nil {
			return cdc.Permanent(fmt.Errorf("iceberg sink: target %s: evolve the schema: %w", t.name, err))
		}
		tbl, err := tx.Commit(ctx)
		if err != nil {
			return fmt.Errorf("iceberg sink: target %s: commit the schema change: %w", t.name, err)
		}
		t.tbl = tbl
		s.log.Info("iceberg sink: target schema follows the source", "target", t.name, "schema_id", tbl.Schema().ID)
	}
	if t.rows > 0 || len(t.recs) > 0 {
		// Rows of the previous source schema are buffered: the builders
		// keep the target's columns, only the mapping changes.
		old := t.lay
		lay, err := newLayout(t.tbl.Schema(), src)
		if err != nil {
			return cdc.Permanent(fmt.Errorf("iceberg sink: target %s: %w", t.name, err))
		}
		lay.rb.Release()
		lay.rb, lay.as = old.rb, old.as
		t.lay = lay
		return nil
	}
	if t.lay != nil {
		t.lay.rb.Release()
	}
	if t.lay, err = newLayout(t.tbl.Schema(), src); err != nil {
		return cdc.Permanent(fmt.Errorf("iceberg sink: target %s: %w", t.name, err))
	}
	return nil
}

// commit appends t's buffered rows to the target in one snapshot whose
// summary holds the pending checkpoint. A conflict with another writer
// is retried by iceberg-go on the refreshed table (commit.retry.*
// properties); an error of unknown outcome is settled by reading the
// target before anything is committed again.
func (s *Sink) commit(ctx context.Context, t *target) error {
	if t.rows == 0 || t.pending == nil {
		return nil
	}
	v, err := json.Marshal(t.pending)
	if err != nil {
		return fmt.Errorf("iceberg sink: target %s: encode checkpoint: %w", t.name, err)
	}
	if t.unsettled {
		landed, err := s.settle(ctx, t, string(v))
		if err != nil {
			return err
		}
		if landed {
			t.drop()
			return nil
		}
	}
	if n := t.lay.rb.Field(0).Len(); n > 0 {
		t.seal()
	}
	for attempt := 1; ; attempt++ {
		tbl, err := s.attempt(ctx, t, string(v))
		if err == nil {
			t.tbl, t.committed = tbl, true
			t.commits++
			t.drop()
			return nil
		}
		err = fmt.Errorf("iceberg sink: target %s: commit %s: %w", t.name, t.pending, err)
		// Another writer's commit (a conflict), or an answer lost: the
		// target, read again, says whether this one landed. If not, it is
		// made again on the new head; nothing is overwritten.
		landed, serr := s.settle(ctx, t, string(v))
		switch {
		case serr != nil:
			t.unsettled = true
			return errors.Join(err, serr)
		case landed:
			s.log.Info("iceberg sink: commit returned an error, but its checkpoint shows it landed", "target", t.name, "err", err)
			t.drop()
			return nil
		case attempt >= commitAttempts || ctx.Err() != nil:
			return err
		}
		s.retried.Add(1)
		s.log.Debug("iceberg sink: commit retried on the refreshed table", "target", t.name, "attempt", attempt, "err", err)
	}
}

// commitAttempts bounds the commits tried for one buffer in a Write.
const commitAttempts = 5

// attempt writes the buffered rows' data files and commits them on the
// table as last read.
func (s *Sink) attempt(ctx context.Context, t *target, v string) (*table.Table, error) {
	rdr, err := array.NewRecordReader(t.lay.as, t.recs)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	tx := t.tbl.NewTransaction()
	if err := tx.Append(ctx, rdr, iceberg.Properties{t.key: v}); err != nil {
		return nil, fmt.Errorf("write data files: %w", err)
	}
	if s.beforeCommit != nil {
		if err := s.beforeCommit(t); err != nil {
			return nil, err
		}
	}
	return tx.Commit(ctx)
}

// settle reads the target to learn whether a commit of checkpoint v
// landed.
func (s *Sink) settle(ctx context.Context, t *target, v string) (bool, error) {
	if err := t.tbl.Refresh(ctx); err != nil {
		return false, fmt.Errorf("iceberg sink: target %s: refresh after a commit of unknown outcome: %w", t.name, err)
	}
	t.unsettled = false
	cur, found, err := lastCheckpoint(t.tbl, t.key)
	if err != nil || !found {
		return false, err
	}
	b, _ := json.Marshal(cur)
	return string(b) == v, nil
}

// flushLoop commits the tables whose oldest buffered row waited
// CommitInterval, so that a table that stops changing is not left
// uncommitted.
func (s *Sink) flushLoop() {
	defer close(s.done)
	tick := time.NewTicker(max(s.cfg.CommitInterval/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		for _, t := range s.list() {
			t.mu.Lock()
			if t.rows > 0 && time.Since(t.since) >= s.cfg.CommitInterval {
				if err := s.commit(context.Background(), t); err != nil {
					s.log.Warn("iceberg sink: commit failed; retried", "target", t.name, "err", err)
				}
			}
			t.mu.Unlock()
		}
	}
}

func (s *Sink) list() []*target {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*target, 0, len(s.targets))
	for _, t := range s.targets {
		out = append(out, t)
	}
	return out
}

// Close commits what is buffered and releases the catalog.
func (s *Sink) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	var errs []error
	for _, t := range s.list() {
		t.mu.Lock()
		if err := s.commit(ctx, t); err != nil {
			errs = append(errs, err)
		}
		t.drop()
		t.mu.Unlock()
	}
	if c, ok := s.cat.(catalog.Closer); ok {
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("iceberg sink: close catalog: %w", err))
		}
	}
	return errors.Join(errs...)
}
