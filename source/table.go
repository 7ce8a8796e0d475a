package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

// Table is one followed Iceberg table on one branch.
type Table struct {
	opts  Options
	load  func(context.Context) (*table.Table, error)
	tbl   *table.Table
	files *fileIndex
	dels  *deleteIndex
	eq    eqCache

	v2Known, v2Deletes bool            // see mayHaveV2Deletes
	chain              map[int64]int64 // see ancestry
	chainCut           bool
	chainMin           int64
}

var _ cdc.Source = (*Table)(nil)

func newTable(o Options, load func(context.Context) (*table.Table, error)) *Table {
	return &Table{opts: o, load: load, files: newFileIndex(defaultFileCacheSize), dels: newDeleteIndex(), eq: eqCache{}}
}

// errNotLoaded is returned by a Table whose first Refresh has not
// succeeded yet.
var errNotLoaded = errors.New("table not loaded yet")

// Refresh reloads the table's metadata.
func (t *Table) Refresh(ctx context.Context) error {
	tbl, err := t.load(ctx)
	if err != nil {
		return err
	}
	if v := tbl.Metadata().Version(); v < 3 {
		return fmt.Errorf("table %s: format version %d: %w", t.name(tbl), v, ErrNotV3)
	}
	t.tbl = tbl
	t.v2Known, t.chain = false, nil
	if err := t.checkSchemas(); err != nil {
		return err
	}
	return nil
}

// Iceberg returns the loaded iceberg-go table.
func (t *Table) Iceberg() *table.Table { return t.tbl }

func (t *Table) name(tbl *table.Table) string {
	if t.opts.MetadataPath != "" {
		return t.opts.MetadataPath
	}
	return strings.Join(tbl.Identifier(), ".")
}

// Info describes the table for event envelopes.
func (t *Table) Info() cdc.TableInfo {
	if t.tbl == nil {
		ns, name, _ := strings.Cut(t.opts.Table, ".")
		return cdc.TableInfo{Catalog: t.opts.CatalogName, Namespace: ns, Name: name}
	}
	ident := t.tbl.Identifier()
	ns, name := "", ""
	if n := len(ident); n > 0 {
		name = ident[n-1]
		ns = strings.Join(ident[:n-1], ".")
	}
	sc := t.tbl.Schema()
	var keys []string
	for _, id := range sc.IdentifierFieldIDs {
		if f, ok := sc.FindFieldByID(id); ok {
			keys = append(keys, f.Name)
		}
	}
	if len(t.opts.KeyFields) > 0 {
		keys = t.opts.KeyFields
	}
	cat := t.opts.CatalogName
	if cat == "" && t.opts.MetadataPath == "" {
		cat = "local"
	}
	return cdc.TableInfo{
		Catalog:   cat,
		Namespace: ns,
		Name:      name,
		UUID:      t.tbl.Metadata().TableUUID().String(),
		Schema:    sc,
		KeyFields: keys,
	}
}

