package source

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/dv"
	"github.com/icecdc/icecdc/lineage"
	"github.com/icecdc/icecdc/values"
)

// commitRun holds the state of computing one snapshot's events.
type commitRun struct {
	t    *Table
	fs   iceio.IO
	snap *table.Snapshot
	sc   *iceberg.Schema
	d    *delta

	files  []string     // Loc.File → data file path
	eqFile map[int]bool // Loc.File → rows removed by equality deletes
	// pairedBy is, by Loc.File of a removal, how its rows were removed:
	// the source marker of an update paired from one of them.
	pairedBy map[int]string
	// unpaired is set when a keyed commit was too large to hold and pair
	// its deletes and inserts by key (see streamable).
	unpaired bool
	oldEq    []*eqDeletes               // equality deletes live in the parent
	images   map[lineage.Loc]values.Row // row images read for events
	groups   []removal                  // rows leaving, in manifest order
	parent   []iceberg.ManifestFile     // the parent's manifest list, read on demand
	anoms    []cdc.Anomaly
	pf       *prefetched // footers and vectors read, by file
}

// removal is a set of positions of one data file whose rows left the table.
type removal struct {
	m   dataFileMeta
	pos *roaring64.Bitmap
	// eq, when set, keeps only the rows that S's equality deletes match.
	eq []*eqDeletes
	// byVector: the positions come from a deletion vector S added (not
	// from a data file S removed).
	byVector bool
}

// Commit computes the events of snapshot si (docs/contract.md, steps 1–6).
func (t *Table) Commit(ctx context.Context, si cdc.SnapshotInfo) (out *cdc.Commit, err error) {
	name := t.displayName()
	defer func() { err = tableError(name, err); namedRest(out, name) }()
	// Malformed files can panic inside the libraries that decode them;
	// the table's stream stops with an error, the process does not crash.
	if t.tbl == nil {
		return nil, errNotLoaded
	}
	defer recoverAs(&err, "snapshot %d", si.ID)
	t.warm()
	snap := t.tbl.Metadata().SnapshotByID(si.ID)
	if snap == nil {
		return nil, fmt.Errorf("snapshot %d is not in the table metadata (expired?)", si.ID)
	}
	if err := t.checkSnapshotFields(snap); err != nil {
		return nil, err
	}
	fs, err := t.reader.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file io: %w", err)
	}
	sc := t.schemaFor(snap)
	info := t.Info()
	info.Schema = sc
	c := &cdc.Commit{Table: info, Snapshot: si, SchemaChange: t.schemaChange(snap, sc)}

	// A replace (compaction, rewrite) has no logical change: it is passed
	// after its manifest list is checked, before any manifest is read. The file index needs nothing from it
	// either, since it trusts a file's entry only while the manifest it
	// was read from is in the list of the snapshot being processed.
	if si.HasLineage && si.Operation == string(table.OpReplace) {
		list, err := manifestList(fs, snap)
		if err != nil {
			return nil, err
		}
		if err := t.checkReplace(snap, list); err != nil {
			return nil, err
		}
		return c, t.checkRenumbered(ctx, fs, snap, list)
	}
	d, err := t.readDelta(ctx, fs, snap, t.nextRowID())
	if err != nil {
		return nil, err
	}
	if err := t.checkDelta(snap, d); err != nil {
		return nil, err
	}
	defer func() {
		if err == nil {
			t.flushIndex(d.listPaths())
		}
	}()
	// Snapshots from before the table carried lineage have no row ids to
	// speak of.
	if !si.HasLineage || si.Operation == string(table.OpReplace) || d.empty() {
		return c, nil
	}
	if len(d.addedPos) > 0 {
		return nil, fmt.Errorf("snapshot %d adds v2 position delete file %s to a v3 table", si.ID, d.addedPos[0].DataFile().FilePath())
	}

	r := &commitRun{t: t, fs: fs, snap: snap, sc: sc, d: d, images: map[lineage.Loc]values.Row{}, eqFile: map[int]bool{}, pairedBy: map[int]string{}, pf: newPrefetched()}
	return r.run(ctx, c)
}

