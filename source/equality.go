package source

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/values"
)

// eqDeletes is the content of one equality-delete file: the key tuples it
// deletes, on which top-level fields, at which sequence number and in
// which partition.
type eqDeletes struct {
	path      string
	fieldIdx  []int // positions of the equality fields among the schema's top-level fields
	keys      map[string]struct{}
	seq       int64
	specID    int32
	partition map[int]any
	global    bool // an unpartitioned delete applies to every partition
	// Per equality field, the range of its key values, to skip data files
	// whose column bounds exclude every key (see mayMatch).
	ranges []keyRange
	// The key tuples themselves while there are few (nil past
	// maxTupleKeys): with several fields, a file can fall inside every
	// field's range and still hold no key tuple.
	tuples [][]any
}

// keyRange is the smallest and largest value one equality field takes in a
// delete file's keys; off when a key is null (nulls are outside bounds) or
// of a type without an order here.
type keyRange struct {
	fieldID  int
	min, max any
	off      bool
}

// maxTupleKeys bounds the key tuples kept per delete file for pruning: the
// check costs keys × fields per candidate file.
const maxTupleKeys = 1024

// appliesTo reports whether the delete can remove rows of data file m:
// only files with a strictly lower data sequence number, in its partition.
func (e *eqDeletes) appliesTo(m dataFileMeta) bool {
	if m.dataSeq >= e.seq {
		return false
	}
	if e.global {
		return true
	}
	if m.file.SpecID() != e.specID {
		return false
	}
	return fmt.Sprint(m.file.Partition()) == fmt.Sprint(e.partition)
}

// matches reports whether row (in schema order) equals one of the keys.
func (e *eqDeletes) matches(row values.Row) bool {
	_, ok := e.keys[keyOf(row, e.fieldIdx)]
	return ok
}

// keyOf renders the values at idx canonically; null equals null, as the
// spec says for equality deletes.
func keyOf(row values.Row, idx []int) string {
	var b strings.Builder
	for _, i := range idx {
		fmt.Fprintf(&b, "%T:%v\x00", row[i], row[i])
	}
	return b.String()
}

// eqIndex is the equality-delete index: the equality delete files read,
// by path, and the column statistics that confirm a data file cannot
// match them (see confirmPrunes).
type eqIndex struct {
	eq    *eqCache
	stats *statsCache
}

// eqCache holds decoded equality-delete files by path (they are
// immutable). It is safe for concurrent use.
type eqCache struct {
	mu    sync.Mutex
	files map[string]*eqDeletes
}

// warm makes the index if it is not made yet.
func (x *eqIndex) warm() {
	if x.eq == nil {
		x.eq, x.stats = newEqCache(), newStatsCache()
	}
}

// drop forgets the index (Idle).
func (x *eqIndex) drop() { x.eq, x.stats = nil, nil }

func newEqCache() *eqCache { return &eqCache{files: map[string]*eqDeletes{}} }

func (c *eqCache) get(path string) (*eqDeletes, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.files[path]
	return e, ok
}

func (c *eqCache) put(e *eqDeletes) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files[e.path] = e
}

// loadEqs reads the equality-delete files of es not cached yet,
// concurrently; the callers load them in order afterwards, from the cache
// or, for a file whose read failed, meeting its error there.
func (t *eqIndex) loadEqs(ctx context.Context, at eqRead, es []iceberg.ManifestEntry) error {
	var todo []iceberg.ManifestEntry
	seen := map[string]bool{}
	for _, e := range es {
		p := e.DataFile().FilePath()
		if _, ok := t.eq.get(p); !ok && !seen[p] {
			seen[p] = true
			todo = append(todo, e)
		}
	}
	return at.rd.pool.each(ctx, len(todo), func(i int) error {
		t.loadEq(ctx, at, todo[i])
		return nil
	})
}

// loadEqSet loads the equality-delete files of es in order, read
// concurrently first (loadEqs).
func (t *eqIndex) loadEqSet(ctx context.Context, at eqRead, es []iceberg.ManifestEntry) ([]*eqDeletes, error) {
	if err := t.loadEqs(ctx, at, es); err != nil {
		return nil, err
	}
	var sets []*eqDeletes
	for _, e := range es {
		ed, err := t.loadEq(ctx, at, e)
		if err != nil {
			return nil, err
		}
		sets = append(sets, ed)
	}
	return sets, nil
}

