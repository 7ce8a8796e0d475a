package javatables

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/dv"
)

// quirks holds, for every stored table, a check that the table still shows
// the quirk it is stored for. Each check derives the quirk from the
// relocated table's metadata, manifests, Puffin and Parquet files as
// iceberg-go reads them, never from expected.json's text, and returns an
// error saying what is missing.
var quirks = map[string]func(*view) error{
	"compaction":             checkCompaction,
	"mor-update":             checkMorUpdate,
	"existing-first-row-id":  checkExistingFirstRowID,
	"rewrite-manifests":      checkRewriteManifests,
	"rewrite-manifests-1.12": checkRewriteManifestsKeeps,
	"upgrade":                checkUpgrade,
	"puffin-per-commit":      checkPuffinPerCommit,
	"merge-partitioned":      checkMergePartitioned,
	"cow":                    checkCopyOnWrite,
	"rename-drop":            checkRenameDrop,
	"rollback":               checkRollback,
	"wap-cherrypick":         checkWAPCherrypick,
	"variant":                checkVariant,
	"variant-shredded":       checkVariantShredded,
	"geo":                    checkGeo,
	"timestamp-ns":           checkTimestampNs,
	"defaults":               checkDefaults,
}

// Every stored table still shows its quirk, its main ancestry is the one
// expected.json lists, and what Java wrote (expected.json's facts) is what
// iceberg-go reads of the relocated copy. Each quirk check must also fail
// on some other stored table: a check every table passes pins nothing.
func TestStoredTableQuirks(t *testing.T) {
	names, err := Names()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no tables under testdata/java")
	}
	for _, name := range names {
		if quirks[name] == nil {
			t.Errorf("%s: no quirk check: add one to quirks", name)
		}
	}
	for name := range quirks {
		if !slices.Contains(names, name) {
			t.Errorf("quirk check for %s, which is not stored", name)
		}
	}
	// Loaded with t, not the subtests: the copies outlive each subtest for
	// the cross-checks below.
	views := map[string]*view{}
	for _, name := range names {
		views[name] = openView(t, name)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			v := views[name]
			if err := checkAncestry(v); err != nil {
				t.Error(err)
			}
			if err := checkFacts(v); err != nil {
				t.Error(v.short(err))
			}
			if check := quirks[name]; check != nil {
				if err := check(v); err != nil {
					t.Errorf("does not show its quirk (%s): %s", v.exp.Quirk, v.short(err))
				}
			}
		})
	}
	t.Run("checks-discriminate", func(t *testing.T) {
		for _, name := range slices.Sorted(maps.Keys(quirks)) {
			var holds, fails []string
			for _, other := range names {
				if other == name {
					continue
				}
				if err := quirks[name](views[other]); err != nil {
					fails = append(fails, other)
				} else {
					holds = append(holds, other)
				}
			}
			t.Logf("%s's check: fails on %v, also holds on %v", name, fails, holds)
			if len(fails) == 0 {
				t.Errorf("%s's check holds on every other stored table: it tells nothing", name)
			}
		}
	})
}

// view is what the checks read of one relocated table.
type view struct {
	// loc is the copy's table location, cut from paths in messages.
	loc  string
	exp  Expected
	meta table.Metadata
	fs   iceio.IO
	// main is main's ancestry, oldest first; onMain its snapshot ids.
	main   []table.Snapshot
	onMain map[int64]bool

	files   map[string][]byte
	entries map[int64][]entry
	columns map[string]lineageColumns
}

// entry is one manifest entry of a snapshot's manifest list, read twice:
// as iceberg-go's FetchEntries returns it (sequence numbers, snapshot id
// and first_row_id inherited) and as stored (rawEntries: nulls kept).
type entry struct {
	m iceberg.ManifestFile
	// own: the manifest was written by the snapshot whose list holds it.
	own      bool
	status   iceberg.ManifestEntryStatus
	snapshot int64 // inherited
	seq      int64 // data sequence number, inherited
	file     iceberg.DataFile
	// raw values; nil where the manifest stores null.
	rawSeq, rawSnapshot, rawFirstRowID *int64
	// version is the manifest file's own format-version.
	version int
}

func (e entry) path() string { return e.file.FilePath() }

func (e entry) addedBy(s table.Snapshot) bool {
	return e.status == iceberg.EntryStatusADDED && e.snapshot == s.SnapshotID
}

func (e entry) removedBy(s table.Snapshot) bool {
	return e.status == iceberg.EntryStatusDELETED && e.snapshot == s.SnapshotID
}

func isData(df iceberg.DataFile) bool { return df.ContentType() == iceberg.EntryContentData }

func isDV(df iceberg.DataFile) bool {
	return df.ContentType() == iceberg.EntryContentPosDeletes && df.FileFormat() == iceberg.PuffinFile
}

func isPosDeleteFile(df iceberg.DataFile) bool {
	return df.ContentType() == iceberg.EntryContentPosDeletes && df.FileFormat() == iceberg.ParquetFile
}

func refOf(df iceberg.DataFile) string {
	if r := df.ReferencedDataFile(); r != nil {
		return *r
	}
	return ""
}

func openView(t *testing.T, name string) *view {
	t.Helper()
	tb := Load(t, name)
	ctx := context.Background()
	tbl, err := table.NewFromLocation(ctx, table.Identifier{"java", name}, tb.MetadataPath,
		iceio.LoadFSFunc(nil, tb.MetadataPath), nil)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v := &view{loc: tb.Location, exp: tb.Expected, meta: tbl.Metadata(), fs: fs, onMain: map[int64]bool{},
		files: map[string][]byte{}, entries: map[int64][]entry{}, columns: map[string]lineageColumns{}}
	head := v.meta.SnapshotByName(table.MainBranch)
	if head == nil {
		t.Fatalf("%s: no main branch", name)
	}
	anc, complete := table.AncestorsOfChecked(head.SnapshotID, v.meta.SnapshotByID)
	if !complete {
		t.Fatalf("%s: main's ancestry is broken", name)
	}
	slices.Reverse(anc)
	v.main = anc
	for _, s := range anc {
		v.onMain[s.SnapshotID] = true
	}
	return v
}

// short spells an error with paths relative to the table location.
func (v *view) short(err error) string {
	return strings.ReplaceAll(err.Error(), v.loc+"/", "")
}

func (v *view) read(path string) ([]byte, error) {
	if b, ok := v.files[path]; ok {
		return b, nil
	}
	f, err := v.fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	v.files[path] = b
	return b, nil
}

func (v *view) parent(s table.Snapshot) *table.Snapshot {
	if s.ParentSnapshotID == nil {
		return nil
	}
	return v.meta.SnapshotByID(*s.ParentSnapshotID)
}

