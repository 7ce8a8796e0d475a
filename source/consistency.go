package source

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// A commit's events are computed from what its manifests say it did, so a
// manifest list or manifest that disagrees with its snapshot would lose,
// invent or relabel events without any error. These checks compare what
// the metadata says twice (the snapshot and its manifest list, the
// manifest list and its manifests, the snapshot summary and the entries)
// and stop the table on a disagreement (cdc.ErrPermanent). They cost
// nothing beyond what a commit reads anyway.

// checkSnapshotFields refuses a snapshot the engine cannot follow: no
// manifest list, a sequence number or row lineage that contradicts its
// parent.
func (t *tableMeta) checkSnapshotFields(s *table.Snapshot) error {
	if s.ManifestList == "" && len(s.ManifestLocations) == 0 {
		return malformed(fmt.Sprintf("snapshot %d has no manifest-list", s.SnapshotID))
	}
	if s.ParentSnapshotID == nil {
		return nil
	}
	p := t.tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
	if p == nil {
		return nil
	}
	if p.FirstRowID != nil && s.FirstRowID == nil {
		return malformed(fmt.Sprintf("snapshot %d has no first-row-id but its parent %d has one: row lineage cannot stop", s.SnapshotID, p.SnapshotID))
	}
	if p.FirstRowID != nil && s.FirstRowID != nil && p.AddedRows != nil && *s.FirstRowID < *p.FirstRowID+*p.AddedRows {
		return malformed(fmt.Sprintf("snapshot %d has first-row-id %d, below its parent %d's row ids (%d + %d added rows)",
			s.SnapshotID, *s.FirstRowID, p.SnapshotID, *p.FirstRowID, *p.AddedRows))
	}
	return nil
}

// checkDelta cross-checks snapshot s's manifest list and its own entries
// against the snapshot.
func (t *tableMeta) checkDelta(s *table.Snapshot, d *delta) error {
	bad := func(format string, a ...any) error {
		return malformed(fmt.Sprintf("snapshot %d (sequence number %d): ", s.SnapshotID, s.SequenceNumber) + fmt.Sprintf(format, a...))
	}
	if err := t.checkList(s, d.list); err != nil {
		return err
	}
	v3 := t.tbl.Metadata().Version() >= 3

	// Entries s added: sequence numbers and row-id ranges.
	var ranges [][2]int64
	for _, group := range [][]iceberg.ManifestEntry{d.addedData, d.addedDVs, d.addedPos, d.addedEq} {
		for _, e := range group {
			df := e.DataFile()
			seq := e.SequenceNum()
			switch {
			case v3 && seq <= 0, seq > s.SequenceNumber:
				return bad("%s %s has data sequence number %d, outside 1..%d", fileKind(df), df.FilePath(), seq, s.SequenceNumber)
			case seq != s.SequenceNumber && !isReplace(s):
				return bad("%s %s has data sequence number %d, not the snapshot's, in a %s commit", fileKind(df), df.FilePath(), seq, operation(s))
			}
			if f := df.FirstRowID(); f != nil && s.FirstRowID != nil && df.ContentType() == iceberg.EntryContentData {
				if err := rowRange(*f, df.Count(), s); err != nil {
					return bad("%s %s: %v", fileKind(df), df.FilePath(), err)
				}
				ranges = append(ranges, [2]int64{*f, *f + df.Count()})
			}
		}
	}
	// Entries s removed were live in its parent, so they are no newer than
	// the parent; a snapshot without a parent has nothing to remove.
	parentSeq := s.SequenceNumber - 1
	if s.ParentSnapshotID != nil {
		if p := t.tbl.Metadata().SnapshotByID(*s.ParentSnapshotID); p != nil {
			parentSeq = p.SequenceNumber
		}
	}
	for _, group := range [][]iceberg.ManifestEntry{d.removedData, d.removedDVs, d.removedPos, d.removedEq} {
		for _, e := range group {
			df := e.DataFile()
			if s.ParentSnapshotID == nil {
				return bad("it has no parent, yet it removes %s %s: its parent-snapshot-id is missing", fileKind(df), df.FilePath())
			}
			if e.SequenceNum() > parentSeq {
				return bad("it removes %s %s of data sequence number %d, newer than its parent (sequence number %d): the parent-snapshot-id or the manifests are wrong",
					fileKind(df), df.FilePath(), e.SequenceNum(), parentSeq)
			}
		}
	}
	slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for i := 1; i < len(ranges); i++ {
		if ranges[i][0] < ranges[i-1][1] {
			return bad("two of its data files share row ids (%d..%d and %d..%d)", ranges[i-1][0], ranges[i-1][1]-1, ranges[i][0], ranges[i][1]-1)
		}
	}

	// The summary, when the writer left one, counts the same files.
	if s.Summary != nil {
		for _, c := range []struct {
			key string
			n   int
		}{
			{"added-data-files", len(d.addedData)},
			{"deleted-data-files", len(d.removedData)},
			{"added-delete-files", len(d.addedDVs) + len(d.addedPos) + len(d.addedEq)},
		} {
			v, ok := s.Summary.Properties[c.key]
			if !ok {
				continue
			}
			want, err := strconv.Atoi(v)
			if err != nil || want != c.n {
				return bad("its summary says %s=%s, but its manifests hold %d such entries of its own", c.key, v, c.n)
			}
		}
	}
	return nil
}