// eqRead is where equality-delete files are read: through a reader, at a
// snapshot, with its schema; specs tells the unpartitioned specs.
type eqRead struct {
	rd    *fileReader
	snap  *table.Snapshot
	sc    *iceberg.Schema
	specs func(int32) bool
}

// eqAt is the eqRead of the loaded table at snap.
func (t *Table) eqAt(snap *table.Snapshot, sc *iceberg.Schema) eqRead {
	return eqRead{rd: &t.fileReader, snap: snap, sc: sc, specs: t.unpartitioned()}
}

// loadEq reads an equality-delete file with iceberg-go's reader, projected
// on its equality fields, so values come out typed like data rows.
func (t *eqIndex) loadEq(ctx context.Context, at eqRead, e iceberg.ManifestEntry) (_ *eqDeletes, err error) {
	df := e.DataFile()
	sc := at.sc
	if c, ok := t.eq.get(df.FilePath()); ok {
		return c, nil
	}
	defer recoverAs(&err, "equality delete file %s", df.FilePath())
	ed := &eqDeletes{path: df.FilePath(), keys: map[string]struct{}{}, seq: e.SequenceNum(), specID: df.SpecID(), partition: df.Partition()}
	ed.global = at.specs(df.SpecID())
	var names []string
	for _, id := range df.EqualityFieldIDs() {
		f, ok := sc.FindFieldByID(id)
		if !ok {
			return nil, fmt.Errorf("equality delete file %s: field id %d not in schema %d", df.FilePath(), id, sc.ID)
		}
		pos := -1
		for i, top := range sc.Fields() {
			if top.ID == id {
				pos = i
			}
		}
		if pos < 0 {
			return nil, fmt.Errorf("equality delete file %s: field %s is nested; only top-level equality fields are supported", df.FilePath(), f.Name)
		}
		names = append(names, f.Name)
		ed.fieldIdx = append(ed.fieldIdx, pos)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("equality delete file %s: no equality field ids", df.FilePath())
	}
	for _, id := range df.EqualityFieldIDs() {
		ed.ranges = append(ed.ranges, keyRange{fieldID: id})
	}
	scan := at.rd.reader.Scan(table.WithSnapshotID(at.snap.SnapshotID), table.WithSelectedFields(names...))
	_, it, err := scan.ReadTasks(ctx, []table.FileScanTask{{File: df, Start: 0, Length: df.FileSizeBytes()}})
	if err != nil {
		return nil, fileError("read", "equality delete file", df.FilePath(), err)
	}
	fields := sc.Fields()
	var rows int64
	for rec, err := range it {
		if err != nil {
			return nil, fileError("read", "equality delete file", df.FilePath(), err)
		}
		rows += rec.NumRows()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make(values.Row, len(fields))
			for k, pos := range ed.fieldIdx {
				idx := rec.Schema().FieldIndices(names[k])
				if len(idx) == 0 {
					rec.Release()
					return nil, fmt.Errorf("equality delete file %s: no column %s", df.FilePath(), names[k])
				}
				v, err := valueAt(rec.Column(idx[0]), i, fields[pos].Type)
				if err != nil {
					rec.Release()
					return nil, fmt.Errorf("equality delete file %s: %w", df.FilePath(), err)
				}
				row[pos] = v
			}
			k := keyOf(row, ed.fieldIdx)
			if _, dup := ed.keys[k]; !dup {
				ed.keys[k] = struct{}{}
				ed.widen(row)
			}
		}
		rec.Release()
	}
	// The scan reads the byte range file_size_in_bytes says: a manifest
	// that lies about it or about the rows must not drop deletes silently.
	if rows != df.Count() {
		return nil, fmt.Errorf("equality delete file %s: manifest record_count %d disagrees with the %d rows read", df.FilePath(), df.Count(), rows)
	}
	t.eq.put(ed)
	return ed, nil
}