// snapEntries returns every entry of every manifest s's list holds, in
// list and file order.
func (v *view) snapEntries(s table.Snapshot) ([]entry, error) {
	if es, ok := v.entries[s.SnapshotID]; ok {
		return es, nil
	}
	list, err := s.Manifests(v.fs)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: %w", s.SnapshotID, err)
	}
	var out []entry
	for _, m := range list {
		eff, err := m.FetchEntries(v.fs, false)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		raw, err := v.read(m.FilePath())
		if err != nil {
			return nil, err
		}
		r, stored, err := rawEntries(m, raw)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		version := r.Version()
		r.Close()
		if len(stored) != len(eff) {
			return nil, fmt.Errorf("manifest %s: %d entries as stored, %d through FetchEntries", m.FilePath(), len(stored), len(eff))
		}
		for i, e := range eff {
			st := stored[i]
			if st.DataFile().FilePath() != e.DataFile().FilePath() {
				return nil, fmt.Errorf("manifest %s: entry %d is %s as stored, %s through FetchEntries", m.FilePath(), i, st.DataFile().FilePath(), e.DataFile().FilePath())
			}
			out = append(out, entry{m: m, own: m.SnapshotID() == s.SnapshotID, status: e.Status(),
				snapshot: e.SnapshotID(), seq: e.SequenceNum(), file: e.DataFile(),
				rawSeq: nonNeg(st.SequenceNum()), rawSnapshot: nonNeg(st.SnapshotID()),
				rawFirstRowID: st.DataFile().FirstRowID(), version: version})
		}
	}
	v.entries[s.SnapshotID] = out
	return out, nil
}

// nonNeg maps rawEntries' -1 for a null back to nil.
func nonNeg(n int64) *int64 {
	if n < 0 {
		return nil
	}
	return &n
}

// live returns s's live files (data and delete) by path.
func (v *view) live(s table.Snapshot) (map[string]entry, error) {
	es, err := v.snapEntries(s)
	if err != nil {
		return nil, err
	}
	out := map[string]entry{}
	for _, e := range es {
		if e.status != iceberg.EntryStatusDELETED {
			out[e.path()] = e
		}
	}
	return out, nil
}

// lineageColumns is how a Parquet data file stores _row_id and
// _last_updated_sequence_number.
type lineageColumns struct {
	rows        int
	rowID, lusn storedColumn
}

type storedColumn struct {
	present bool
	vals    []*int64 // one per row, nil for null
}

func (c storedColumn) set() int {
	n := 0
	for _, x := range c.vals {
		if x != nil {
			n++
		}
	}
	return n
}

// describe spells the column as interop/facts.py does.
func (c storedColumn) describe() string {
	if !c.present {
		return "absent"
	}
	var set []int64
	for _, x := range c.vals {
		if x != nil {
			set = append(set, *x)
		}
	}
	s := fmt.Sprintf("%d/%d set", len(set), len(c.vals))
	if len(set) > 0 {
		s += fmt.Sprintf(" [%d..%d]", slices.Min(set), slices.Max(set))
	}
	return s
}

func (v *view) lineage(path string) (lineageColumns, error) {
	if c, ok := v.columns[path]; ok {
		return c, nil
	}
	tbl, err := v.parquet(path)
	if err != nil {
		return lineageColumns{}, err
	}
	defer tbl.Release()
	out := lineageColumns{rows: int(tbl.NumRows())}
	for _, c := range []struct {
		name string
		dst  *storedColumn
	}{{iceberg.RowIDColumnName, &out.rowID}, {iceberg.LastUpdatedSequenceNumberColumnName, &out.lusn}} {
		idx := tbl.Schema().FieldIndices(c.name)
		if len(idx) == 0 {
			continue
		}
		c.dst.present = true
		for _, ch := range tbl.Column(idx[0]).Data().Chunks() {
			a, ok := ch.(*array.Int64)
			if !ok {
				return lineageColumns{}, fmt.Errorf("%s: column %s is %s, not int64", path, c.name, ch.DataType())
			}
			for i := range a.Len() {
				if a.IsNull(i) {
					c.dst.vals = append(c.dst.vals, nil)
				} else {
					x := a.Value(i)
					c.dst.vals = append(c.dst.vals, &x)
				}
			}
		}
	}
	v.columns[path] = out
	return out, nil
}

func (v *view) parquet(path string) (arrow.Table, error) {
	raw, err := v.read(path)
	if err != nil {
		return nil, err
	}
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tbl, nil
}

// rowIDs returns the row id of each row of a live data file: the stored
// _row_id, or the file's first_row_id plus the row's position.
func (v *view) rowIDs(e entry) ([]int64, error) {
	lc, err := v.lineage(e.path())
	if err != nil {
		return nil, err
	}
	out := make([]int64, lc.rows)
	for i := range out {
		switch {
		case lc.rowID.present && lc.rowID.vals[i] != nil:
			out[i] = *lc.rowID.vals[i]
		case e.file.FirstRowID() != nil:
			out[i] = *e.file.FirstRowID() + int64(i)
		default:
			return nil, fmt.Errorf("%s: row %d has neither a stored _row_id nor a first_row_id", e.path(), i)
		}
	}
	return out, nil
}

// positions returns the positions a deletion vector deletes from a file of
// rows rows.
func (v *view) positions(e entry, rows int) ([]int64, error) {
	off, size := e.file.ContentOffset(), e.file.ContentSizeInBytes()
	if off == nil || size == nil {
		return nil, fmt.Errorf("vector in %s without content offset or size", e.path())
	}
	raw, err := v.read(e.path())
	if err != nil {
		return nil, err
	}
	bm, err := dv.ReadAt(bytes.NewReader(raw), *off, *size, e.file.Count(), int64(rows))
	if err != nil {
		return nil, fmt.Errorf("vector %s@%d: %w", e.path(), *off, err)
	}
	var out []int64
	for it := bm.Iterator(); it.HasNext(); {
		out = append(out, int64(it.Next()))
	}
	return out, nil
}

// posDeletes reads a v2 position-delete file: positions by data file.
func (v *view) posDeletes(path string) (map[string][]int64, error) {
	tbl, err := v.parquet(path)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	pi, fi := tbl.Schema().FieldIndices("pos"), tbl.Schema().FieldIndices("file_path")
	if len(pi) != 1 || len(fi) != 1 {
		return nil, fmt.Errorf("%s: no file_path and pos columns: %v", path, tbl.Schema())
	}
	var paths []string
	var pos []int64
	for _, ch := range tbl.Column(fi[0]).Data().Chunks() {
		a := ch.(*array.String)
		for i := range a.Len() {
			paths = append(paths, a.Value(i))
		}
	}
	for _, ch := range tbl.Column(pi[0]).Data().Chunks() {
		pos = append(pos, ch.(*array.Int64).Int64Values()...)
	}
	out := map[string][]int64{}
	for i, p := range paths {
		out[p] = append(out[p], pos[i])
	}
	return out, nil
}