// run computes the events of the commit c of a snapshot with lineage.
func (r *commitRun) run(ctx context.Context, c *cdc.Commit) (*cdc.Commit, error) {
	// The first snapshot with lineage after an upgrade from v2: the
	// parent's rows have no row ids (docs/contract.md: null for a file without
	// first_row_id), so nothing can be deleted or updated, and the rows
	// it changed are inserts.
	if r.parentHasLineage() {
		if err := r.collectRemovals(ctx); err != nil {
			return nil, err
		}
		if err := r.collectEqualityRemovals(ctx); err != nil {
			return nil, err
		}
		if err := r.loadParentEq(ctx); err != nil {
			return nil, err
		}
	}
	groups, err := r.prepareRemovals()
	if err != nil {
		return nil, err
	}
	keyFields := c.Table.KeyFields
	plan, err := r.planAdded(ctx, keyFields)
	if err != nil {
		return nil, err
	}
	if r.streamable(groups, plan.files, len(keyPositions(r.sc, keyFields)) > 0) {
		if err := r.stream(ctx, c, groups, plan.files, keyFields); err != nil {
			return nil, err
		}
		c.Anomalies = r.anoms
		// A small commit is held, read once here, as MaxHeldRows allows.
		if c.Total <= r.t.maxHeldRows() {
			if err := c.Materialize(ctx); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	return r.hold(ctx, c, groups, plan)
}

// hold computes the events of a commit whose rows are held: one with
// equality deletes, or deletes and inserts to pair by key (see
// streamable).
func (r *commitRun) hold(ctx context.Context, c *cdc.Commit, groups []groupRead, plan *addedPlan) (*cdc.Commit, error) {
	var (
		removed []lineage.Removed
		added   []lineage.Added
		err     error
	)
	if plan.mayStream {
		// Whether the appends are streamed depends on the rows removed.
		if removed, _, err = r.read(ctx, groups, nil); err != nil {
			return nil, err
		}
		plan.decide(removed)
		_, added, err = r.read(ctx, nil, plan.files)
	} else {
		// Removed and added files are read in one phase.
		removed, added, err = r.read(ctx, groups, plan.files)
	}
	if err != nil {
		return nil, err
	}
	changes, anoms := lineage.Classify(r.snap.SequenceNumber, removed, added)
	for _, a := range anoms {
		r.anoms = append(r.anoms, cdc.Anomaly{Kind: a.Kind, File: r.files[a.Loc.File], Position: a.Loc.Pos, RowID: a.RowID})
	}
	head, ins, insLoc := r.events(changes, c.Table.KeyFields)
	c.Anomalies = r.anoms
	if !plan.streamed() {
		c.Events = append(head, ins...)
		for i := range c.Events {
			c.Events[i].Index = i
		}
		return c, nil
	}
	for i := range head {
		head[i].Index = i
	}
	c.Events = head
	r.streamInserts(c, plan, ins, insLoc)
	return c, nil
}

// layout returns the footer layout of data file m (see Table.layout).
func (r *commitRun) layout(m dataFileMeta) (layout, error) { return r.t.layout(r.pf, r.fs, m) }

// vector returns the deletion vector of e for a data file of count rows.
func (r *commitRun) vector(e iceberg.ManifestEntry, count int64) (*roaring64.Bitmap, error) {
	return r.t.vector(r.pf, r.fs, e, count)
}

func (r *commitRun) fileIndex(path string) int {
	r.files = append(r.files, path)
	return len(r.files) - 1
}

// parentList returns the parent snapshot's manifest list.
func (r *commitRun) parentList() ([]iceberg.ManifestFile, error) {
	if r.parent != nil || r.snap.ParentSnapshotID == nil {
		return r.parent, nil
	}
	p := r.t.tbl.Metadata().SnapshotByID(*r.snap.ParentSnapshotID)
	if p == nil {
		return nil, lostHistory(fmt.Sprintf("snapshot %d (sequence number %d): its parent %d was expired, and the rows this commit removed cannot be computed without the parent's deletes",
			r.snap.SnapshotID, r.snap.SequenceNumber, *r.snap.ParentSnapshotID))
	}
	list, err := manifestList(r.fs, p)
	if err != nil {
		return nil, err
	}
	r.parent = list
	return list, nil
}

// parentLiveDeletes returns the delete entries live in the parent. When
// the parent was expired (its manifest list is gone with it), they are
// derived from S's own manifest list, which holds every live manifest of
// S: the deletes live in S that S did not add, and those S removed.
func (r *commitRun) parentLiveDeletes(ctx context.Context) ([]iceberg.ManifestEntry, error) {
	if p := r.snap.ParentSnapshotID; p == nil || r.t.tbl.Metadata().SnapshotByID(*p) != nil {
		plist, err := r.parentList()
		if err != nil {
			return nil, err
		}
		return r.t.liveDeletes(ctx, r.fs, plist)
	}
	live, err := r.t.liveDeletes(ctx, r.fs, r.d.list)
	if err != nil {
		return nil, err
	}
	out := make([]iceberg.ManifestEntry, 0, len(live))
	for _, e := range live {
		if e.Status() == iceberg.EntryStatusADDED && e.SnapshotID() == r.snap.SnapshotID {
			continue
		}
		out = append(out, e)
	}
	out = append(out, r.d.removedDVs...)
	out = append(out, r.d.removedPos...)
	return append(out, r.d.removedEq...), nil
}

// parentHasLineage reports whether the parent snapshot carried row
// lineage; a snapshot without a parent has nothing to remove anyway.
func (r *commitRun) parentHasLineage() bool {
	if r.snap.ParentSnapshotID == nil {
		return true
	}
	p := r.t.tbl.Metadata().SnapshotByID(*r.snap.ParentSnapshotID)
	return p == nil || p.FirstRowID != nil
}

// parentHasDeletes tells from the parent's summary whether any delete file
// was live in it; without a summary it assumes so.
func (r *commitRun) parentHasDeletes() bool {
	if r.snap.ParentSnapshotID == nil {
		return false
	}
	p := r.t.tbl.Metadata().SnapshotByID(*r.snap.ParentSnapshotID)
	if p == nil || p.Summary == nil {
		return true
	}
	v, ok := p.Summary.Properties["total-delete-files"]
	if !ok {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return err != nil || n > 0
}

// collectRemovals finds the positions whose rows S took away: new vectors
// minus the deletes live before, and every live row of removed files.
func (r *commitRun) collectRemovals(ctx context.Context) error {
	rs, err := r.removalTargets()
	if err != nil {
		return err
	}
	if rs.located, err = r.t.locate(ctx, r.fs, r.d.list, rs.targets, r.t.nextRowID()); err != nil {
		return err
	}
	if err := r.prefetchRemovals(ctx, rs); err != nil {
		return err
	}
	if err := r.removedMetas(ctx, rs); err != nil {
		return err
	}
	if err := r.lookupOldDeletes(ctx, rs); err != nil {
		return err
	}
	return r.appendRemovals(rs)
}

// removals is what collectRemovals gathers, a step at a time.
type removals struct {
	oldDV   map[string]iceberg.ManifestEntry // vectors S removed, by data file
	targets []string                         // files S's new vectors name, not added nor removed by S
	located map[string]dataFileMeta          // targets, as the manifest list lists them
	removed []dataFileMeta                   // the files S removed
	olds    map[string]oldDeletes            // the parent's deletes S did not name
}

// removalTargets lists the data files S's new vectors delete from, and
// notes the vectors S removed without a replacement.
func (r *commitRun) removalTargets() (*removals, error) {
	d := r.d
	addedFiles := map[string]bool{}
	for _, e := range d.addedData {
		addedFiles[e.DataFile().FilePath()] = true
	}
	removedFiles := map[string]bool{}
	for _, e := range d.removedData {
		removedFiles[e.DataFile().FilePath()] = true
	}
	rs := &removals{oldDV: map[string]iceberg.ManifestEntry{}}
	for _, e := range d.removedDVs {
		rs.oldDV[*e.DataFile().ReferencedDataFile()] = e
	}
	newDV := map[string]bool{}
	for _, e := range d.addedDVs {
		p := *e.DataFile().ReferencedDataFile()
		if newDV[p] {
			return nil, fmt.Errorf("snapshot %d adds two deletion vectors for data file %s", r.snap.SnapshotID, p)
		}
		newDV[p] = true
		if !addedFiles[p] && !removedFiles[p] {
			rs.targets = append(rs.targets, p)
		}
	}
	for p, e := range rs.oldDV {
		if !newDV[p] && !removedFiles[p] {
			// Rows come back to life: no contract event exists for that.
			r.anoms = append(r.anoms, cdc.Anomaly{Kind: "vector-removed-without-replacement", File: e.DataFile().FilePath(), Position: -1})
		}
	}
	return rs, nil
}

// prefetchRemovals reads ahead, concurrently, every footer and vector the
// commit needs that S names: the steps after it meet them, and their
// errors, in order. Every target must be live.
func (r *commitRun) prefetchRemovals(ctx context.Context, rs *removals) error {
	d := r.d
	var (
		files []dataFileMeta
		dvs   []dvRead
	)
	for _, p := range rs.targets {
		if m, ok := rs.located[p]; ok {
			files = append(files, m)
		}
	}
	for _, e := range d.removedData {
		files = append(files, metaOf(e))
	}
	for _, e := range d.addedDVs {
		if m, ok := rs.located[*e.DataFile().ReferencedDataFile()]; ok {
			dvs = append(dvs, dvRead{e, m.file.Count()})
			if old, ok := rs.oldDV[m.path()]; ok {
				dvs = append(dvs, dvRead{old, m.file.Count()})
			}
		}
	}
	for _, e := range d.removedData {
		if old, ok := rs.oldDV[e.DataFile().FilePath()]; ok {
			dvs = append(dvs, dvRead{old, e.DataFile().Count()})
		}
	}
	af, adv := r.addedReads()
	if err := r.t.prefetch(ctx, r.pf, r.fs, append(files, af...), append(dvs, adv...)); err != nil {
		return err
	}
	for _, p := range rs.targets {
		m, ok := rs.located[p]
		if !ok {
			return fmt.Errorf("snapshot %d: deletion vector references data file %s, which is not live in it", r.snap.SnapshotID, p)
		}
		if _, err := r.layout(m); err != nil {
			return err
		}
	}
	return nil
}

// removedMetas takes the metadata of the files S removed from their
// DELETED entries; a writer that did not persist first_row_id there is
// answered from the parent.
func (r *commitRun) removedMetas(ctx context.Context, rs *removals) error {
	rs.removed = make([]dataFileMeta, len(r.d.removedData))
	var unknown []string
	for i, e := range r.d.removedData {
		rs.removed[i] = metaOf(e)
		if _, err := r.layout(rs.removed[i]); err != nil {
			return err
		}
		if rs.removed[i].firstRowID == nil {
			unknown = append(unknown, rs.removed[i].path())
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	plist, err := r.parentList()
	if err != nil {
		return err
	}
	found, err := r.t.locate(ctx, r.fs, plist, unknown, r.t.nextRowID())
	if err != nil {
		return err
	}
	for i := range rs.removed {
		if f, ok := found[rs.removed[i].path()]; ok && rs.removed[i].firstRowID == nil {
			rs.removed[i].firstRowID = f.firstRowID
		}
	}
	return nil
}

// lookupOldDeletes finds the old deletes not named by S itself: vectors
// of removed files that S left dangling, and v2 position deletes of files
// from before an upgrade.
func (r *commitRun) lookupOldDeletes(ctx context.Context, rs *removals) error {
	lookupFiles := map[string]dataFileMeta{}
	wantDV := false
	for _, m := range rs.removed {
		lookupFiles[m.path()] = m
		if _, ok := rs.oldDV[m.path()]; !ok {
			wantDV = true
		}
	}
	for _, p := range rs.targets {
		lookupFiles[p] = rs.located[p]
	}
	wantPos := r.t.mayHaveV2Deletes()
	if !(wantDV || wantPos) || !r.parentHasDeletes() || len(lookupFiles) == 0 {
		return nil
	}
	live, err := r.parentLiveDeletes(ctx)
	if err != nil {
		return err
	}
	rs.olds, err = r.t.lookupDeletes(ctx, r.fs, live, lookupFiles, wantDV, wantPos)
	if err != nil {
		return err
	}
	// The parent's vectors of files S removed without naming them.
	var dvs []dvRead
	for p, m := range lookupFiles {
		if _, ok := rs.oldDV[p]; !ok && rs.olds[p].dv != nil {
			dvs = append(dvs, dvRead{rs.olds[p].dv, m.file.Count()})
		}
	}
	return r.t.prefetch(ctx, r.pf, r.fs, nil, dvs)
}

// oldOf is the deletes of m live before S.
func (r *commitRun) oldOf(rs *removals, m dataFileMeta) ([]*roaring64.Bitmap, error) {
	var out []*roaring64.Bitmap
	e, ok := rs.oldDV[m.path()]
	if !ok {
		e = rs.olds[m.path()].dv
	}
	if e != nil {
		bm, err := r.vector(e, m.file.Count())
		if err != nil {
			return nil, err
		}
		out = append(out, bm)
	}
	if pos := rs.olds[m.path()].pos; pos != nil {
		out = append(out, pos)
	}
	return out, nil
}

// appendRemovals adds the removals in manifest order: vectors first as
// they were listed, then removed files.
func (r *commitRun) appendRemovals(rs *removals) error {
	for _, e := range r.d.addedDVs {
		p := *e.DataFile().ReferencedDataFile()
		m, ok := rs.located[p]
		if !ok {
			continue // targets a file S added or removed
		}
		bm, err := r.vector(e, m.file.Count())
		if err != nil {
			return err
		}
		old, err := r.oldOf(rs, m)
		if err != nil {
			return err
		}
		if diff := dv.Diff(bm, old...); !diff.IsEmpty() {
			r.groups = append(r.groups, removal{m: m, pos: diff, byVector: true})
		}
	}
	for _, m := range rs.removed {
		old, err := r.oldOf(rs, m)
		if err != nil {
			return err
		}
		all := roaring64.New()
		all.AddRange(0, uint64(m.file.Count()))
		for _, o := range old {
			all.AndNot(o)
		}
		if !all.IsEmpty() {
			r.groups = append(r.groups, removal{m: m, pos: all})
		}
	}
	return nil
}

// groupRead is a removal ready to read: its Loc.File, its footer, and
// the parent's equality deletes that already hid some of its rows.
type groupRead struct {
	removal
	fi    int
	lay   layout
	older []*eqDeletes
}

// prepareRemovals numbers the removed files in manifest order.
func (r *commitRun) prepareRemovals() ([]groupRead, error) {
	out := make([]groupRead, 0, len(r.groups))
	for _, g := range r.groups {
		gr := groupRead{removal: g, fi: r.fileIndex(g.m.path())}
		switch {
		case g.eq != nil:
			r.eqFile[gr.fi] = true
			r.pairedBy[gr.fi] = PairedByEqualityDelete
		case g.byVector:
			r.pairedBy[gr.fi] = PairedByDeletionVector
		default:
			r.pairedBy[gr.fi] = PairedByRemovedFile
		}
		for _, e := range r.oldEq {
			if e.appliesTo(g.m) {
				gr.older = append(gr.older, e)
			}
		}
		lay, err := r.layout(g.m)
		if err != nil {
			return nil, err
		}
		gr.lay = lay
		out = append(out, gr)
	}
	return out, nil
}

// read reads the removed rows of groups (row ids and before images) and
// the live rows of the added files that are not streamed, all files at
// once, then takes their rows in order: removals in manifest order, then
// added files in manifest order, each in position order.
func (r *commitRun) read(ctx context.Context, groups []groupRead, files []*addedFile) ([]lineage.Removed, []lineage.Added, error) {
	var held []*addedFile
	for _, f := range files {
		if !f.bulk {
			held = append(held, f)
		}
	}
	removedRows := make([][]fileRow, len(groups))
	addedIDs := make([][]lineage.Added, len(held))
	addedRows := make([][]fileRow, len(held))
	err := r.t.pool.each(ctx, len(groups)+len(held), func(i int) error {
		var err error
		if i < len(groups) {
			removedRows[i], err = r.scanRemoval(ctx, groups[i])
		} else {
			j := i - len(groups)
			addedIDs[j], addedRows[j], err = r.scanAdded(ctx, held[j])
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var removed []lineage.Removed
	for i, g := range groups {
		for _, fr := range removedRows[i] {
			if !matchesAny(g.eq, fr.row, true) || matchesAny(g.older, fr.row, false) {
				continue // not deleted now, or already deleted in the parent
			}
			loc := lineage.Loc{File: g.fi, Pos: fr.pos}
			r.images[loc] = fr.row
			removed = append(removed, lineage.Removed{RowID: fr.rowID, LUSN: fr.lusn, Loc: loc})
		}
	}
	var added []lineage.Added
	for j, f := range held {
		for _, fr := range addedRows[j] {
			r.images[lineage.Loc{File: f.fi, Pos: fr.pos}] = fr.row
		}
		added = append(added, addedIDs[j]...)
	}
	return removed, added, nil
}

// scanRemoval reads the rows of a removal's positions with their values.
func (r *commitRun) scanRemoval(ctx context.Context, g groupRead) ([]fileRow, error) {
	return r.t.scanFile(ctx, r.snap, r.sc, g.m, readOpts{lay: g.lay, positions: g.pos}, func(pos, _, _ int64, hasID bool) (bool, error) {
		return hasID && g.pos.Contains(uint64(pos)), nil
	})
}

// addedFile is one data file S added, ready to read.
type addedFile struct {
	m    dataFileMeta
	lay  layout
	dead *roaring64.Bitmap // positions deleted by a vector S added for it; nil: none
	live int64             // rows not deleted
	bulk bool              // streamed: a file that only inserts, in a commit too large to hold
	fi   int               // its Loc.File
}

// addedPlan is how S's added files are read.
type addedPlan struct {
	files []*addedFile
	// mayStream is set when the files that only insert hold more rows than
	// a commit holds: they are streamed unless a removed row id falls in
	// their ranges (see decide).
	mayStream bool
	fresh     *roaring64.Bitmap // the row ids of those files
}

func (p *addedPlan) streamed() bool {
	for _, f := range p.files {
		if f.bulk {
			return true
		}
	}
	return false
}

// addedReads lists the footers and vectors of S's added data files.
func (r *commitRun) addedReads() ([]dataFileMeta, []dvRead) {
	dvOf := map[string]iceberg.ManifestEntry{}
	for _, e := range r.d.addedDVs {
		dvOf[*e.DataFile().ReferencedDataFile()] = e
	}
	var files []dataFileMeta
	var dvs []dvRead
	for _, e := range r.d.addedData {
		m := metaOf(e)
		files = append(files, m)
		if de, ok := dvOf[m.path()]; ok {
			dvs = append(dvs, dvRead{de, m.file.Count()})
		}
	}
	return files, dvs
}

// planAdded reads the footers of S's added files and picks the candidates
// for streaming their inserts rather than holding them. A file qualifies
// when it stores no lineage and has S's sequence number (an append: every
// row is an insert with a fresh row id), and only when such rows exceed
// MaxHeldRows and no equality-delete upsert needs pairing (that needs
// every insert's key); decide settles it once the removed rows are known.
func (r *commitRun) planAdded(ctx context.Context, keyFields []string) (*addedPlan, error) {
	files, dvs := r.addedReads()
	if err := r.t.prefetch(ctx, r.pf, r.fs, files, dvs); err != nil {
		return nil, err
	}
	dvOf := map[string]iceberg.ManifestEntry{}
	for _, e := range r.d.addedDVs {
		dvOf[*e.DataFile().ReferencedDataFile()] = e
	}
	seq := r.snap.SequenceNumber
	plan := &addedPlan{fresh: roaring64.New()}
	var pure int64
	for _, e := range r.d.addedData {
		m := metaOf(e)
		if m.firstRowID == nil {
			return nil, fmt.Errorf("snapshot %d: data file %s has no first_row_id in a snapshot with row lineage", r.snap.SnapshotID, m.path())
		}
		lay, err := r.layout(m)
		if err != nil {
			return nil, err
		}
		f := &addedFile{m: m, lay: lay, live: m.file.Count()}
		if de, ok := dvOf[m.path()]; ok {
			bm, err := r.vector(de, m.file.Count())
			if err != nil {
				return nil, err
			}
			f.dead = bm
			f.live -= int64(bm.GetCardinality())
		}
		if !lay.storesRowID && !lay.storesLUSN && m.dataSeq == seq && len(lay.rows) > 0 {
			f.bulk = true // a candidate
			pure += f.live
			plan.fresh.AddRange(uint64(*m.firstRowID), uint64(*m.firstRowID+m.file.Count()))
		}
		plan.files = append(plan.files, f)
	}
	plan.mayStream = pure > int64(r.t.maxHeldRows()) && !(len(keyPositions(r.sc, keyFields)) > 0 && len(r.eqFile) > 0)
	for _, f := range plan.files {
		f.bulk = f.bulk && plan.mayStream
		f.fi = r.fileIndex(f.m.path())
	}
	return plan, nil
}

// decide streams the candidate files unless a removed row id falls in
// their ranges (then the commit is an update of those rows, held whole).
func (p *addedPlan) decide(removed []lineage.Removed) {
	for _, x := range removed {
		if p.fresh.Contains(uint64(x.RowID)) {
			for _, f := range p.files {
				f.bulk = false
			}
			return
		}
	}
}

// scanAdded reads the live rows of a file S added that it does not
// stream: row ids and lusn of all, values of those changed by S (lusn ==
// s).
func (r *commitRun) scanAdded(ctx context.Context, f *addedFile) ([]lineage.Added, []fileRow, error) {
	seq := r.snap.SequenceNumber
	m, lay, dead, fi := f.m, f.lay, f.dead, f.fi
	var err error
	var ids []lineage.Added
	var changed *roaring64.Bitmap // positions with lusn == s found by a narrow read
	collect := func(values bool) rowVisitor {
		return func(pos, id, lusn int64, hasID bool) (bool, error) {
			if dead != nil && dead.Contains(uint64(pos)) {
				return false, nil
			}
			if !hasID {
				return false, fmt.Errorf("row at position %d has no row id", pos)
			}
			ids = append(ids, lineage.Added{RowID: id, LUSN: lusn, Loc: lineage.Loc{File: fi, Pos: pos}})
			if lusn == seq && !values {
				if changed == nil {
					changed = roaring64.New()
				}
				changed.Add(uint64(pos))
			}
			return values && lusn == seq, nil
		}
	}
	// A file that stores no lusn (an append) changed every row: one full
	// read. One that stores it (copy-on-write, compaction carried rows) is
	// read narrow first, then in full only where rows changed.
	oneRead := !lay.storesLUSN && m.dataSeq == seq
	var rows []fileRow
	if oneRead {
		rows, err = r.t.scanFile(ctx, r.snap, r.sc, m, readOpts{lay: lay}, collect(true))
	} else if _, err = r.t.scanFile(ctx, r.snap, r.sc, m, readOpts{lay: lay, narrow: true}, collect(false)); err == nil && changed != nil {
		rows, err = r.t.scanFile(ctx, r.snap, r.sc, m, readOpts{lay: lay, positions: changed}, func(pos, _, _ int64, _ bool) (bool, error) {
			return changed.Contains(uint64(pos)), nil
		})
	}
	if err != nil {
		return nil, nil, err
	}
	return ids, rows, nil
}

// streamInserts makes the insert phase of c a stream: for each added file
// in manifest order, its held inserts, or for a streamed file its live
// rows read a record batch at a time.
func (r *commitRun) streamInserts(c *cdc.Commit, plan *addedPlan, ins []cdc.Event, insLoc []lineage.Loc) {
	byFile := map[int][]cdc.Event{}
	for i, e := range ins {
		byFile[insLoc[i].File] = append(byFile[insLoc[i].File], e)
	}
	total := len(c.Events)
	for _, f := range plan.files {
		if f.bulk {
			total += int(f.live)
		} else {
			total += len(byFile[f.fi])
		}
	}
	c.Total = total
	t, snap, sc, seq := r.t, r.snap, r.sc, r.snap.SequenceNumber
	c.Rest = func(ctx context.Context, from int, yield func([]cdc.Event) error) error {
		idx := len(c.Events)
		for _, f := range plan.files {
			if !f.bulk {
				evs := byFile[f.fi]
				if skip := from - idx; skip < len(evs) {
					evs = evs[max(skip, 0):]
					for k := range evs {
						evs[k].Index = idx + (len(byFile[f.fi]) - len(evs)) + k
					}
					if err := yield(evs); err != nil {
						return err
					}
				}
				idx += len(byFile[f.fi])
				continue
			}
			start := idx
			idx += int(f.live)
			if idx <= from {
				continue
			}
			live := roaring64.New()
			live.AddRange(0, uint64(f.m.file.Count()))
			if f.dead != nil {
				live.AndNot(f.dead)
			}
			skip := max(from-start, 0)
			check := func(fr fileRow) error {
				if fr.lusn != seq {
					return fmt.Errorf("data file %s position %d: lusn %d in a file that only inserts at %d", f.m.path(), fr.pos, fr.lusn, seq)
				}
				return nil
			}
			lr := liveRows{snap: snap, sc: sc, m: f.m, lay: f.lay, live: live, op: cdc.OpCreate, check: check}
			next, err := t.streamLive(ctx, lr, skip, start+skip, yield)
			if err != nil {
				return err
			}
			if next != idx {
				return fmt.Errorf("data file %s: streamed %d rows, expected %d", f.m.path(), next-start-skip, idx-start-skip)
			}
		}
		return nil
	}
}

// events turns classified changes into events in contract order: the
// deletes and updates, and the inserts with their locations. An update
// that changes the key is a delete and an insert, as Debezium emits it;
// where the table is keyed, a delete and an insert of one key are one
// update (pairUpserts).
func (r *commitRun) events(changes []lineage.Change, keyFields []string) ([]cdc.Event, []cdc.Event, []lineage.Loc) {
	keyIdx := keyPositions(r.sc, keyFields)
	var dels, ups, ins []cdc.Event
	var delLoc, insLoc []lineage.Loc
	// the deletes and inserts that are rows leaving and arriving (not the
	// halves of a key change): the ones pairUpserts may pair
	var delRow, insRow []bool
	for _, ch := range changes {
		switch ch.Kind {
		case lineage.Delete:
			dels = append(dels, cdc.Event{Op: cdc.OpDelete, RowID: ch.RowID, LUSN: ch.LUSN, Before: r.images[ch.Before]})
			delLoc, delRow = append(delLoc, ch.Before), append(delRow, true)
		case lineage.Update:
			before, after := r.images[ch.Before], r.images[ch.After]
			if keyChanged(before, after, keyIdx) {
				dels = append(dels, cdc.Event{Op: cdc.OpDelete, RowID: ch.RowID, LUSN: ch.LUSN, Before: before})
				delLoc, delRow = append(delLoc, ch.Before), append(delRow, false)
				ins = append(ins, cdc.Event{Op: cdc.OpCreate, RowID: ch.RowID, LUSN: ch.LUSN, After: after})
				insLoc, insRow = append(insLoc, ch.After), append(insRow, false)
				continue
			}
			ups = append(ups, cdc.Event{Op: cdc.OpUpdate, RowID: ch.RowID, LUSN: ch.LUSN, Before: before, After: after})
		case lineage.Insert:
			ins = append(ins, cdc.Event{Op: cdc.OpCreate, RowID: ch.RowID, LUSN: ch.LUSN, After: r.images[ch.After]})
			insLoc, insRow = append(insLoc, ch.After), append(insRow, true)
		}
	}
	if len(keyIdx) > 0 {
		d, i := halves{dels, delLoc, delRow}, halves{ins, insLoc, insRow}
		d, ups, i = r.pairUpserts(keyIdx, d, ups, i)
		dels, delLoc, ins, insLoc = d.evs, d.locs, i.evs, i.locs
	}
	sortByLoc(dels, delLoc)
	insLoc = sortByLoc(ins, insLoc)
	return append(dels, ups...), ins, insLoc
}

// sortByLoc orders events by (file in manifest order, position) and
// returns their locations in the new order.
func sortByLoc(evs []cdc.Event, locs []lineage.Loc) []lineage.Loc {
	idx := make([]int, len(evs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := cmp.Compare(locs[a].File, locs[b].File); c != 0 {
			return c
		}
		return cmp.Compare(locs[a].Pos, locs[b].Pos)
	})
	sorted := make([]cdc.Event, len(evs))
	sortedLoc := make([]lineage.Loc, len(evs))
	for i, j := range idx {
		sorted[i], sortedLoc[i] = evs[j], locs[j]
	}
	copy(evs, sorted)
	return sortedLoc
}

func keyPositions(sc *iceberg.Schema, keys []string) []int {
	var out []int
	for _, k := range keys {
		for i, f := range sc.Fields() {
			if f.Name == k {
				out = append(out, i)
			}
		}
	}
	return out
}

func keyChanged(before, after values.Row, idx []int) bool {
	for _, i := range idx {
		if !values.ValueEqual(before[i], after[i]) {
			return true
		}
	}
	return false
}

// The envelope's source markers of an update paired from a delete and an
// insert of one key in one snapshot, by how the old row was removed: an
// equality delete (Flink, Kafka Connect upserts), a deletion vector (a
// writer that deletes the old row by position and writes a fresh row with
// a new row id: OLake, RisingWave, DV-based upsert sinks), or the removal
// of its data file (a copy-on-write rewrite).
const (
	PairedByEqualityDelete = "equality-delete"
	PairedByDeletionVector = "deletion-vector"
	PairedByRemovedFile    = "removed-file"
)

// pairUpserts turns a delete of a row leaving the table and an insert of a
// new row with an equal key in the same snapshot into one update, as an
// upsert means it. The update carries the new row id and names the
// removed one. Keys deleted or inserted twice pair at most once; an
// insert whose key two new rows share pairs with none. delRow and insRow
// say which deletes and inserts are rows leaving and arriving (false: the
// halves of an update that changed the key, never paired).
func (r *commitRun) pairUpserts(keyIdx []int, dh halves, ups []cdc.Event, ih halves) (halves, []cdc.Event, halves) {
	dels, delLoc, delRow := dh.evs, dh.locs, dh.rows
	ins, insLoc, insRow := ih.evs, ih.locs, ih.rows
	byKey := map[string]int{}
	for i, e := range ins {
		if !insRow[i] {
			continue
		}
		k := keyOf(e.After, keyIdx)
		if _, dup := byKey[k]; dup {
			byKey[k] = -1 // two inserts with one key: pair neither
			continue
		}
		byKey[k] = i
	}
	paired := map[int]bool{}
	var keptDels []cdc.Event
	var keptLoc []lineage.Loc
	for i, d := range dels {
		j, ok := byKey[keyOf(d.Before, keyIdx)]
		if !ok || j < 0 || paired[j] || !delRow[i] {
			keptDels = append(keptDels, d)
			keptLoc = append(keptLoc, delLoc[i])
			continue
		}
		paired[j] = true
		c := ins[j]
		ups = append(ups, cdc.Event{Op: cdc.OpUpdate, RowID: c.RowID, LUSN: c.LUSN, Before: d.Before, After: c.After,
			Source: r.pairedBy[delLoc[i].File], PairedRowID: d.RowID})
	}
	var keptIns []cdc.Event
	var keptInsLoc []lineage.Loc
	for j, c := range ins {
		if !paired[j] {
			keptIns = append(keptIns, c)
			keptInsLoc = append(keptInsLoc, insLoc[j])
		}
	}
	return halves{evs: keptDels, locs: keptLoc}, ups, halves{evs: keptIns, locs: keptInsLoc}
}

// halves are a commit's deletes or inserts, with their locations; rows
// says which are rows leaving or arriving (see pairUpserts).
type halves struct {
	evs  []cdc.Event
	locs []lineage.Loc
	rows []bool
}

// recoverAs turns a panic into an error naming the object being read.
func recoverAs(err *error, format string, args ...any) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: malformed input (panic in a decoder: %v)", fmt.Sprintf(format, args...), p)
	}
}
