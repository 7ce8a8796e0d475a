package source

import (
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/lineage"
	"github.com/icecdc/icecdc/values"
)

// A streamed commit (docs/contract.md, steps 5–6) holds no rows: it classifies by row-id
// bitmaps read from the lineage columns (or computed, for files that store
// none), then yields its events phase by phase, reading each file a record
// batch at a time in position order: deletes from the removed positions,
// updates from the added files with their before images looked up by row
// id, inserts from the added files. The before images of updates are the
// one thing held, encoded, up to the memory budget, and spilled to a
// temporary file past it.

// removedPart is one removal of a streamed commit.
type removedPart struct {
	g    groupRead
	ids  *roaring64.Bitmap // the row ids of its first occurrences
	emit *roaring64.Bitmap // of them, those emitted as deletes
}

// addedPart is one added data file of a streamed commit.
type addedPart struct {
	f        *addedFile
	ids      *roaring64.Bitmap // row ids of its first occurrences
	changed  *roaring64.Bitmap // of them, those with lusn == s
	pos      *roaring64.Bitmap // positions of the changed rows
	upd, ins *roaring64.Bitmap // of the changed, those emitted as updates and as inserts
}

// streamPlan is what a streamed commit's events are read from.
type streamPlan struct {
	r       *commitRun
	removed []removedPart
	added   []addedPart
	skip    map[lineage.Loc]bool // later occurrences of a row id: no event
	updates *roaring64.Bitmap    // every updated row id; its rank is the before image's slot
	keyIdx  []int
	// keySorted is keyIdx ascending, without repeats.
	keySorted []int
	width     int    // the number of fields of the events' schema
	name      string // the table's, for errors
	scanning  func() // called before each scan of emit: waits for its read-ahead
	// held is the before images read to find key changes, kept for the
	// first pass over the updates (later passes read them again).
	held *imageStore

	nDel, nUpd, nIns int
}

// streamable reports whether a commit can be streamed: not when
// equality deletes decide by value which rows left, or pair deletes with
// inserts by key (both need the rows' values together). A keyed table's
// commit that removes rows by position and adds rows is held too, so that
// a delete and an insert of one key pair into an update (pairUpserts), as
// long as its removed and added rows are at most MaxHeldRows; a larger one
// is streamed unpaired, and says so (notPaired).
func (r *commitRun) streamable(groups []groupRead, files []*addedFile, keyed bool) bool {
	if len(r.eqFile) > 0 {
		return false
	}
	for _, g := range groups {
		if g.eq != nil || len(g.older) > 0 {
			return false
		}
	}
	if keyed && len(groups) > 0 {
		var removed, added uint64
		for _, g := range groups {
			removed += g.pos.GetCardinality()
		}
		for _, f := range files {
			added += uint64(f.live)
		}
		if added > 0 {
			if removed+added <= uint64(r.t.maxHeldRows()) {
				return false
			}
			r.unpaired = true
		}
	}
	return true
}

// notPaired reports a keyed commit streamed with deletes and inserts that
// were not paired by key (see streamable): one anomaly of kind
// cdc.NotPaired, logged and counted, for the commit.
func (r *commitRun) notPaired(deletes, inserts uint64) {
	if !r.unpaired || deletes == 0 || inserts == 0 {
		return
	}
	r.anoms = append(r.anoms, cdc.Anomaly{Kind: cdc.NotPaired, Position: -1, RowID: -1,
		Detail: fmt.Sprintf("%d deletes and %d inserts, more rows than max_held_rows (%d)", deletes, inserts, r.t.maxHeldRows())})
}

// stream classifies the commit and makes c's events a stream.
func (r *commitRun) stream(ctx context.Context, c *cdc.Commit, groups []groupRead, files []*addedFile, keyFields []string) error {
	p := &streamPlan{r: r, skip: map[lineage.Loc]bool{}, keyIdx: keyPositions(r.sc, keyFields)}
	p.keySorted = slices.Compact(slices.Sorted(slices.Values(p.keyIdx)))
	p.width, p.name = len(r.sc.Fields()), r.t.name(r.t.tbl)
	sets := lineage.NewSets(r.snap.SequenceNumber)
	anoms, err := p.readRemoved(ctx, sets, groups)
	if err != nil {
		return err
	}
	added, err := p.readAdded(ctx, sets, files)
	if err != nil {
		return err
	}
	for _, a := range append(anoms, added...) {
		r.anoms = append(r.anoms, cdc.Anomaly{Kind: a.Kind, File: r.files[a.Loc.File], Position: a.Loc.Pos, RowID: a.RowID})
	}
	return p.phases(ctx, c, sets)
}