func (v *view) puffinBlobs(path string) ([]puffin.BlobMetadata, error) {
	raw, err := v.read(path)
	if err != nil {
		return nil, err
	}
	rd, err := puffin.NewReader(bytes.NewReader(raw), puffin.WithMaxFooterSize(int64(len(raw))))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rd.Blobs(), nil
}

func op(s table.Snapshot) table.Operation {
	if s.Summary == nil {
		return ""
	}
	return s.Summary.Operation
}

func summary(s table.Snapshot, key string) (string, bool) {
	if s.Summary == nil {
		return "", false
	}
	val, ok := s.Summary.Properties[key]
	return val, ok
}

// checkAncestry: main's ancestry, as iceberg-go walks it from the main
// ref, is the one expected.json lists (ids, parents, sequence numbers,
// operations).
func checkAncestry(v *view) error {
	var got, want []string
	for _, s := range v.main {
		parent := "none"
		if s.ParentSnapshotID != nil {
			parent = fmt.Sprint(*s.ParentSnapshotID)
		}
		got = append(got, fmt.Sprintf("%d<-%s seq %d %s", s.SnapshotID, parent, s.SequenceNumber, op(s)))
	}
	for _, s := range v.exp.Snapshots {
		parent := "none"
		if s.ParentID != nil {
			parent = fmt.Sprint(*s.ParentID)
		}
		want = append(want, fmt.Sprintf("%d<-%s seq %d %s", s.SnapshotID, parent, s.SequenceNumber, s.Operation))
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("main's ancestry is\n  %v\nexpected.json lists\n  %v", got, want)
	}
	return nil
}

// aliases gives files short names as interop/facts.py does: d1, d2 … for
// data files, p1 … for Puffin files, x1 … for other delete files, in order
// of first mention.
type aliases struct {
	names map[string]string
	count map[string]int
}

func (a *aliases) of(path, prefix string) string {
	if path == "" {
		return "-"
	}
	if n, ok := a.names[path]; ok {
		return n
	}
	a.count[prefix]++
	n := prefix + strconv.Itoa(a.count[prefix])
	a.names[path] = n
	return n
}

func py(p *int64) string {
	if p == nil {
		return "None"
	}
	return strconv.FormatInt(*p, 10)
}