// liveDataFiles lists the data files live in a manifest list, reading its
// data manifests concurrently. Equality deletes name no file, so every file
// of their partition is a candidate; nextRowID bounds their row ids (see
// checkEntry).
func (t *Table) liveDataFiles(ctx context.Context, fs iceio.IO, list []iceberg.ManifestFile, nextRowID int64) ([]dataFileMeta, error) {
	var ms []iceberg.ManifestFile
	for _, m := range list {
		if m.ManifestContent() == iceberg.ManifestContentData {
			ms = append(ms, m)
		}
	}
	// Only the pruning statistics (bounds) are needed, not sizes.
	reads, err := t.readManifests(ctx, ms, func(m iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error] {
		return iceberg.EntriesWithProjection(fs, m, true, iceberg.ManifestEntryProjection{IncludePruningStats: true})
	}, nil)
	if err != nil {
		return nil, err
	}
	var out []dataFileMeta
	t.loadIndex()
	for i, m := range ms {
		im := newIndexedManifest(m)
		for _, e := range reads[i].entries {
			if err := checkEntry(e, nextRowID); err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			dm := metaOf(e)
			out = append(out, dm)
			im = im.addFile(dm)
		}
		if err := reads[i].err; err != nil {
			return nil, decodeError("manifest", m.FilePath(), err)
		}
		if im != nil {
			t.files.add(im)
		}
	}
	return out, nil
}

// matchesAny reports whether any of sets matches row; with no sets it
// returns empty.
func matchesAny(sets []*eqDeletes, row values.Row, empty bool) bool {
	if len(sets) == 0 {
		return empty
	}
	for _, e := range sets {
		if e.matches(row) {
			return true
		}
	}
	return false
}

// collectEqualityRemovals adds, for S's equality deletes, the rows of older
// data files they match. Equality deletes name no file: every live file of
// their partition with a lower data sequence number is read.
func (r *commitRun) collectEqualityRemovals(ctx context.Context) error {
	if len(r.d.addedEq) == 0 {
		return nil
	}
	sets, err := r.t.loadEqSet(ctx, r.t.eqAt(r.snap, r.sc), r.d.addedEq)
	if err != nil {
		return err
	}
	er, err := r.eqCandidates(ctx, sets)
	if err != nil {
		return err
	}
	if len(er.order) == 0 {
		return nil
	}
	if err := r.candidateDeletes(ctx, er); err != nil {
		return err
	}
	return r.appendEqRemovals(er)
}

// eqRemovals is what collectEqualityRemovals gathers, a step at a time.
type eqRemovals struct {
	order   []dataFileMeta          // the files S's equality deletes may match, in manifest order
	applies map[string][]*eqDeletes // the deletes that can match each of them, in S's order
	olds    map[string]oldDeletes   // the parent's deletes of each of them
}

// eqCandidates finds the live files, neither added nor removed by S,
// that S's equality deletes sets may match: by their partition and
// manifest bounds, then, for those the bounds rule out, by their own
// statistics (confirmPrunes).
func (r *commitRun) eqCandidates(ctx context.Context, sets []*eqDeletes) (*eqRemovals, error) {
	skip := map[string]bool{}
	for _, e := range r.d.addedData {
		skip[e.DataFile().FilePath()] = true
	}
	for _, e := range r.d.removedData {
		skip[e.DataFile().FilePath()] = true
	}
	live, err := r.t.liveDataFiles(ctx, r.fs, r.d.list, r.t.nextRowID())
	if err != nil {
		return nil, err
	}
	applies := map[string][]*eqDeletes{}  // the deletes that can match each candidate
	ruledOut := map[string][]*eqDeletes{} // the deletes only the manifest bounds rule out
	var check []dataFileMeta
	for _, m := range live {
		if skip[m.path()] {
			continue
		}
		for _, s := range sets {
			switch {
			case !s.appliesTo(m):
			case s.mayMatch(m, r.sc):
				applies[m.path()] = append(applies[m.path()], s)
			case len(s.keys) > 0:
				if ruledOut[m.path()] == nil {
					check = append(check, m)
				}
				ruledOut[m.path()] = append(ruledOut[m.path()], s)
			}
		}
	}
	if err := r.confirmPrunes(ctx, check, ruledOut, applies); err != nil {
		return nil, err
	}
	rank := map[*eqDeletes]int{}
	for i, s := range sets {
		rank[s] = i
	}
	for _, m := range check {
		slices.SortFunc(applies[m.path()], func(a, b *eqDeletes) int { return rank[a] - rank[b] })
	}
	er := &eqRemovals{applies: applies}
	for _, m := range live {
		if !skip[m.path()] && len(applies[m.path()]) > 0 {
			er.order = append(er.order, m)
		}
	}
	return er, nil
}