// readRemoved reads the row ids of the removed rows, each file
// concurrently, and records them in order in sets and p.removed; a row id
// removed twice is read again to find its rows.
func (p *streamPlan) readRemoved(ctx context.Context, sets *lineage.Sets, groups []groupRead) ([]lineage.Anomaly, error) {
	type removedIDs struct {
		ids  *roaring64.Bitmap
		dups []lineage.Anomaly
	}
	rem := make([]removedIDs, len(groups))
	err := p.r.t.pool.each(ctx, len(groups), func(i int) error {
		var err error
		rem[i].ids, rem[i].dups, err = p.r.removedIDs(ctx, groups[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	var anoms []lineage.Anomaly
	for i, g := range groups {
		anoms = append(anoms, p.skipAll(rem[i].dups)...)
		if cross := sets.RemoveAll(rem[i].ids); !cross.IsEmpty() {
			dups, err := p.findRows(ctx, fileRows{g.m, g.lay, g.pos, g.fi}, cross, lineage.DuplicateRemoved)
			if err != nil {
				return nil, err
			}
			anoms = append(anoms, p.skipAll(dups)...)
			rem[i].ids.AndNot(cross)
		}
		p.removed = append(p.removed, removedPart{g: g, ids: rem[i].ids})
	}
	return anoms, nil
}

// readAdded reads the row ids of the added rows, each file concurrently
// once every removed row is known, and records them in order in sets and
// p.added; a row id added twice is read again to find its rows.
func (p *streamPlan) readAdded(ctx context.Context, sets *lineage.Sets, files []*addedFile) ([]lineage.Anomaly, error) {
	type addedIDs struct {
		part  addedPart
		anoms []lineage.Anomaly
	}
	add := make([]addedIDs, len(files))
	err := p.r.t.pool.each(ctx, len(files), func(i int) error {
		var err error
		add[i].part, add[i].anoms, err = p.r.addedIDs(ctx, files[i], sets)
		return err
	})
	if err != nil {
		return nil, err
	}
	var anoms []lineage.Anomaly
	for i, f := range files {
		part := add[i].part
		cross := sets.AddedBefore(part.ids)
		for _, a := range add[i].anoms {
			if a.Kind == lineage.DuplicateAdded || !cross.Contains(uint64(a.RowID)) {
				anoms = append(anoms, p.skipAll([]lineage.Anomaly{a})...)
			}
		}
		if !cross.IsEmpty() {
			live := roaring64.New()
			live.AddRange(0, uint64(f.m.file.Count()))
			if f.dead != nil {
				live.AndNot(f.dead)
			}
			dups, err := p.findRows(ctx, fileRows{f.m, f.lay, live, f.fi}, cross, lineage.DuplicateAdded)
			if err != nil {
				return nil, err
			}
			for _, a := range p.skipAll(dups) {
				anoms = append(anoms, a)
				part.pos.Remove(uint64(a.Loc.Pos))
			}
			part.ids.AndNot(cross)
			part.changed.AndNot(cross)
		}
		sets.AddFile(part.ids, part.changed)
		p.added = append(p.added, part)
	}
	return anoms, nil
}

// phases splits the classified rows into the deletes, updates and
// inserts each part emits, and makes them c's stream.
func (p *streamPlan) phases(ctx context.Context, c *cdc.Commit, sets *lineage.Sets) error {
	deletes, inserts := sets.Deletes(), sets.Inserts()
	p.r.notPaired(deletes.GetCardinality(), inserts.GetCardinality())
	p.updates = sets.Updates()
	// An update that changes the key is a delete and an insert (as
	// Debezium emits it): that needs both images before the first event.
	keyed := roaring64.New()
	if len(p.keyIdx) > 0 && !p.updates.IsEmpty() {
		var err error
		if keyed, err = p.keyChanges(ctx); err != nil {
			return err
		}
	}
	deletes.Or(keyed)
	inserts.Or(keyed)
	updates := roaring64.AndNot(p.updates, keyed)
	for i := range p.removed {
		x := &p.removed[i]
		x.emit = roaring64.And(x.ids, deletes)
		p.nDel += int(x.emit.GetCardinality())
	}
	for i := range p.added {
		x := &p.added[i]
		x.upd, x.ins = roaring64.And(x.changed, updates), roaring64.And(x.changed, inserts)
		p.nUpd += int(x.upd.GetCardinality())
		p.nIns += int(x.ins.GetCardinality())
	}
	c.Total = p.nDel + p.nUpd + p.nIns
	c.Rest = p.rest
	return nil
}

// skipAll marks the rows of anomalies that are later occurrences of a row
// id, so that they yield no event, and returns the anomalies not seen yet.
func (p *streamPlan) skipAll(as []lineage.Anomaly) []lineage.Anomaly {
	out := as[:0]
	for _, a := range as {
		if a.Kind == lineage.DuplicateAdded || a.Kind == lineage.DuplicateRemoved {
			if p.skip[a.Loc] {
				continue
			}
			p.skip[a.Loc] = true
		}
		out = append(out, a)
	}
	return out
}

func (p *streamPlan) skipped(fi int, pos int64) bool {
	return len(p.skip) > 0 && p.skip[lineage.Loc{File: fi, Pos: pos}]
}

// removedIDs returns the row ids at a removal's positions: computed when
// the file stores no _row_id, else read from it. Row ids found twice in
// the file are anomalies (the first occurrence counts).
func (r *commitRun) removedIDs(ctx context.Context, g groupRead) (*roaring64.Bitmap, []lineage.Anomaly, error) {
	ids := roaring64.New()
	if !g.lay.storesRowID {
		if g.m.firstRowID == nil {
			return ids, nil, nil // no lineage: no row ids (docs/contract.md)
		}
		it := g.pos.Iterator()
		for it.HasNext() {
			if id, ok := lineage.RowID(nil, g.m.firstRowID, int64(it.Next())); ok {
				ids.Add(uint64(id))
			}
		}
		return ids, nil, nil
	}
	var dups []lineage.Anomaly
	_, err := r.t.scanFile(ctx, r.snap, r.sc, g.m, readOpts{lay: g.lay, positions: g.pos, narrow: true}, func(pos, id, _ int64, hasID bool) (bool, error) {
		if hasID && g.pos.Contains(uint64(pos)) && !ids.CheckedAdd(uint64(id)) {
			dups = append(dups, lineage.Anomaly{Kind: lineage.DuplicateRemoved, RowID: id, Loc: lineage.Loc{File: g.fi, Pos: pos}})
		}
		return false, nil
	})
	return ids, dups, err
}

// addedIDs reads the row ids and lusn of an added file's live rows (or
// computes them, for a file that stores neither), and classifies them
// against the removed row ids, which sets holds complete.
func (r *commitRun) addedIDs(ctx context.Context, f *addedFile, sets *lineage.Sets) (addedPart, []lineage.Anomaly, error) {
	seq := r.snap.SequenceNumber
	part := addedPart{f: f, ids: roaring64.New(), changed: roaring64.New(), pos: roaring64.New()}
	var anoms []lineage.Anomaly
	if !f.lay.storesRowID && !f.lay.storesLUSN {
		first, n := *f.m.firstRowID, f.m.file.Count()
		if first < 0 || first+n < first {
			return part, nil, fmt.Errorf("data file %s: first_row_id %d with %d rows overflows the row ids", f.m.path(), first, n)
		}
		part.pos.AddRange(0, uint64(n))
		if f.dead != nil {
			part.pos.AndNot(f.dead)
		}
		if f.dead == nil {
			part.ids.AddRange(uint64(first), uint64(first+n))
		} else {
			it := part.pos.Iterator()
			for it.HasNext() {
				part.ids.Add(uint64(first) + it.Next())
			}
		}
		lusn := f.m.dataSeq
		if lusn == seq {
			part.changed = part.ids.Clone()
			return part, nil, nil
		}
		it := part.pos.Iterator()
		for it.HasNext() {
			pos := int64(it.Next())
			if k := sets.Anomaly(first+pos, lusn); k != "" {
				anoms = append(anoms, lineage.Anomaly{Kind: k, RowID: first + pos, Loc: lineage.Loc{File: f.fi, Pos: pos}})
			}
		}
		part.pos.Clear()
		return part, anoms, nil
	}
	_, err := r.t.scanFile(ctx, r.snap, r.sc, f.m, readOpts{lay: f.lay, narrow: true}, func(pos, id, lusn int64, hasID bool) (bool, error) {
		if f.dead != nil && f.dead.Contains(uint64(pos)) {
			return false, nil
		}
		if !hasID {
			return false, fmt.Errorf("row at position %d has no row id", pos)
		}
		loc := lineage.Loc{File: f.fi, Pos: pos}
		if !part.ids.CheckedAdd(uint64(id)) {
			anoms = append(anoms, lineage.Anomaly{Kind: lineage.DuplicateAdded, RowID: id, Loc: loc})
			return false, nil
		}
		if lusn == seq {
			part.changed.Add(uint64(id))
			part.pos.Add(uint64(pos))
		} else if k := sets.Anomaly(id, lusn); k != "" {
			anoms = append(anoms, lineage.Anomaly{Kind: k, RowID: id, Loc: loc})
		}
		return false, nil
	})
	return part, anoms, err
}

// fileRows are rows of a commit's data file: m's rows at positions; fi
// is the file's Loc.File.
type fileRows struct {
	m         dataFileMeta
	lay       layout
	positions *roaring64.Bitmap
	fi        int
}

// findRows returns, as anomalies of kind, every row of f at its
// positions whose row id is in ids: the later occurrences of
// row ids an earlier file had.
func (p *streamPlan) findRows(ctx context.Context, f fileRows, ids *roaring64.Bitmap, kind string) ([]lineage.Anomaly, error) {
	var out []lineage.Anomaly
	positions := f.positions
	_, err := p.r.t.scanFile(ctx, p.r.snap, p.r.sc, f.m, readOpts{lay: f.lay, positions: positions, narrow: true}, func(pos, id, _ int64, hasID bool) (bool, error) {
		if hasID && positions.Contains(uint64(pos)) && ids.Contains(uint64(id)) {
			out = append(out, lineage.Anomaly{Kind: kind, RowID: id, Loc: lineage.Loc{File: f.fi, Pos: pos}})
		}
		return false, nil
	})
	return out, err
}

// rest yields the events from index from on: deletes, updates, inserts.
func (p *streamPlan) rest(ctx context.Context, from int, yield func([]cdc.Event) error) (err error) {
	// A malformed file read here fails the stream, as it fails Commit.
	defer recoverAs(&err, "snapshot %d", p.r.snap.SnapshotID)
	ra := p.r.t.readAhead(ctx, p.r.fs, p.scanOrder(from))
	defer ra.stop()
	scans := 0
	p.scanning = func() { ra.wait(ctx, scans); scans++ }
	defer func() { p.scanning = nil }()
	idx := 0
	for _, x := range p.removed {
		n := int(x.emit.GetCardinality())
		if n > 0 && idx+n > from {
			e := emitted{want: x.emit, arrow: true, event: func(fr fileRow) (cdc.Event, error) {
				return cdc.Event{Op: cdc.OpDelete, RowID: fr.rowID, LUSN: fr.lusn, Before: fr.row, BeforeArrow: fr.img, BeforePos: fr.at}, nil
			}}
			err := p.emit(ctx, fileRows{x.g.m, x.g.lay, x.g.pos, x.g.fi}, e, idx, from, yield)
			if err != nil {
				return err
			}
		}
		idx += n
	}
	held := p.held
	p.held = nil
	if held != nil {
		defer held.close()
	}
	if p.nUpd > 0 && idx+p.nUpd > from {
		store := held
		if store == nil {
			var err error
			if store, err = p.beforeImages(ctx); err != nil {
				return err
			}
		}
		defer store.close()
		for _, x := range p.added {
			n := int(x.upd.GetCardinality())
			if n > 0 && idx+n > from {
				// An update's after image is read as a Row: debezium-json
				// compares it with the before image (changed_fields),
				// which a Row from the batch's arena serves at less cost
				// than one made from the columns at encoding.
				e := emitted{want: x.upd, event: func(fr fileRow) (cdc.Event, error) {
					before, err := p.before(store, fr.rowID)
					return cdc.Event{Op: cdc.OpUpdate, RowID: fr.rowID, LUSN: fr.lusn, Before: before, After: fr.row, AfterArrow: fr.img, AfterPos: fr.at}, err
				}}
				err := p.emit(ctx, fileRows{x.f.m, x.f.lay, x.pos, x.f.fi}, e, idx, from, yield)
				if err != nil {
					return err
				}
			}
			idx += n
		}
		store.close()
	} else {
		idx += p.nUpd
	}
	for _, x := range p.added {
		n := int(x.ins.GetCardinality())
		if n > 0 && idx+n > from {
			e := emitted{want: x.ins, arrow: true, event: func(fr fileRow) (cdc.Event, error) {
				return cdc.Event{Op: cdc.OpCreate, RowID: fr.rowID, LUSN: fr.lusn, After: fr.row, AfterArrow: fr.img, AfterPos: fr.at}, nil
			}}
			err := p.emit(ctx, fileRows{x.f.m, x.f.lay, x.pos, x.f.fi}, e, idx, from, yield)
			if err != nil {
				return err
			}
		}
		idx += n
	}
	return nil
}

// scanOrder lists the files rest scans through emit from index from on,
// in the order it scans them (for readAhead: it follows rest's loops; the
// before images read their own files ahead).
func (p *streamPlan) scanOrder(from int) []dataFileMeta {
	var out []dataFileMeta
	idx := 0
	for _, x := range p.removed {
		if n := int(x.emit.GetCardinality()); n > 0 && idx+n > from {
			out = append(out, x.g.m)
		}
		idx += int(x.emit.GetCardinality())
	}
	if p.nUpd > 0 && idx+p.nUpd > from {
		for _, x := range p.added {
			if n := int(x.upd.GetCardinality()); n > 0 && idx+n > from {
				out = append(out, x.f.m)
			}
			idx += int(x.upd.GetCardinality())
		}
	} else {
		idx += p.nUpd
	}
	for _, x := range p.added {
		if n := int(x.ins.GetCardinality()); n > 0 && idx+n > from {
			out = append(out, x.f.m)
		}
		idx += int(x.ins.GetCardinality())
	}
	return out
}

// emitted says which of a file's rows emit yields and as what: those whose
// row id is in want, each made an event by event; arrow lets the rows'
// values stay in the record batch (readOpts.arrow).
type emitted struct {
	want  *roaring64.Bitmap
	arrow bool
	event func(fileRow) (cdc.Event, error)
}

// emit yields, a record batch at a time, events for the rows of f
// that e wants, numbered from idx, from index from on. The file must give
// exactly the wanted rows.
func (p *streamPlan) emit(ctx context.Context, f fileRows, e emitted, idx, from int, yield func([]cdc.Event) error) error {
	m, positions, fi, want, event := f.m, f.positions, f.fi, e.want, e.event
	next, seen := idx, idx
	if p.scanning != nil {
		p.scanning()
	}
	_, err := p.r.t.scanFile(ctx, p.r.snap, p.r.sc, m, readOpts{lay: f.lay, positions: positions, arrow: e.arrow, each: func(rows []fileRow) error {
		if len(rows) == 0 {
			return nil
		}
		evs := make([]cdc.Event, len(rows))
		for k, fr := range rows {
			ev, err := event(fr)
			if err != nil {
				return fmt.Errorf("data file %s position %d: %w", m.path(), fr.pos, err)
			}
			ev.Index = next + k
			evs[k] = ev
		}
		next += len(evs)
		return yield(evs)
	}}, func(pos, id, _ int64, hasID bool) (bool, error) {
		if !hasID || !positions.Contains(uint64(pos)) || !want.Contains(uint64(id)) || p.skipped(fi, pos) {
			return false, nil
		}
		seen++
		if seen <= from {
			next = seen // counted, not read
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if n := int(want.GetCardinality()); seen-idx != n {
		return fmt.Errorf("data file %s: found %d of the commit's %d rows in it", m.path(), seen-idx, n)
	}
	return nil
}

// beforeImages reads the before images of the commit's updates, in the
// order of the removals, into a store by update slot.
func (p *streamPlan) beforeImages(ctx context.Context) (*imageStore, error) {
	r := p.r
	store := newImageStore(int(p.updates.GetCardinality()), r.t.imageBudget(), "")
	var buf []byte
	var files []dataFileMeta
	for _, x := range p.removed {
		if x.ids.Intersects(p.updates) {
			files = append(files, x.g.m)
		}
	}
	ra := r.t.readAhead(ctx, r.fs, files)
	defer ra.stop()
	scans := 0
	for _, x := range p.removed {
		if !x.ids.Intersects(p.updates) {
			continue
		}
		g := x.g
		ra.wait(ctx, scans)
		scans++
		_, err := r.t.scanFile(ctx, r.snap, r.sc, g.m, readOpts{lay: g.lay, positions: g.pos, each: func(rows []fileRow) error {
			for _, fr := range rows {
				var err error
				if buf, err = appendRow(buf[:0], fr.row); err != nil {
					return fmt.Errorf("data file %s position %d: %w", g.m.path(), fr.pos, err)
				}
				if err := store.put(int(p.updates.Rank(uint64(fr.rowID))-1), buf); err != nil {
					return err
				}
			}
			return nil
		}}, func(pos, id, _ int64, hasID bool) (bool, error) {
			return hasID && g.pos.Contains(uint64(pos)) && x.ids.Contains(uint64(id)) && p.updates.Contains(uint64(id)) && !p.skipped(g.fi, pos), nil
		})
		if err != nil {
			store.close()
			return nil, err
		}
	}
	if err := store.done(); err != nil {
		store.close()
		return nil, err
	}
	return store, nil
}

// before returns the before image of the update of row id.
func (p *streamPlan) before(store *imageStore, id int64) (values.Row, error) {
	rec, ok, err := store.get(int(p.updates.Rank(uint64(id)) - 1))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("row id %d: no before image among the removed rows", id)
	}
	d := rowDecoder{b: rec}
	return d.row()
}

// beforeKey returns the key fields of the before image of the update of
// row id, in a row of the schema's width.
func (p *streamPlan) beforeKey(store *imageStore, id int64) (values.Row, error) {
	rec, ok, err := store.get(int(p.updates.Rank(uint64(id)) - 1))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("row id %d: no before image among the removed rows", id)
	}
	d := rowDecoder{b: rec}
	return d.fields(p.keySorted, p.width)
}

// keyChanges returns the updated row ids whose key differs between the
// before and after images.
func (p *streamPlan) keyChanges(ctx context.Context) (*roaring64.Bitmap, error) {
	store, err := p.beforeImages(ctx)
	if err != nil {
		return nil, err
	}
	out := roaring64.New()
	r := p.r
	// Only the key columns are read and compared.
	var keyNames []string
	for _, i := range p.keyIdx {
		keyNames = append(keyNames, r.sc.Fields()[i].Name)
	}
	for _, x := range p.added {
		want := roaring64.And(x.changed, p.updates)
		if want.IsEmpty() {
			continue
		}
		f := x.f
		_, err := r.t.scanFile(ctx, r.snap, r.sc, f.m, readOpts{lay: f.lay, positions: x.pos, fields: keyNames, each: func(rows []fileRow) error {
			for _, fr := range rows {
				before, err := p.beforeKey(store, fr.rowID)
				if err != nil {
					return fmt.Errorf("data file %s position %d: %w", f.m.path(), fr.pos, err)
				}
				if keyChanged(before, fr.row, p.keyIdx) {
					out.Add(uint64(fr.rowID))
				}
			}
			return nil
		}}, func(pos, id, _ int64, hasID bool) (bool, error) {
			return hasID && x.pos.Contains(uint64(pos)) && want.Contains(uint64(id)) && !p.skipped(f.fi, pos), nil
		})
		if err != nil {
			store.close()
			return nil, err
		}
	}
	p.held = store
	return out, nil
}
