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

	v2Known, v2Deletes bool // see mayHaveV2Deletes
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
	t.v2Known = false
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
// ascending sequence number.
func (t *Table) Snapshots(_ context.Context, afterSeq, toSeq int64) ([]cdc.SnapshotInfo, error) {
	if t.tbl == nil {
		return nil, errNotLoaded
	}
	meta := t.tbl.Metadata()
	head := meta.SnapshotByName(t.opts.Branch)
	if head == nil {
		if t.opts.Branch != table.MainBranch {
			return nil, fmt.Errorf("table %s: no branch %q", t.name(t.tbl), t.opts.Branch)
		}
		return nil, nil // an empty table has no snapshots yet
	}
	var out []cdc.SnapshotInfo
	for s := head; s != nil; {
		if s.SequenceNumber <= afterSeq {
			break
		}
		if toSeq <= 0 || s.SequenceNumber <= toSeq {
			out = append(out, snapshotInfo(s))
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	slices.Reverse(out)
	return out, nil
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