// checkList cross-checks snapshot s's manifest list against it.
func (t *tableMeta) checkList(s *table.Snapshot, list []iceberg.ManifestFile) error {
	bad := func(format string, a ...any) error {
		return malformed(fmt.Sprintf("snapshot %d (sequence number %d): ", s.SnapshotID, s.SequenceNumber) + fmt.Sprintf(format, a...))
	}
	chain := t.ancestry()
	for _, m := range list {
		id := m.SnapshotID()
		if id == s.SnapshotID {
			if m.SequenceNum() != s.SequenceNumber {
				return bad("its manifest %s has sequence_number %d, not the snapshot's", m.FilePath(), m.SequenceNum())
			}
			if m.MinSequenceNum() > m.SequenceNum() || m.MinSequenceNum() < 0 {
				return bad("its manifest %s has min_sequence_number %d outside 0..%d", m.FilePath(), m.MinSequenceNum(), m.SequenceNum())
			}
			if f := m.FirstRowID(); f != nil && s.FirstRowID != nil && m.ManifestContent() == iceberg.ManifestContentData {
				if err := rowRange(*f, m.AddedRows()+m.ExistingRows(), s); err != nil {
					return bad("its manifest %s: %v", m.FilePath(), err)
				}
			}
			continue
		}
		// A manifest that s carries over was added by an ancestor (or by a
		// snapshot that was expired since): one added by a snapshot that
		// is not behind s means a wrong parent or a wrong manifest list.
		if seq, ok := chain[id]; ok && seq < s.SequenceNumber {
			continue
		}
		if o := t.tbl.Metadata().SnapshotByID(id); o != nil && !(t.chainCut && o.SequenceNumber < t.chainMin) {
			return bad("its manifest list %s holds manifest %s, added by snapshot %d, which is not an ancestor of it: the parent-snapshot-id or the manifest list is wrong",
				s.ManifestList, m.FilePath(), id)
		}
	}
	return nil
}

// checkReplace checks a replace snapshot from its manifest list alone,
// without reading a manifest: the list, and the files its own manifests
// count against its parent and its summary.
func (t *tableMeta) checkReplace(s *table.Snapshot, list []iceberg.ManifestFile) error {
	if err := t.checkList(s, list); err != nil {
		return err
	}
	var added, removed, addedDeletes int
	counted := true
	for _, m := range list {
		if m.SnapshotID() != s.SnapshotID {
			continue
		}
		if m.AddedDataFiles() < 0 || m.DeletedDataFiles() < 0 {
			counted = false // a writer that left the counts out
		}
		if m.ManifestContent() == iceberg.ManifestContentData {
			added += int(m.AddedDataFiles())
			removed += int(m.DeletedDataFiles())
		} else {
			addedDeletes += int(m.AddedDataFiles())
			removed += int(m.DeletedDataFiles())
		}
	}
	bad := func(format string, a ...any) error {
		return malformed(fmt.Sprintf("snapshot %d (sequence number %d): ", s.SnapshotID, s.SequenceNumber) + fmt.Sprintf(format, a...))
	}
	if s.ParentSnapshotID == nil && removed > 0 && counted {
		return bad("it has no parent, yet its manifests remove %d files: its parent-snapshot-id is missing", removed)
	}
	if s.Summary != nil && counted {
		for _, c := range []struct {
			key string
			n   int
		}{{"added-data-files", added}, {"added-delete-files", addedDeletes}} {
			v, ok := s.Summary.Properties[c.key]
			if !ok {
				continue
			}
			if want, err := strconv.Atoi(v); err != nil || want != c.n {
				return bad("its summary says %s=%s, but its manifest list counts %d", c.key, v, c.n)
			}
		}
	}
	return nil
}