// candidateDeletes finds the parent's deletes of the candidates and
// reads ahead, concurrently, their footers and vectors.
func (r *commitRun) candidateDeletes(ctx context.Context, er *eqRemovals) error {
	if r.parentHasDeletes() {
		cands := map[string]dataFileMeta{}
		for _, m := range er.order {
			cands[m.path()] = m
		}
		live, err := r.parentLiveDeletes(ctx)
		if err != nil {
			return err
		}
		if er.olds, err = r.t.lookupDeletes(ctx, r.fs, live, cands, true, r.t.mayHaveV2Deletes()); err != nil {
			return err
		}
	}
	var dvs []dvRead
	for _, m := range er.order {
		if e := er.olds[m.path()].dv; e != nil {
			dvs = append(dvs, dvRead{e, m.file.Count()})
		}
	}
	return r.t.prefetch(ctx, r.pf, r.fs, er.order, dvs)
}

// appendEqRemovals adds a removal for each candidate's live rows, those
// the equality deletes that apply to it keep; rows that S's own new
// vectors removed are already accounted for.
func (r *commitRun) appendEqRemovals(er *eqRemovals) error {
	byDV := map[string]*roaring64.Bitmap{}
	for _, g := range r.groups {
		byDV[g.m.path()] = g.pos
	}
	for _, m := range er.order {
		if _, err := r.layout(m); err != nil {
			return err
		}
		pos := roaring64.New()
		pos.AddRange(0, uint64(m.file.Count()))
		if e := er.olds[m.path()].dv; e != nil {
			bm, err := r.vector(e, m.file.Count())
			if err != nil {
				return err
			}
			pos.AndNot(bm)
		}
		if p := er.olds[m.path()].pos; p != nil {
			pos.AndNot(p)
		}
		if p := byDV[m.path()]; p != nil {
			pos.AndNot(p)
		}
		if !pos.IsEmpty() {
			r.groups = append(r.groups, removal{m: m, pos: pos, eq: er.applies[m.path()]})
		}
	}
	return nil
}

// confirmPrunes checks the files whose manifest bounds rule out some of
// S's equality deletes against their own statistics (confirmPrune),
// reading their footers concurrently; a delete the statistics do not rule
// out is added to the file's applies. A file's statistics, once read, are
// kept for later commits (Table.stats).
func (r *commitRun) confirmPrunes(ctx context.Context, files []dataFileMeta, ruledOut, applies map[string][]*eqDeletes) error {
	var read []dataFileMeta
	for _, m := range files {
		if _, ok := r.t.stats.get(keyOfLayout(m)); !ok {
			read = append(read, m)
		}
	}
	if err := r.t.prefetch(ctx, r.pf, r.fs, read, nil); err != nil {
		return err
	}
	for _, m := range files {
		lay, ok := r.t.stats.get(keyOfLayout(m))
		if !ok {
			var err error
			if lay, err = r.layout(m); err != nil {
				return err
			}
			r.t.stats.put(keyOfLayout(m), layout{stats: lay.stats})
		}
		for _, s := range ruledOut[m.path()] {
			out, err := s.confirmPrune(m, lay, r.sc)
			if err != nil {
				return err
			}
			if !out {
				applies[m.path()] = append(applies[m.path()], s)
			}
		}
	}
	return nil
}

// loadParentEq loads the equality deletes live in the parent, which hide
// rows of older files from live(P), when the parent has any.
func (r *commitRun) loadParentEq(ctx context.Context) error {
	if r.snap.ParentSnapshotID == nil || len(r.groups) == 0 {
		return nil
	}
	p := r.t.tbl.Metadata().SnapshotByID(*r.snap.ParentSnapshotID)
	if p != nil && p.Summary != nil {
		if v, ok := p.Summary.Properties["total-equality-deletes"]; ok && v == "0" {
			return nil
		}
		if v, ok := p.Summary.Properties["total-delete-files"]; ok && v == "0" {
			return nil
		}
	}
	live, err := r.parentLiveDeletes(ctx)
	if err != nil {
		return err
	}
	var eqs []iceberg.ManifestEntry
	for _, e := range live {
		if e.DataFile().ContentType() == iceberg.EntryContentEqDeletes {
			eqs = append(eqs, e)
		}
	}
	if err := r.t.loadEqs(ctx, r.t.eqAt(r.snap, r.sc), eqs); err != nil {
		return err
	}
	for _, e := range eqs {
		ed, err := r.t.loadEq(ctx, r.t.eqAt(r.snap, r.sc), e)
		if err != nil {
			return err
		}
		r.oldEq = append(r.oldEq, ed)
	}
	return nil
}