// checkFacts derives, for each snapshot of main, the lines
// interop/facts.py recorded in expected.json (what Java wrote: raw data
// sequence numbers and first_row_id, stored lineage columns, vectors and
// their Puffin files) from the relocated table through iceberg-go, and
// compares them.
func checkFacts(v *view) error {
	al := &aliases{names: map[string]string{}, count: map[string]int{}}
	var diffs []string
	for i, s := range v.main {
		got, err := v.snapshotFacts(s, al)
		if err != nil {
			return err
		}
		if i >= len(v.exp.Snapshots) {
			break
		}
		if want := v.exp.Snapshots[i].Facts; !slices.Equal(got, want) {
			d := fmt.Sprintf("snapshot %d seq %d (- recorded, + read):", s.SnapshotID, s.SequenceNumber)
			for _, l := range want {
				if !slices.Contains(got, l) {
					d += "\n  - " + l
				}
			}
			for _, l := range got {
				if !slices.Contains(want, l) {
					d += "\n  + " + l
				}
			}
			if len(got) == len(want) && !strings.Contains(d, "\n") {
				d += " the same lines in another order"
			}
			diffs = append(diffs, d)
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("what iceberg-go reads differs from expected.json's facts:\n%s", strings.Join(diffs, "\n"))
	}
	return nil
}

func (v *view) snapshotFacts(s table.Snapshot, al *aliases) ([]string, error) {
	head := fmt.Sprintf("%s seq=%d", op(s), s.SequenceNumber)
	if s.FirstRowID != nil || s.AddedRows != nil {
		head += fmt.Sprintf(" snapshot.first-row-id=%s added-rows=%s", py(s.FirstRowID), py(s.AddedRows))
	}
	lines := []string{head}
	list, err := s.Manifests(v.fs)
	if err != nil {
		return nil, err
	}
	var ms []string
	for _, m := range list {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		who := "old"
		if m.SnapshotID() == s.SnapshotID {
			who = "own"
		}
		ms = append(ms, fmt.Sprintf("%s seq=%d first_row_id=%s", who, m.SequenceNum(), py(m.FirstRowID())))
	}
	lines = append(lines, "  manifest list (data): "+strings.Join(ms, ", "))
	es, err := v.snapEntries(s)
	if err != nil {
		return nil, err
	}
	var puffins []string
	for _, e := range es {
		if !e.own || e.status == iceberg.EntryStatusEXISTING || (e.rawSnapshot != nil && *e.rawSnapshot != s.SnapshotID) {
			continue
		}
		df := e.file
		st := "+"
		if e.status == iceberg.EntryStatusDELETED {
			st = "-"
		}
		dseq := fmt.Sprintf("dseq=inherit(%d)", e.m.SequenceNum())
		if e.rawSeq != nil {
			dseq = fmt.Sprintf("dseq=%d", *e.rawSeq)
		}
		switch {
		case isData(df):
			line := fmt.Sprintf("  %sdata %s rows=%d %s first_row_id=%s", st, al.of(df.FilePath(), "d"), df.Count(), dseq, py(e.rawFirstRowID))
			if e.status == iceberg.EntryStatusADDED {
				lc, err := v.lineage(df.FilePath())
				if err != nil {
					return nil, err
				}
				line += fmt.Sprintf(" stored _row_id=%s lusn=%s", lc.rowID.describe(), lc.lusn.describe())
			}
			lines = append(lines, line)
		case df.FileFormat() == iceberg.PuffinFile:
			p := al.of(df.FilePath(), "p")
			lines = append(lines, fmt.Sprintf("  %sdv %s@%s+%s -> %s card=%d %s", st, p, py(df.ContentOffset()), py(df.ContentSizeInBytes()),
				al.of(refOf(df), "d"), df.Count(), dseq))
			if e.status == iceberg.EntryStatusADDED && !slices.Contains(puffins, df.FilePath()) {
				puffins = append(puffins, df.FilePath())
			}
		default:
			content := map[iceberg.ManifestEntryContent]string{iceberg.EntryContentPosDeletes: "posdel", iceberg.EntryContentEqDeletes: "eqdel"}[df.ContentType()]
			name := al.of(df.FilePath(), "x")
			ref := "none"
			if r := refOf(df); r != "" {
				ref = al.of(r, "d")
			}
			lines = append(lines, fmt.Sprintf("  %s%s %s %s rows=%d %s referenced_data_file=%s", st, content,
				strings.ToLower(string(df.FileFormat())), name, df.Count(), dseq, ref))
		}
	}
	for _, path := range puffins {
		blobs, err := v.puffinBlobs(path)
		if err != nil {
			return nil, err
		}
		var refs []string
		for _, b := range blobs {
			refs = append(refs, al.of(b.Properties["referenced-data-file"], "d"))
		}
		typ := ""
		if len(blobs) > 0 {
			typ = string(blobs[0].Type)
		}
		lines = append(lines, fmt.Sprintf("  puffin %s: %d blob(s) %s for %s", al.of(path, "p"), len(blobs), typ, strings.Join(refs, ", ")))
	}
	return lines, nil
}

// checkCompaction: a replace snapshot of main (rewrite_data_files) adds a
// data file whose data sequence number, written explicitly, is below the
// snapshot's: the sequence number of the snapshot the rewrite started
// from (its parent). The compacted file stores _row_id and
// _last_updated_sequence_number in every row, none newer than that.
func checkCompaction(v *view) error {
	for _, s := range v.main {
		parent := v.parent(s)
		if op(s) != table.OpReplace || parent == nil {
			continue
		}
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		for _, e := range es {
			if !e.addedBy(s) || !isData(e.file) || e.seq >= s.SequenceNumber {
				continue
			}
			if e.rawSeq == nil || *e.rawSeq != e.seq {
				return fmt.Errorf("replace %d: %s reads data sequence number %d without storing it", s.SnapshotID, e.path(), e.seq)
			}
			if e.seq != parent.SequenceNumber {
				return fmt.Errorf("replace %d (seq %d) adds %s with data sequence number %d, not the starting snapshot's %d",
					s.SnapshotID, s.SequenceNumber, e.path(), e.seq, parent.SequenceNumber)
			}
			lc, err := v.lineage(e.path())
			if err != nil {
				return err
			}
			if lc.rowID.set() != lc.rows || lc.lusn.set() != lc.rows {
				return fmt.Errorf("replace %d: compacted %s stores _row_id %s and lusn %s, want both in every row",
					s.SnapshotID, e.path(), lc.rowID.describe(), lc.lusn.describe())
			}
			for _, l := range lc.lusn.vals {
				if *l > e.seq {
					return fmt.Errorf("replace %d: compacted %s stores lusn %d, newer than its data sequence number %d", s.SnapshotID, e.path(), *l, e.seq)
				}
			}
			return nil
		}
	}
	return errors.New("no replace snapshot of main adds a data file with a data sequence number below the snapshot's")
}

// checkMorUpdate: every merge-on-read update of main (an overwrite adding
// data files and deletion vectors) adds data files that store _row_id in
// every row — row ids of rows its vectors delete — and a
// _last_updated_sequence_number column that is all null.
func checkMorUpdate(v *view) error {
	updates := 0
	for _, s := range v.main {
		parent := v.parent(s)
		if op(s) != table.OpOverwrite || parent == nil {
			continue
		}
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		var vectors, files []entry
		for _, e := range es {
			switch {
			case !e.addedBy(s):
			case isDV(e.file):
				vectors = append(vectors, e)
			case isData(e.file):
				files = append(files, e)
			}
		}
		if len(vectors) == 0 || len(files) == 0 {
			continue
		}
		before, err := v.live(*parent)
		if err != nil {
			return err
		}
		deleted := map[int64]bool{}
		for _, vec := range vectors {
			target, ok := before[refOf(vec.file)]
			if !ok {
				return fmt.Errorf("update %d: vector for %s, not a live file of the parent", s.SnapshotID, refOf(vec.file))
			}
			ids, err := v.rowIDs(target)
			if err != nil {
				return err
			}
			pos, err := v.positions(vec, len(ids))
			if err != nil {
				return err
			}
			for _, p := range pos {
				deleted[ids[p]] = true
			}
		}
		for _, f := range files {
			lc, err := v.lineage(f.path())
			if err != nil {
				return err
			}
			if lc.rowID.set() != lc.rows || lc.rows == 0 {
				return fmt.Errorf("update %d adds %s storing _row_id %s: want it in every row", s.SnapshotID, f.path(), lc.rowID.describe())
			}
			if !lc.lusn.present || lc.lusn.set() != 0 {
				return fmt.Errorf("update %d adds %s storing _last_updated_sequence_number %s: want a column of nulls", s.SnapshotID, f.path(), lc.lusn.describe())
			}
			for _, id := range lc.rowID.vals {
				if !deleted[*id] {
					return fmt.Errorf("update %d adds %s storing _row_id %d, which none of its vectors deletes", s.SnapshotID, f.path(), *id)
				}
			}
		}
		updates++
	}
	if updates == 0 {
		return errors.New("no merge-on-read update (an overwrite adding data files and deletion vectors) on main")
	}
	return nil
}

// checkExistingFirstRowID: manifests rewritten by a snapshot of main carry
// an explicit first_row_id on EXISTING entries, each the first_row_id the
// file had in the parent snapshot, and a later deletion vector targets a
// file whose entry carries one.
func checkExistingFirstRowID(v *view) error {
	explicit := 0
	for _, s := range v.main {
		parent := v.parent(s)
		if parent == nil {
			continue
		}
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		var before map[string]entry
		for _, e := range es {
			if !e.own || e.status != iceberg.EntryStatusEXISTING || !isData(e.file) || e.rawFirstRowID == nil {
				continue
			}
			if before == nil {
				if before, err = v.live(*parent); err != nil {
					return err
				}
			}
			was := before[e.path()].file
			if was == nil || was.FirstRowID() == nil || *was.FirstRowID() != *e.rawFirstRowID {
				return fmt.Errorf("snapshot %d rewrites %s's entry with first_row_id %d; the file had %v in the parent",
					s.SnapshotID, e.path(), *e.rawFirstRowID, was)
			}
			explicit++
		}
	}
	if explicit == 0 {
		return errors.New("no rewritten manifest on main carries an explicit first_row_id on an EXISTING entry")
	}
	for _, s := range v.main {
		live, err := v.live(s)
		if err != nil {
			return err
		}
		for _, e := range live {
			if !e.addedBy(s) || !isDV(e.file) {
				continue
			}
			if t, ok := live[refOf(e.file)]; ok && t.status == iceberg.EntryStatusEXISTING && t.rawFirstRowID != nil {
				return nil
			}
		}
	}
	return errors.New("no deletion vector targets a file whose EXISTING entry carries an explicit first_row_id")
}

var newRowIDs = regexp.MustCompile(`(\d+) new row ids`)

// checkRewriteManifests: a replace snapshot of main rewrites manifests
// whose EXISTING entries store no first_row_id, so they inherit one from
// the new manifest that differs from the file's first_row_id in the
// parent: unchanged rows get new row ids. expected.json's anomaly for
// that snapshot counts the same rows, and Spark read the new ids.
func checkRewriteManifests(v *view) error {
	for i, s := range v.main {
		parent := v.parent(s)
		if op(s) != table.OpReplace || parent == nil {
			continue
		}
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		before, err := v.live(*parent)
		if err != nil {
			return err
		}
		var moved int64
		var ids []int64
		for _, e := range es {
			if !e.own || e.status != iceberg.EntryStatusEXISTING || !isData(e.file) {
				continue
			}
			now, was := e.file.FirstRowID(), before[e.path()].file
			if now == nil || was == nil || was.FirstRowID() == nil || *now == *was.FirstRowID() {
				continue
			}
			if e.rawFirstRowID != nil {
				return fmt.Errorf("replace %d stores first_row_id %d for %s, which had %d", s.SnapshotID, *now, e.path(), *was.FirstRowID())
			}
			moved += e.file.Count()
			for k := range e.file.Count() {
				ids = append(ids, *now+k)
			}
		}
		if moved == 0 {
			continue
		}
		if i >= len(v.exp.Snapshots) || v.exp.Snapshots[i].SnapshotID != s.SnapshotID {
			return fmt.Errorf("replace %d: not in expected.json", s.SnapshotID)
		}
		es2 := v.exp.Snapshots[i]
		found := false
		for _, a := range es2.Anomalies {
			if m := newRowIDs.FindStringSubmatch(a); m != nil {
				found = true
				if m[1] != fmt.Sprint(moved) {
					return fmt.Errorf("replace %d gives %d rows new row ids; expected.json's anomaly says %q", s.SnapshotID, moved, a)
				}
			}
		}
		if !found {
			return fmt.Errorf("replace %d gives %d rows new row ids; expected.json records no such anomaly (%v)", s.SnapshotID, moved, es2.Anomalies)
		}
		spark := map[int64]bool{}
		for _, r := range es2.Live {
			spark[r.RowID] = true
		}
		for _, id := range ids {
			if !spark[id] {
				return fmt.Errorf("replace %d: new row id %d is not among the row ids Spark read", s.SnapshotID, id)
			}
		}
		return nil
	}
	return errors.New("no replace snapshot of main gives an EXISTING entry a first_row_id other than its parent's")
}

// checkUpgrade: the table is v3 now, but main starts with snapshots
// written as v2 (no first-row-id, v2 manifests), one of which adds v2
// position-delete files; later v3 snapshots remove every one of them, each
// in the snapshot that adds a deletion vector for the same data file that
// holds all its positions.
func checkUpgrade(v *view) error {
	if v.meta.Version() != 3 {
		return fmt.Errorf("format-version %d, want 3", v.meta.Version())
	}
	posdel := map[string]bool{}
	v2, v3 := 0, 0
	for _, s := range v.main {
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		if s.FirstRowID != nil {
			v3++
			for _, e := range es {
				if e.addedBy(s) && isPosDeleteFile(e.file) {
					return fmt.Errorf("v3 snapshot %d adds position-delete file %s", s.SnapshotID, e.path())
				}
			}
			continue
		}
		if v3 > 0 {
			return fmt.Errorf("snapshot %d without first-row-id after v3 snapshots", s.SnapshotID)
		}
		v2++
		for _, e := range es {
			if e.version != 2 {
				return fmt.Errorf("snapshot %d (before the upgrade) lists a v%d manifest %s", s.SnapshotID, e.version, e.m.FilePath())
			}
			if e.addedBy(s) && isPosDeleteFile(e.file) {
				posdel[e.path()] = true
			}
		}
	}
	if v2 == 0 || v3 == 0 {
		return fmt.Errorf("%d snapshots written as v2 and %d as v3 on main: want both", v2, v3)
	}
	if len(posdel) == 0 {
		return errors.New("no v2 snapshot adds a position-delete file")
	}
	for _, s := range v.main {
		if s.FirstRowID == nil {
			continue
		}
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		live, err := v.live(s)
		if err != nil {
			return err
		}
		vectors := map[string]entry{}
		for _, e := range es {
			if e.addedBy(s) && isDV(e.file) {
				vectors[refOf(e.file)] = e
			}
		}
		for _, e := range es {
			if !e.removedBy(s) || !isPosDeleteFile(e.file) {
				continue
			}
			targets, err := v.posDeletes(e.path())
			if err != nil {
				return err
			}
			for target, pos := range targets {
				vec, ok := vectors[target]
				if !ok {
					return fmt.Errorf("snapshot %d removes %s without adding a deletion vector for %s", s.SnapshotID, e.path(), target)
				}
				data, ok := live[target]
				if !ok {
					return fmt.Errorf("snapshot %d adds a vector for %s, not one of its data files", s.SnapshotID, target)
				}
				got, err := v.positions(vec, int(data.file.Count()))
				if err != nil {
					return err
				}
				for _, p := range pos {
					if !slices.Contains(got, p) {
						return fmt.Errorf("snapshot %d removes %s, whose position %d in %s its vector drops", s.SnapshotID, e.path(), p, target)
					}
				}
			}
			delete(posdel, e.path())
		}
	}
	if len(posdel) > 0 {
		return fmt.Errorf("v2 position-delete files never replaced by a vector: %v", slices.Sorted(maps.Keys(posdel)))
	}
	return nil
}

// checkPuffinPerCommit: each snapshot of main that adds deletion vectors
// writes them all into one Puffin file of its own, whose blobs are exactly
// those vectors (offsets, lengths, referenced data files); some commit
// writes several, and some commit replaces vectors that live in another
// Puffin file.
func checkPuffinPerCommit(v *view) error {
	writer := map[string]int64{}
	most, replaced := 0, false
	for _, s := range v.main {
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		var added []entry
		var paths []string
		for _, e := range es {
			if e.addedBy(s) && isDV(e.file) {
				added = append(added, e)
				if !slices.Contains(paths, e.path()) {
					paths = append(paths, e.path())
				}
			}
		}
		if len(added) == 0 {
			continue
		}
		if len(paths) != 1 {
			return fmt.Errorf("snapshot %d writes its %d vectors into %d Puffin files", s.SnapshotID, len(added), len(paths))
		}
		p := paths[0]
		if w, ok := writer[p]; ok {
			return fmt.Errorf("Puffin file %s holds vectors of snapshots %d and %d", p, w, s.SnapshotID)
		}
		writer[p] = s.SnapshotID
		blobs, err := v.puffinBlobs(p)
		if err != nil {
			return err
		}
		if len(blobs) != len(added) {
			return fmt.Errorf("snapshot %d adds %d vectors; its Puffin file holds %d blobs", s.SnapshotID, len(added), len(blobs))
		}
		for _, e := range added {
			if !slices.ContainsFunc(blobs, func(b puffin.BlobMetadata) bool {
				return b.Type == puffin.BlobTypeDeletionVector && b.Offset == *e.file.ContentOffset() &&
					b.Length == *e.file.ContentSizeInBytes() && b.Properties["referenced-data-file"] == refOf(e.file)
			}) {
				return fmt.Errorf("snapshot %d: no blob of %s is the vector at %d+%d for %s", s.SnapshotID, p,
					*e.file.ContentOffset(), *e.file.ContentSizeInBytes(), refOf(e.file))
			}
		}
		most = max(most, len(blobs))
		for _, e := range es {
			if e.removedBy(s) && isDV(e.file) && e.path() != p {
				replaced = true
			}
		}
	}
	switch {
	case most < 2:
		return fmt.Errorf("no commit writes more than %d vectors into its Puffin file", most)
	case !replaced:
		return errors.New("no commit replaces vectors held in another Puffin file")
	}
	return nil
}

// checkMergePartitioned: the table is partitioned and a MERGE on main
// (spark.merge-into.* in the summary) adds data files in two partitions
// or more, inserts new rows (no stored _row_id) in two partitions or more,
// and moves a row to another partition: a file it adds stores the
// _row_id of a row of a file in another partition that its vectors
// delete.
func checkMergePartitioned(v *view) error {
	if spec := v.meta.PartitionSpec(); spec.IsUnpartitioned() {
		return errors.New("the table is not partitioned")
	}
	var why []string
	for _, s := range v.main {
		parent := v.parent(s)
		isMerge := false
		if s.Summary != nil {
			for k := range s.Summary.Properties {
				isMerge = isMerge || strings.HasPrefix(k, "spark.merge-into.")
			}
		}
		if !isMerge || parent == nil {
			continue
		}
		err := v.mergeMoves(s, *parent)
		if err == nil {
			return nil
		}
		why = append(why, err.Error())
	}
	if len(why) == 0 {
		return errors.New("no MERGE snapshot (spark.merge-into.* in its summary) on main")
	}
	return errors.New(strings.Join(why, "; "))
}

func (v *view) mergeMoves(s, parent table.Snapshot) error {
	es, err := v.snapEntries(s)
	if err != nil {
		return err
	}
	before, err := v.live(parent)
	if err != nil {
		return err
	}
	// deleted: partition and row id of each row the MERGE's vectors delete.
	deleted := map[int64]string{}
	parts, inserts := map[string]bool{}, map[string]bool{}
	var added []entry
	for _, e := range es {
		if !e.addedBy(s) {
			continue
		}
		switch {
		case isDV(e.file):
			target, ok := before[refOf(e.file)]
			if !ok {
				return fmt.Errorf("MERGE %d: vector for %s, not a live file of the parent", s.SnapshotID, refOf(e.file))
			}
			ids, err := v.rowIDs(target)
			if err != nil {
				return err
			}
			pos, err := v.positions(e, len(ids))
			if err != nil {
				return err
			}
			for _, p := range pos {
				deleted[ids[p]] = fmt.Sprint(target.file.Partition())
			}
		case isData(e.file):
			added = append(added, e)
			parts[fmt.Sprint(e.file.Partition())] = true
		}
	}
	moves := 0
	for _, e := range added {
		part := fmt.Sprint(e.file.Partition())
		lc, err := v.lineage(e.path())
		if err != nil {
			return err
		}
		for i := range lc.rows {
			if !lc.rowID.present || lc.rowID.vals[i] == nil {
				inserts[part] = true
				continue
			}
			if from, ok := deleted[*lc.rowID.vals[i]]; ok && from != part {
				moves++
			}
		}
	}
	switch {
	case len(parts) < 2:
		return fmt.Errorf("MERGE %d adds data files in %d partitions", s.SnapshotID, len(parts))
	case len(inserts) < 2:
		return fmt.Errorf("MERGE %d inserts rows in %d partitions", s.SnapshotID, len(inserts))
	case moves == 0:
		return fmt.Errorf("MERGE %d moves no row to another partition", s.SnapshotID)
	}
	return nil
}

// checkCopyOnWrite: main never lists a delete file, and each of its
// overwrites (one at least) removes data files and adds data files that
// carry rows of the removed ones: stored _row_id from the removed files,
// and for some rows (unchanged ones) a stored lusn older than the commit.
func checkCopyOnWrite(v *view) error {
	overwrites := 0
	for _, s := range v.main {
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		for _, e := range es {
			if !isData(e.file) {
				return fmt.Errorf("snapshot %d lists delete file %s", s.SnapshotID, e.path())
			}
		}
		parent := v.parent(s)
		if op(s) != table.OpOverwrite || parent == nil {
			continue
		}
		before, err := v.live(*parent)
		if err != nil {
			return err
		}
		var added []entry
		removedIDs := map[int64]bool{}
		removed := 0
		for _, e := range es {
			switch {
			case e.addedBy(s):
				added = append(added, e)
			case e.removedBy(s):
				removed++
				was, ok := before[e.path()]
				if !ok {
					return fmt.Errorf("overwrite %d removes %s, not a live file of the parent", s.SnapshotID, e.path())
				}
				ids, err := v.rowIDs(was)
				if err != nil {
					return err
				}
				for _, id := range ids {
					removedIDs[id] = true
				}
			}
		}
		if removed == 0 || len(added) == 0 {
			return fmt.Errorf("overwrite %d removes %d and adds %d data files", s.SnapshotID, removed, len(added))
		}
		carried := 0
		for _, e := range added {
			lc, err := v.lineage(e.path())
			if err != nil {
				return err
			}
			for i := range lc.rows {
				if !lc.rowID.present || lc.rowID.vals[i] == nil {
					continue
				}
				if id := *lc.rowID.vals[i]; !removedIDs[id] {
					return fmt.Errorf("overwrite %d adds %s storing _row_id %d, from none of the files it removes", s.SnapshotID, e.path(), id)
				}
				if lc.lusn.present && lc.lusn.vals[i] != nil {
					if l := *lc.lusn.vals[i]; l >= s.SequenceNumber {
						return fmt.Errorf("overwrite %d adds %s storing lusn %d", s.SnapshotID, e.path(), l)
					}
					carried++
				}
			}
		}
		if carried == 0 {
			return fmt.Errorf("overwrite %d carries no unchanged row (stored _row_id and an older lusn)", s.SnapshotID)
		}
		overwrites++
	}
	if overwrites == 0 {
		return errors.New("no overwrite on main")
	}
	return nil
}

// checkRenameDrop: the schema history renames a column (same field id,
// new name) and, in a later schema, drops one; main has commits under the
// renamed schema and under the one without the dropped column.
func checkRenameDrop(v *view) error {
	schemas := v.meta.Schemas()
	sort.Slice(schemas, func(i, j int) bool { return schemas[i].ID < schemas[j].ID })
	renamed, dropped := -1, -1
	for i := 1; i < len(schemas) && dropped < 0; i++ {
		for _, f := range schemas[i-1].Fields() {
			g, ok := schemas[i].FindFieldByID(f.ID)
			switch {
			case ok && g.Name != f.Name && renamed < 0:
				renamed = i
			case !ok && renamed >= 0 && i > renamed:
				dropped = i
			}
		}
	}
	if renamed < 0 || dropped < 0 {
		return fmt.Errorf("schema history (%d schemas) shows no rename followed by a drop", len(schemas))
	}
	used := func(from int) bool {
		for _, s := range v.main {
			if s.SchemaID != nil && *s.SchemaID == schemas[from].ID {
				return true
			}
		}
		return false
	}
	if !used(renamed) || !used(dropped) {
		return fmt.Errorf("no commit on main under schema %d (the rename) or %d (the drop)", schemas[renamed].ID, schemas[dropped].ID)
	}
	return nil
}

// checkRollback: snapshots off main's ancestry stay in the metadata; each
// was main's head once (the snapshot log lists it), descends from main's
// history, and the log then goes back to an older snapshot of main.
func checkRollback(v *view) error {
	var off []int64
	for _, s := range v.meta.Snapshots() {
		if !v.onMain[s.SnapshotID] {
			off = append(off, s.SnapshotID)
		}
	}
	if len(off) == 0 {
		return errors.New("every snapshot in the metadata is on main's ancestry")
	}
	var log []int64
	for e := range v.meta.SnapshotLogs() {
		log = append(log, e.SnapshotID)
	}
	for _, id := range off {
		if !slices.Contains(log, id) {
			return fmt.Errorf("snapshot %d, off main, was never main's head", id)
		}
		s := v.meta.SnapshotByID(id)
		for s != nil && !v.onMain[s.SnapshotID] {
			s = v.parent(*s)
		}
		if s == nil {
			return fmt.Errorf("snapshot %d, off main, does not descend from main's history", id)
		}
	}
	for i := 0; i+1 < len(log); i++ {
		from, to := v.meta.SnapshotByID(log[i]), v.meta.SnapshotByID(log[i+1])
		if from != nil && to != nil && !v.onMain[from.SnapshotID] && v.onMain[to.SnapshotID] && to.SequenceNumber < from.SequenceNumber {
			return nil
		}
	}
	return fmt.Errorf("the snapshot log %v never goes back from a snapshot off main to an older one of main", log)
}

// checkWAPCherrypick: main holds a snapshot cherry-picked from a staged
// one (summary source-snapshot-id, published-wap-id): the source is off
// main, carries that wap.id and added the same data files; and a staged
// snapshot (wap.id) that joined main by fast-forward.
func checkWAPCherrypick(v *view) error {
	picked, forwarded := 0, 0
	for _, s := range v.main {
		src, hasSrc := summary(s, "source-snapshot-id")
		pub, hasPub := summary(s, "published-wap-id")
		if !hasSrc && !hasPub {
			if _, ok := summary(s, "wap.id"); ok {
				forwarded++
			}
			continue
		}
		if !hasSrc {
			return fmt.Errorf("snapshot %d publishes %s without a source-snapshot-id", s.SnapshotID, pub)
		}
		id, err := strconv.ParseInt(src, 10, 64)
		if err != nil {
			return fmt.Errorf("snapshot %d: source-snapshot-id %q: %w", s.SnapshotID, src, err)
		}
		from := v.meta.SnapshotByID(id)
		switch {
		case from == nil:
			return fmt.Errorf("snapshot %d cherry-picks %d, which is not in the metadata", s.SnapshotID, id)
		case v.onMain[id]:
			return fmt.Errorf("snapshot %d cherry-picks %d, which is on main", s.SnapshotID, id)
		}
		if w, _ := summary(*from, "wap.id"); hasPub && w != pub {
			return fmt.Errorf("snapshot %d publishes wap id %q, its source %d staged %q", s.SnapshotID, pub, id, w)
		}
		a, err := v.addedData(s)
		if err != nil {
			return err
		}
		b, err := v.addedData(*from)
		if err != nil {
			return err
		}
		if len(a) == 0 || !slices.Equal(a, b) {
			return fmt.Errorf("snapshot %d adds %v, its source %d added %v", s.SnapshotID, a, id, b)
		}
		picked++
	}
	if picked == 0 || forwarded == 0 {
		return fmt.Errorf("main holds %d cherry-picked and %d fast-forwarded staged snapshots: want both", picked, forwarded)
	}
	return nil
}

// addedData lists the data files s adds, sorted.
func (v *view) addedData(s table.Snapshot) ([]string, error) {
	es, err := v.snapEntries(s)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if e.addedBy(s) && isData(e.file) {
			out = append(out, e.path())
		}
	}
	slices.Sort(out)
	return out, nil
}