// Snapshots returns the snapshots of the branch's ancestry with
// afterSeq < sequence number <= toSeq (toSeq <= 0: no upper bound), in
// ascending sequence number. It fails, rather than return a partial list,
// when the ancestry cannot be followed down to afterSeq: a parent that
// was expired while changes after afterSeq depended on it (ErrHistory),
// or a snapshot graph that is not a chain of increasing sequence numbers
// (a cycle, a repeated or decreasing sequence number: ErrPermanent).
func (t *Table) Snapshots(_ context.Context, afterSeq, toSeq int64) ([]cdc.SnapshotInfo, error) {
	if t.tbl == nil {
		return nil, errNotLoaded
	}
	var out []cdc.SnapshotInfo
	_, err := t.walk(afterSeq, true, func(s *table.Snapshot) {
		if toSeq <= 0 || s.SequenceNumber <= toSeq {
			out = append(out, snapshotInfo(s))
		}
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(out)
	return out, nil
}

// Retained returns the branch's ancestry that the metadata still holds, in
// ascending sequence number; whole is false when its oldest snapshot's
// parent was expired.
func (t *Table) Retained(_ context.Context) (_ []cdc.SnapshotInfo, whole bool, _ error) {
	if t.tbl == nil {
		return nil, false, errNotLoaded
	}
	var out []cdc.SnapshotInfo
	whole, err := t.walk(-1, false, func(s *table.Snapshot) { out = append(out, snapshotInfo(s)) })
	if err != nil {
		return nil, false, err
	}
	slices.Reverse(out)
	return out, whole, nil
}

// walk visits the branch's ancestry from the head down, every snapshot with
// a sequence number above afterSeq, and checks the graph (see Snapshots).
// An expired parent ends the walk: with strict, it is an error unless no
// change above afterSeq can be missing; whole reports whether the walk
// reached afterSeq or the branch's first snapshot. Each snapshot is
// visited once, so a parent cycle costs at most one pass.
func (t *Table) walk(afterSeq int64, strict bool, visit func(*table.Snapshot)) (whole bool, _ error) {
	meta := t.tbl.Metadata()
	name := t.name(t.tbl)
	head := meta.SnapshotByName(t.opts.Branch)
	if head == nil {
		for n, ref := range meta.Refs() {
			if n == t.opts.Branch {
				return false, &graphError{msg: fmt.Sprintf("table %s: branch %s points at snapshot %d, which is not in the table metadata", name, n, ref.SnapshotID)}
			}
		}
		if t.opts.Branch != table.MainBranch {
			return false, fmt.Errorf("table %s: no branch %q", name, t.opts.Branch)
		}
		return true, nil // an empty table has no snapshots yet
	}
	seen := make(map[int64]bool)
	for s := head; ; {
		if seen[s.SnapshotID] {
			return false, &graphError{msg: fmt.Sprintf("table %s: the parent chain of branch %s loops back to snapshot %d (a cycle in parent-snapshot-id)", name, t.opts.Branch, s.SnapshotID)}
		}
		seen[s.SnapshotID] = true
		if s.SequenceNumber < 0 {
			return false, &graphError{msg: fmt.Sprintf("table %s: snapshot %d has a negative sequence-number %d", name, s.SnapshotID, s.SequenceNumber)}
		}
		if s.SequenceNumber == 0 && s.FirstRowID != nil {
			// Sequence number 0 is what format v1 snapshots read as; a
			// snapshot with row lineage was written under v3.
			return false, &graphError{msg: fmt.Sprintf("table %s: snapshot %d has first-row-id but sequence-number 0 (missing?)", name, s.SnapshotID)}
		}
		if s.SequenceNumber <= afterSeq {
			return true, nil
		}
		visit(s)
		if s.ParentSnapshotID == nil {
			return true, nil // the branch's first snapshot: its history is whole
		}
		p := meta.SnapshotByID(*s.ParentSnapshotID)
		if p == nil {
			// Expired. Nothing is lost if the parent's sequence number,
			// which is below s's, cannot be above afterSeq.
			if s.SequenceNumber-1 <= afterSeq {
				return true, nil
			}
			if !strict {
				return false, nil
			}
			return false, &graphError{history: true, msg: fmt.Sprintf("table %s: snapshot %d (sequence number %d) has parent %d, which was expired: "+
				"the changes of the commits between sequence number %d and %d are no longer in the table's history", name, s.SnapshotID, s.SequenceNumber, *s.ParentSnapshotID, afterSeq, s.SequenceNumber)}
		}
		if p.SequenceNumber >= s.SequenceNumber && (p.SequenceNumber > 0 || s.SequenceNumber > 0) && !seen[p.SnapshotID] {
			return false, &graphError{msg: fmt.Sprintf("table %s: snapshot %d has sequence-number %d, not above its parent %d's %d: sequence numbers must increase along a branch",
				name, s.SnapshotID, s.SequenceNumber, p.SnapshotID, p.SequenceNumber)}
		}
		s = p
	}
}

// graphError is a snapshot history that cannot be followed. history marks
// lost history (cdc.ErrHistory); otherwise the metadata is malformed
// (cdc.ErrPermanent). Neither is retried.
type graphError struct {
	msg     string
	history bool
}

func (e *graphError) Error() string { return e.msg }

func (e *graphError) Is(target error) bool {
	if e.history {
		return target == cdc.ErrHistory
	}
	return target == cdc.ErrPermanent
}

func snapshotInfo(s *table.Snapshot) cdc.SnapshotInfo {
	si := cdc.SnapshotInfo{
		ID:             s.SnapshotID,
		SequenceNumber: s.SequenceNumber,
		TimestampMs:    s.TimestampMs,
		HasLineage:     s.FirstRowID != nil,
	}
	if s.ParentSnapshotID != nil {
		si.ParentID = *s.ParentSnapshotID
	}
	if s.Summary != nil {
		si.Operation = string(s.Summary.Operation)
	}
	if s.SchemaID != nil {
		si.SchemaID = *s.SchemaID
	}
	return si
}

// schemaFor returns the schema a snapshot's rows are read and encoded with.
func (t *Table) schemaFor(s *table.Snapshot) *iceberg.Schema {
	if s.SchemaID != nil {
		for _, sc := range t.tbl.Metadata().Schemas() {
			if sc.ID == *s.SchemaID {
				return sc
			}
		}
	}
	return t.tbl.Schema()
}

// Head returns the followed branch's head snapshot.
func (t *Table) Head() (cdc.SnapshotInfo, bool) {
	if t.tbl == nil {
		return cdc.SnapshotInfo{}, false
	}
	s := t.tbl.Metadata().SnapshotByName(t.opts.Branch)
	if s == nil {
		return cdc.SnapshotInfo{}, false
	}
	return snapshotInfo(s), true
}

// HasSnapshot reports whether the loaded metadata still holds snapshot id.
func (t *Table) HasSnapshot(id int64) bool {
	if t.tbl == nil {
		return false
	}
	return t.tbl.Metadata().SnapshotByID(id) != nil
}