// rowRange checks that n row ids from first lie inside the ids snapshot s
// assigned (first-row-id, added-rows).
func rowRange(first, n int64, s *table.Snapshot) error {
	lo := *s.FirstRowID
	if first < lo {
		return fmt.Errorf("first_row_id %d is below the snapshot's first-row-id %d", first, lo)
	}
	if s.AddedRows == nil || *s.AddedRows < 0 || lo > math.MaxInt64-*s.AddedRows {
		return nil
	}
	if hi := lo + *s.AddedRows; first > hi-n {
		return fmt.Errorf("row ids %d..%d pass the %d the snapshot assigned from %d", first, first+n-1, *s.AddedRows, lo)
	}
	return nil
}

func isReplace(s *table.Snapshot) bool {
	return s.Summary != nil && s.Summary.Operation == table.OpReplace
}

func operation(s *table.Snapshot) string {
	if s.Summary == nil {
		return "unknown"
	}
	return string(s.Summary.Operation)
}

// ancestry maps the snapshots of the branch head's ancestry to their
// sequence numbers, once per metadata load. chainCut says the ancestry
// ends at an expired parent; chainMin is its lowest sequence number.
func (t *tableMeta) ancestry() map[int64]int64 {
	if t.chain != nil {
		return t.chain
	}
	meta := t.tbl.Metadata()
	t.chain, t.chainCut, t.chainMin = map[int64]int64{}, false, math.MaxInt64
	for s := meta.SnapshotByName(t.branch); s != nil; {
		if _, seen := t.chain[s.SnapshotID]; seen {
			break
		}
		t.chain[s.SnapshotID] = s.SequenceNumber
		t.chainMin = min(t.chainMin, s.SequenceNumber)
		if s.ParentSnapshotID == nil {
			break
		}
		if s = meta.SnapshotByID(*s.ParentSnapshotID); s == nil {
			// An expired parent: snapshots older than the cut may be
			// ancestors that are not linked any more.
			t.chainCut = true
		}
	}
	return t.chain
}

// checkSchemas refuses field ids no writer assigns: not positive, above the
// table's last-column-id, or twice in one schema. Rows are read by field
// id, so a wrong id would read a column as null without any error.
func (t *tableMeta) checkSchemas() error {
	meta := t.tbl.Metadata()
	last := meta.LastColumnID()
	for _, sc := range meta.Schemas() {
		seen := map[int]bool{}
		var err error
		var walk func(f iceberg.NestedField)
		walk = func(f iceberg.NestedField) {
			if err != nil {
				return
			}
			switch {
			case f.ID <= 0 || f.ID > last:
				err = fmt.Errorf("schema %d: field %q has id %d, outside 1..%d (last-column-id)", sc.ID, f.Name, f.ID, last)
			case seen[f.ID]:
				err = fmt.Errorf("schema %d: field id %d is used twice", sc.ID, f.ID)
			}
			seen[f.ID] = true
			if nt, ok := f.Type.(iceberg.NestedType); ok {
				for _, c := range nt.Fields() {
					walk(c)
				}
			}
		}
		for _, f := range sc.Fields() {
			walk(f)
		}
		if err != nil {
			return malformed(err.Error())
		}
	}
	return nil
}

func operationOf(s *table.Snapshot) string {
	if s.Summary == nil {
		return "no operation"
	}
	return string(s.Summary.Operation)
}