// fieldsOfType returns the current schema's fields (any depth) whose type
// the predicate accepts.
func (v *view) fieldsOfType(ok func(iceberg.Type) bool) []iceberg.NestedField {
	var out []iceberg.NestedField
	var walk func(fs []iceberg.NestedField)
	walk = func(fs []iceberg.NestedField) {
		for _, f := range fs {
			if ok(f.Type) {
				out = append(out, f)
			}
			if st, isStruct := f.Type.(*iceberg.StructType); isStruct {
				walk(st.FieldList)
			}
		}
	}
	walk(v.meta.CurrentSchema().Fields())
	return out
}

// parquetPaths returns the dotted column paths of a Parquet data file's
// schema (v.metadata, v.value, v.typed_value.a.value, ...).
func (v *view) parquetPaths(path string) ([]string, error) {
	raw, err := v.read(path)
	if err != nil {
		return nil, err
	}
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer pr.Close()
	sc := pr.MetaData().Schema
	out := make([]string, sc.NumColumns())
	for i := range sc.NumColumns() {
		out[i] = sc.Column(i).Path()
	}
	return out, nil
}

// variantFiles returns, for every live data file at the head, whether its
// variant column v is shredded (has a v.typed_value column).
func (v *view) variantFiles() (shredded, unshredded int, err error) {
	if len(v.fieldsOfType(func(t iceberg.Type) bool { _, ok := t.(iceberg.VariantType); return ok })) == 0 {
		return 0, 0, errors.New("no variant column in the current schema")
	}
	live, err := v.live(v.main[len(v.main)-1])
	if err != nil {
		return 0, 0, err
	}
	for path, e := range live {
		if !isData(e.file) {
			continue
		}
		cols, err := v.parquetPaths(path)
		if err != nil {
			return 0, 0, err
		}
		if !slices.Contains(cols, "v.metadata") {
			return 0, 0, fmt.Errorf("%s: no v.metadata column (columns %v)", path, cols)
		}
		if slices.ContainsFunc(cols, func(c string) bool { return strings.HasPrefix(c, "v.typed_value") }) {
			shredded++
		} else {
			unshredded++
		}
	}
	return shredded, unshredded, nil
}

