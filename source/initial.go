package source

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

// InitialRead returns every live row of snapshot si as an 'r' event, in
// manifest order of its data file, then position: the rows of each data
// file minus its vector (or v2 position deletes) and the equality deletes
// that apply to it. It reads the whole snapshot, once, by design.
func (t *Table) InitialRead(ctx context.Context, si cdc.SnapshotInfo) (out *cdc.Commit, err error) {
	name := t.displayName()
	defer func() { err = tableError(name, err); namedRest(out, name) }()
	if t.tbl == nil {
		return nil, errNotLoaded
	}
	defer recoverAs(&err, "initial read of snapshot %d", si.ID)
	t.warm()
	snap := t.tbl.Metadata().SnapshotByID(si.ID)
	if snap == nil {
		return nil, fmt.Errorf("snapshot %d is not in the table metadata", si.ID)
	}
	if !si.HasLineage {
		return nil, fmt.Errorf("snapshot %d has no row lineage to read rows with", si.ID)
	}
	ir := &initialRead{t: t, snap: snap, pf: newPrefetched()}
	if err := ir.liveFiles(ctx); err != nil {
		return nil, err
	}
	ir.sc = t.schemaFor(snap)
	if err := ir.equalityDeletes(ctx); err != nil {
		return nil, err
	}
	if err := ir.prefetch(ctx); err != nil {
		return nil, err
	}
	info := t.Info()
	info.Schema = ir.sc
	// The read starts the stream: its schema is described whole.
	c := &cdc.Commit{Table: info, Snapshot: si, SchemaChange: cdc.NewSchemaChange(nil, true, ir.sc)}
	total, err := ir.liveParts()
	if err != nil {
		return nil, err
	}
	// Without equality deletes the row count is known before reading, so
	// a large table's rows are streamed a record batch at a time.
	if len(ir.eqs) == 0 && total > t.maxHeldRows() {
		ir.stream(c, total)
		return c, nil
	}
	if err := ir.hold(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// initialRead is what InitialRead gathers, a step at a time.
type initialRead struct {
	t    *Table
	snap *table.Snapshot
	sc   *iceberg.Schema
	fs   iceio.IO
	pf   *prefetched // footers and vectors read, by file

	files   []dataFileMeta          // the snapshot's live data files, in manifest order
	deletes []iceberg.ManifestEntry // the snapshot's live delete files
	olds    map[string]oldDeletes   // each data file's vector or v2 position deletes
	eqs     []*eqDeletes            // the snapshot's equality deletes
	parts   []initialPart           // the files, with their live positions
}

// initialPart is one data file of an initial read.
type initialPart struct {
	m     dataFileMeta
	lay   layout
	live  *roaring64.Bitmap // the positions no vector or position delete removed
	apply []*eqDeletes      // the equality deletes that apply to the file
}

// liveFiles lists the snapshot's live data files and finds the deletes
// of each.
func (ir *initialRead) liveFiles(ctx context.Context) error {
	t := ir.t
	fs, err := t.reader.FS(ctx)
	if err != nil {
		return fmt.Errorf("file io: %w", err)
	}
	ir.fs = fs
	list, err := manifestList(fs, ir.snap)
	if err != nil {
		return err
	}
	if ir.files, err = t.liveDataFiles(ctx, fs, list, t.nextRowID()); err != nil {
		return err
	}
	paths := make([]string, len(list))
	for i, m := range list {
		paths[i] = m.FilePath()
	}
	t.flushIndex(paths)
	byPath := make(map[string]dataFileMeta, len(ir.files))
	for _, m := range ir.files {
		byPath[m.path()] = m
	}
	if ir.deletes, err = t.liveDeletes(ctx, fs, list); err != nil {
		return err
	}
	ir.olds, err = t.lookupDeletes(ctx, fs, ir.deletes, byPath, true, t.mayHaveV2Deletes())
	return err
}

// equalityDeletes loads the snapshot's live equality deletes.
func (ir *initialRead) equalityDeletes(ctx context.Context) error {
	var es []iceberg.ManifestEntry
	for _, e := range ir.deletes {
		if e.DataFile().ContentType() == iceberg.EntryContentEqDeletes {
			es = append(es, e)
		}
	}
	var err error
	ir.eqs, err = ir.t.loadEqSet(ctx, ir.t.eqAt(ir.snap, ir.sc), es)
	return err
}

// prefetch reads every footer and vector concurrently; liveParts meets
// them, and their errors, in manifest order.
func (ir *initialRead) prefetch(ctx context.Context) error {
	var dvs []dvRead
	for _, m := range ir.files {
		if e := ir.olds[m.path()].dv; e != nil {
			dvs = append(dvs, dvRead{e, m.file.Count()})
		}
	}
	return ir.t.prefetch(ctx, ir.pf, ir.fs, ir.files, dvs)
}

// liveParts finds each file's live positions and the equality deletes
// that apply to it, and returns how many positions are live.
func (ir *initialRead) liveParts() (int, error) {
	total := 0
	for _, m := range ir.files {
		// The footer first: it checks the record count the bitmaps are
		// sized from.
		lay, err := ir.t.layout(ir.pf, ir.fs, m)
		if err != nil {
			return 0, err
		}
		dead, err := ir.t.deadPositions(ir.pf, ir.fs, m, ir.olds[m.path()])
		if err != nil {
			return 0, err
		}
		p := initialPart{m: m, lay: lay, live: roaring64.New()}
		p.live.AddRange(0, uint64(m.file.Count()))
		p.live.AndNot(dead)
		for _, e := range ir.eqs {
			if e.appliesTo(m) {
				p.apply = append(p.apply, e)
			}
		}
		ir.parts = append(ir.parts, p)
		total += int(p.live.GetCardinality())
	}
	return total, nil
}

// stream makes c's total live rows a stream, read a record batch at a
// time when c's events are asked for.
func (ir *initialRead) stream(c *cdc.Commit, total int) {
	c.Total = total
	c.FileEnds = make([]int, len(ir.parts))
	end := 0
	for i, p := range ir.parts {
		end += int(p.live.GetCardinality())
		c.FileEnds[i] = end
	}
	// Only what the reads need outlives InitialRead, not the footers and
	// vectors read for it.
	s := &liveStream{t: ir.t, snap: ir.snap, sc: ir.sc, parts: ir.parts}
	c.Rest = s.rest
}

// liveStream is the live rows of an initial read too many to hold.
type liveStream struct {
	t     *Table
	snap  *table.Snapshot
	sc    *iceberg.Schema
	parts []initialPart
}

// rest yields the live rows from the from'th on, a file at a time.
func (s *liveStream) rest(ctx context.Context, from int, yield func([]cdc.Event) error) error {
	idx := 0
	for _, p := range s.parts {
		n := int(p.live.GetCardinality())
		start := idx
		idx += n
		if idx <= from {
			continue
		}
		skip := max(from-start, 0)
		lr := liveRows{snap: s.snap, sc: s.sc, m: p.m, lay: p.lay, live: p.live, op: cdc.OpSnapshot}
		next, err := s.t.streamLive(ctx, lr, skip, start+skip, yield)
		if err != nil {
			return err
		}
		if next != idx {
			return fmt.Errorf("data file %s: read %d live rows, expected %d", p.m.path(), next-start-skip, idx-start-skip)
		}
	}
	return nil
}

// hold reads the live rows into c's events, each file concurrently, and
// leaves out those the file's equality deletes match.
func (ir *initialRead) hold(ctx context.Context, c *cdc.Commit) error {
	rows := make([][]fileRow, len(ir.parts))
	err := ir.t.pool.each(ctx, len(ir.parts), func(i int) error {
		p := ir.parts[i]
		var err error
		rows[i], err = ir.t.scanFile(ctx, ir.snap, ir.sc, p.m, readOpts{lay: p.lay}, func(pos, _, _ int64, hasID bool) (bool, error) {
			return hasID && p.live.Contains(uint64(pos)), nil
		})
		return err
	})
	if err != nil {
		return err
	}
	c.FileEnds = make([]int, len(ir.parts))
	for i, p := range ir.parts {
		for _, fr := range rows[i] {
			if matchesAny(p.apply, fr.row, false) {
				continue
			}
			c.Events = append(c.Events, cdc.Event{Op: cdc.OpSnapshot, RowID: fr.rowID, LUSN: fr.lusn, After: fr.row, Index: len(c.Events)})
		}
		c.FileEnds[i] = len(c.Events)
	}
	return nil
}