// widen extends the per-field key ranges, and the kept tuples, with the
// equality fields of row.
func (e *eqDeletes) widen(row values.Row) {
	tuple := make([]any, len(e.fieldIdx))
	for k, pos := range e.fieldIdx {
		v := row[pos]
		tuple[k] = v
		r := &e.ranges[k]
		switch {
		case r.off:
		case v == nil || !ordered(v):
			r.off = true
		case r.min == nil:
			r.min, r.max = v, v
		default:
			if less(v, r.min) {
				r.min = v
			}
			if less(r.max, v) {
				r.max = v
			}
		}
	}
	switch {
	case len(e.keys) > maxTupleKeys:
		e.tuples = nil
	case len(e.fieldIdx) > 1:
		e.tuples = append(e.tuples, tuple)
	}
}

func ordered(v any) bool {
	switch v.(type) {
	case int32, int64, string, values.Date:
		return true
	}
	return false
}

func less(a, b any) bool {
	switch x := a.(type) {
	case int32:
		return x < b.(int32)
	case int64:
		return x < b.(int64)
	case string:
		return x < b.(string)
	case values.Date:
		return x < b.(values.Date)
	}
	return false
}

// fileBounds is a data file's lower and upper bound of one equality field,
// decoded into the Go type of the field's keys; ok is false where the file
// has no usable bounds for it.
type fileBounds struct {
	lo, hi any
	ok     bool
}

// mayMatch reports whether data file m can hold a row the delete matches,
// judged by m's lower and upper bounds of the equality fields in its
// manifest entry (see excludes). A file it rules out is only skipped once
// the file's own statistics agree (confirmPrune).
func (e *eqDeletes) mayMatch(m dataFileMeta, sc *iceberg.Schema) bool {
	if len(e.keys) == 0 {
		return false // a delete file with no rows deletes nothing
	}
	bounds := make([]fileBounds, len(e.ranges))
	for k, r := range e.ranges {
		if r.off || r.min == nil {
			continue
		}
		f, ok := sc.FindFieldByID(r.fieldID)
		if !ok {
			continue
		}
		lo, hasLo := m.file.LowerBoundValues()[r.fieldID]
		hi, hasHi := m.file.UpperBoundValues()[r.fieldID]
		if !hasLo || !hasHi {
			continue
		}
		lower, err1 := boundValue(f.Type, lo, r.min)
		upper, err2 := boundValue(f.Type, hi, r.min)
		if err1 != nil || err2 != nil {
			continue
		}
		bounds[k] = fileBounds{lower, upper, true}
	}
	return !e.excludes(bounds)
}

// excludes reports whether a file with these bounds of the equality fields
// holds no row the delete matches: on some field the keys' range misses
// the file's bounds, or, with several fields and few keys, every key tuple
// lies outside the bounds on some field. Fields without bounds, or with
// keys it cannot order, rule out nothing.
func (e *eqDeletes) excludes(bounds []fileBounds) bool {
	for k, r := range e.ranges {
		b := bounds[k]
		if !b.ok || r.off || r.min == nil {
			continue
		}
		// Truncated string bounds still enclose every value (the lower
		// one is a prefix, the upper one is rounded up), so this holds.
		if less(b.hi, r.min) || less(r.max, b.lo) {
			return true
		}
	}
	if e.tuples == nil {
		return false
	}
	for _, t := range e.tuples {
		if tupleWithin(t, bounds) {
			return false
		}
	}
	return true
}