// checkVariant: every live data file stores v unshredded (metadata and
// value binaries only).
func checkVariant(v *view) error {
	sh, un, err := v.variantFiles()
	if err != nil {
		return err
	}
	if sh > 0 || un == 0 {
		return fmt.Errorf("%d shredded and %d unshredded data files", sh, un)
	}
	return nil
}

// checkVariantShredded: the data files hold typed_value columns under v.
func checkVariantShredded(v *view) error {
	sh, _, err := v.variantFiles()
	if err != nil {
		return err
	}
	if sh == 0 {
		return errors.New("no live data file has a v.typed_value column")
	}
	return nil
}

// checkGeo: geometry under srid:3857 and a non-EPSG CRS, geography under its
// default CRS, and a vector committed on the table.
func checkGeo(v *view) error {
	var crs []string
	for _, f := range v.fieldsOfType(func(t iceberg.Type) bool {
		switch t.(type) {
		case iceberg.GeometryType, iceberg.GeographyType:
			return true
		}
		return false
	}) {
		crs = append(crs, f.Type.String())
	}
	want := []string{"geometry(srid:3857)", "geography", "geometry(ESRI:102008)"}
	if !slices.Equal(crs, want) {
		return fmt.Errorf("spatial columns %v, want %v", crs, want)
	}
	return v.someVector()
}

