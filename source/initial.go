package source

import (
	"context"
	"fmt"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"

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
	fs, err := t.reader.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file io: %w", err)
	}
	list, err := manifestList(fs, snap)
	if err != nil {
		return nil, err
	}
	files, err := t.liveDataFiles(ctx, fs, list, t.nextRowID())
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(list))
	for i, m := range list {
		paths[i] = m.FilePath()
	}
	t.flushIndex(paths)
	byPath := make(map[string]dataFileMeta, len(files))
	for _, m := range files {
		byPath[m.path()] = m
	}
	live, err := t.liveDeletes(ctx, fs, list)
	if err != nil {
		return nil, err
	}
	olds, err := t.lookupDeletes(ctx, fs, live, byPath, true, t.mayHaveV2Deletes())
	if err != nil {
		return nil, err
	}
	sc := t.schemaFor(snap)
	var eqEntries []iceberg.ManifestEntry
	for _, e := range live {
		if e.DataFile().ContentType() == iceberg.EntryContentEqDeletes {
			eqEntries = append(eqEntries, e)
		}
	}
	if err := t.loadEqs(ctx, t.eqAt(snap, sc), eqEntries); err != nil {
		return nil, err
	}
	var eqs []*eqDeletes
	for _, e := range eqEntries {
		ed, err := t.loadEq(ctx, t.eqAt(snap, sc), e)
		if err != nil {
			return nil, err
		}
		eqs = append(eqs, ed)
	}
	// Every footer and vector, read concurrently; the loop below meets
	// them, and their errors, in manifest order.
	pf := newPrefetched()
	var dvs []dvRead
	for _, m := range files {
		if e := olds[m.path()].dv; e != nil {
			dvs = append(dvs, dvRead{e, m.file.Count()})
		}
	}
	if err := t.prefetch(ctx, pf, fs, files, dvs); err != nil {
		return nil, err
	}
	info := t.Info()
	info.Schema = sc
	// The read starts the stream: its schema is described whole.
	c := &cdc.Commit{Table: info, Snapshot: si, SchemaChange: cdc.NewSchemaChange(nil, true, sc)}
	type part struct {
		m     dataFileMeta
		lay   layout
		live  *roaring64.Bitmap
		apply []*eqDeletes
	}
	var parts []part
	total, held := 0, len(eqs) > 0
	for _, m := range files {
		// The footer first: it checks the record count the bitmaps are
		// sized from.
		lay, err := t.layout(pf, fs, m)
		if err != nil {
			return nil, err
		}
		dead, err := t.deadPositions(pf, fs, m, olds[m.path()])
		if err != nil {
			return nil, err
		}
		p := part{m: m, lay: lay, live: roaring64.New()}
		p.live.AddRange(0, uint64(m.file.Count()))
		p.live.AndNot(dead)
		for _, e := range eqs {
			if e.appliesTo(m) {
				p.apply = append(p.apply, e)
			}
		}
		parts = append(parts, p)
		total += int(p.live.GetCardinality())
	}
	// Without equality deletes the row count is known before reading, so
	// a large table's rows are streamed a record batch at a time.
	if !held && total > t.maxHeldRows() {
		c.Total = total
		c.FileEnds = make([]int, len(parts))
		end := 0
		for i, p := range parts {
			end += int(p.live.GetCardinality())
			c.FileEnds[i] = end
		}
		c.Rest = func(ctx context.Context, from int, yield func([]cdc.Event) error) error {
			idx := 0
			for _, p := range parts {
				n := int(p.live.GetCardinality())
				start := idx
				idx += n
				if idx <= from {
					continue
				}
				skip := max(from-start, 0)
				lr := liveRows{snap: snap, sc: sc, m: p.m, lay: p.lay, live: p.live, op: cdc.OpSnapshot}
				next, err := t.streamLive(ctx, lr, skip, start+skip, yield)
				if err != nil {
					return err
				}
				if next != idx {
					return fmt.Errorf("data file %s: read %d live rows, expected %d", p.m.path(), next-start-skip, idx-start-skip)
				}
			}
			return nil
		}
		return c, nil
	}
	rows := make([][]fileRow, len(parts))
	err = t.pool.each(ctx, len(parts), func(i int) error {
		p := parts[i]
		var err error
		rows[i], err = t.scanFile(ctx, snap, sc, p.m, readOpts{lay: p.lay}, func(pos, _, _ int64, hasID bool) (bool, error) {
			return hasID && p.live.Contains(uint64(pos)), nil
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	c.FileEnds = make([]int, len(parts))
	for i, p := range parts {
		for _, fr := range rows[i] {
			if matchesAny(p.apply, fr.row, false) {
				continue
			}
			c.Events = append(c.Events, cdc.Event{Op: cdc.OpSnapshot, RowID: fr.rowID, LUSN: fr.lusn, After: fr.row, Index: len(c.Events)})
		}
		c.FileEnds[i] = len(c.Events)
	}
	return c, nil
}