// confirmPrune checks a file that m's manifest bounds rule out (mayMatch)
// against the file's own statistics, read from its footer (lay): the
// bounds are metadata, and a bound that excludes a value the file holds
// would lose the delete's events without a trace. The file is skipped only
// when its statistics rule it out too; when they cannot (no statistics,
// or a range that truncated strings widened), it is read. A manifest bound
// that an exact statistic contradicts (a lower bound above the file's
// smallest int or long, an upper one below its largest) is an error.
func (e *eqDeletes) confirmPrune(m dataFileMeta, lay layout, sc *iceberg.Schema) (bool, error) {
	if len(e.keys) == 0 {
		return true, nil
	}
	bounds := make([]fileBounds, len(e.ranges))
	for k, r := range e.ranges {
		st, ok := lay.stats[r.fieldID]
		if !ok || r.off || r.min == nil {
			continue
		}
		lo, ok1 := statValue(st.min, r.min)
		hi, ok2 := statValue(st.max, r.min)
		if !ok1 || !ok2 {
			continue
		}
		bounds[k] = fileBounds{lo, hi, true}
		f, ok := sc.FindFieldByID(r.fieldID)
		if !st.exact || !ok {
			continue
		}
		for _, side := range []struct {
			key   string
			raw   map[int][]byte
			stat  any
			wrong func(bound any) bool
			what  string
		}{
			{"lower_bounds", m.file.LowerBoundValues(), lo, func(b any) bool { return less(lo, b) }, "above the file's smallest value"},
			{"upper_bounds", m.file.UpperBoundValues(), hi, func(b any) bool { return less(b, hi) }, "below the file's largest value"},
		} {
			raw, ok := side.raw[r.fieldID]
			if !ok {
				continue
			}
			if b, err := boundValue(f.Type, raw, r.min); err == nil && side.wrong(b) {
				return false, fmt.Errorf("data file %s: manifest %s of column %s (field id %d) is %v, %s %v (by its Parquet statistics): "+
					"the bound would hide the file's rows from equality delete file %s", m.path(), side.key, f.Name, r.fieldID, b, side.what, side.stat, e.path)
			}
		}
	}
	return e.excludes(bounds), nil
}

// statValue is a Parquet statistic in the Go type of the keys like.
func statValue(v, like any) (any, bool) {
	switch like.(type) {
	case int32:
		x, ok := v.(int32)
		return x, ok
	case int64:
		x, ok := v.(int64)
		return x, ok
	case string:
		x, ok := v.(string)
		return x, ok
	case values.Date:
		x, ok := v.(int32)
		return values.Date(x), ok
	}
	return nil, false
}

// tupleWithin reports whether every value of tuple lies inside the bounds of
// its field, where the field has bounds.
func tupleWithin(tuple []any, bounds []fileBounds) bool {
	for k, b := range bounds {
		if !b.ok {
			continue
		}
		// A value that could not be ordered turned pruning off on its
		// field, so b.ok is false for it.
		if less(tuple[k], b.lo) || less(b.hi, tuple[k]) {
			return false
		}
	}
	return true
}

// boundValue decodes a manifest bound into the Go type of like.
func boundValue(typ iceberg.Type, b []byte, like any) (any, error) {
	lit, err := iceberg.LiteralFromBytes(typ, b)
	if err != nil {
		return nil, err
	}
	switch l := lit.(type) {
	case iceberg.Int32Literal:
		if _, ok := like.(int32); ok {
			return int32(l), nil
		}
	case iceberg.Int64Literal:
		if _, ok := like.(int64); ok {
			return int64(l), nil
		}
	case iceberg.StringLiteral:
		if _, ok := like.(string); ok {
			return string(l), nil
		}
	case iceberg.DateLiteral:
		if _, ok := like.(values.Date); ok {
			return values.Date(l), nil
		}
	}
	return nil, fmt.Errorf("bound of type %s for key %T", typ, like)
}

// statsCache keeps the column statistics of data files read to confirm a
// prune (confirmPrunes), by file as its manifest entry describes it, so
// that later commits prune the same file without reading its footer
// again; least recently used out first. It is safe for concurrent use.
type statsCache struct {
	mu  sync.Mutex
	lru *simplelru.LRU[layoutKey, layout]
}

// statsCacheSize bounds the files statsCache keeps (a few hundred bytes
// each).
const statsCacheSize = 1 << 15

func newStatsCache() *statsCache {
	lru, _ := simplelru.NewLRU[layoutKey, layout](statsCacheSize, nil)
	return &statsCache{lru: lru}
}

func (c *statsCache) get(k layoutKey) (layout, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(k)
}

func (c *statsCache) put(k layoutKey, l layout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Add(k, l)
}