func (v *view) someVector() error {
	for _, s := range v.main {
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		for _, e := range es {
			if e.addedBy(s) && isDV(e.file) {
				return nil
			}
		}
	}
	return errors.New("no deletion vector committed on main")
}

// checkTimestampNs: timestamp_ns and timestamptz_ns columns, and a data
// file that stores _row_id (the update).
func checkTimestampNs(v *view) error {
	var types []string
	for _, f := range v.fieldsOfType(func(t iceberg.Type) bool {
		switch t.(type) {
		case iceberg.TimestampNsType, iceberg.TimestampTzNsType:
			return true
		}
		return false
	}) {
		types = append(types, f.Type.String())
	}
	if !slices.Equal(types, []string{"timestamp_ns", "timestamptz_ns"}) {
		return fmt.Errorf("nanosecond columns %v", types)
	}
	live, err := v.live(v.main[len(v.main)-1])
	if err != nil {
		return err
	}
	for path, e := range live {
		if !isData(e.file) {
			continue
		}
		c, err := v.lineage(path)
		if err != nil {
			return err
		}
		if c.rowID.set() > 0 {
			return nil
		}
	}
	return errors.New("no live data file stores _row_id")
}

// checkDefaults: a top-level column and a struct field with an
// initial-default, a write-default that differs from its initial-default,
// both added after a vector was committed on rows written before them.
func checkDefaults(v *view) error {
	withDefault := v.fieldsOfType(func(iceberg.Type) bool { return true })
	var top, nested, changed bool
	for _, f := range withDefault {
		if f.InitialDefault == nil {
			continue
		}
		if slices.ContainsFunc(v.meta.CurrentSchema().Fields(), func(g iceberg.NestedField) bool { return g.ID == f.ID }) {
			top = true
		} else {
			nested = true
		}
		if f.WriteDefault != nil && fmt.Sprint(f.WriteDefault) != fmt.Sprint(f.InitialDefault) {
			changed = true
		}
	}
	if !top || !nested || !changed {
		return fmt.Errorf("defaults: top-level %v, nested %v, write-default changed %v", top, nested, changed)
	}
	first := v.main[0]
	if first.SchemaID == nil || *first.SchemaID == v.meta.CurrentSchema().ID {
		return errors.New("the first commit is under the current schema: no rows written before the defaults")
	}
	return v.someVector()
}

// checkRewriteManifestsKeeps: a replace snapshot of main rewrites manifests
// whose EXISTING data entries store the first_row_id they had in its parent
// (Iceberg 1.12), and Spark reads no change there.
func checkRewriteManifestsKeeps(v *view) error {
	for i, s := range v.main {
		parent := v.parent(s)
		if op(s) != table.OpReplace || parent == nil {
			continue
		}
		es, err := v.snapEntries(s)
		if err != nil {
			return err
		}
		before, err := v.live(*parent)
		if err != nil {
			return err
		}
		kept := 0
		for _, e := range es {
			if !e.own || e.status != iceberg.EntryStatusEXISTING || !isData(e.file) {
				continue
			}
			var had *int64
			if was := before[e.path()].file; was != nil {
				had = was.FirstRowID()
			}
			if e.rawFirstRowID == nil || had == nil || *e.rawFirstRowID != *had {
				return fmt.Errorf("replace %d: EXISTING %s stores first_row_id %s, its parent's is %s", s.SnapshotID, e.path(), py(e.rawFirstRowID), py(had))
			}
			kept++
		}
		if kept == 0 {
			continue
		}
		if n := len(v.exp.Snapshots[i].Events); n > 0 {
			return fmt.Errorf("replace %d keeps first_row_id of %d files, yet Spark reads %d events there", s.SnapshotID, kept, n)
		}
		return nil
	}
	return errors.New("no replace snapshot of main rewrites manifests with EXISTING data entries")
}
