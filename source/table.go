package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

// Table is one followed Iceberg table on one branch. Its methods are
// called by one goroutine at a time; inside a commit, reads fan out
// through the reader's pool, and the caches they share are safe for
// concurrent use.
//
// A Table is its options, its catalog and four parts, each in a file of
// its own: the loaded metadata and the walk of its snapshots (tableMeta,
// meta.go), the file reader of the loaded metadata (fileReader,
// reader.go), the equality-delete index (eqIndex, equality.go) and the
// data-file and delete caches (caches, caches.go). Its own methods load
// the table and compute a commit from the parts.
type Table struct {
	opts Options
	load func(context.Context) (*table.Table, error)
	// closeCatalog releases the catalog the table is loaded through (nil
	// for a metadata file).
	closeCatalog func()
	// commit commits to the table through its catalog (nil for a
	// metadata file); only the retention hold uses it.
	commit commitFunc
	// watch is the table's entry in its shared catalog's change checks
	// (nil: no shared catalog), see watch.go.
	watch    *watchEntry
	watchSet *watchSet

	tableMeta
	fileReader
	eqIndex
	caches
}

var _ cdc.Source = (*Table)(nil)

// newTable returns the table of o; its caller sets its load (and commit).
func newTable(o Options, closeCatalog func()) *Table {
	// The caches are made by the first load (warm), and dropped again by
	// Idle: a followed table that stays idle costs none.
	return &Table{opts: o, closeCatalog: closeCatalog,
		tableMeta:  tableMeta{branch: o.Branch},
		fileReader: fileReader{pool: newIOPool(o.IOConcurrency)}}
}

// errNotLoaded is returned by a Table whose first Refresh has not
// succeeded yet.
var errNotLoaded = errors.New("table not loaded yet")

// Refresh reloads the table's metadata and reports whether it changed
// since the last successful Refresh. The catalog's answer (or the metadata
// file) is its only read: when the metadata location and content are the
// ones already loaded, the table keeps what it has, IO included.
func (t *Table) Refresh(ctx context.Context) (changed bool, err error) {
	defer func() { err = t.named(err) }()
	tbl, err := t.load(ctx)
	if err != nil {
		return false, err
	}
	if t.watch != nil {
		t.watchSet.setLoaded(t.watch, tbl.MetadataLocation())
	}
	if v := tbl.Metadata().Version(); v < 3 {
		return false, fmt.Errorf("format version %d: %w", v, ErrNotV3)
	}
	if d := t.dropped; d != nil && t.tbl == nil {
		// The metadata Idle dropped: unchanged if the catalog still
		// names the same file, as it was.
		t.dropped = nil
		t.adopt(tbl)
		return d.loc != tbl.MetadataLocation() || d.sum != summarize(tbl.Metadata(), t.opts.Branch), t.invalid
	}
	if t.tbl == tbl || t.tbl != nil && t.tbl.MetadataLocation() == tbl.MetadataLocation() && t.tbl.Metadata().Equals(tbl.Metadata()) {
		return false, t.invalid
	}
	t.adopt(tbl)
	return true, t.invalid
}

// adopt makes tbl the loaded metadata.
func (t *Table) adopt(tbl *table.Table) {
	// One IO per loaded metadata (a REST catalog may vend new credentials
	// with it), opened on first use and shared by every read of it.
	t.warm()
	old := t.io
	t.io = &tableIO{open: tbl.FS, footers: t.footers}
	t.tbl = tbl
	t.reader = newReader(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), t.io.get)
	t.geoReader = nil
	if hasGeo(tbl.Metadata()) {
		t.geoReader = newReader(tbl.Identifier(), newBinaryGeoMetadata(tbl.Metadata()), tbl.MetadataLocation(), t.io.get)
	}
	t.forget()
	if err := old.close(); err != nil {
		t.log().Warn("close the file IO of the table's previous metadata", "table", t.name(tbl), "err", err)
	}
	t.warnLocations()
	t.invalid = t.checkSchemas()
}

// warnLocations says in one WARN line, at the first load and whenever a
// reload changes it, where the table's files may be read from when
// allowed_locations is unset: the metadata says so (see tableLocations),
// and an operator should see it. Only to a Log given: a one-shot read
// (icecdc changes) keeps its stderr for its error.
func (t *Table) warnLocations() {
	if len(t.opts.AllowedLocations) > 0 || t.opts.Log == nil {
		return
	}
	d := tableLocations(t.opts, t.tbl.Metadata()).describe
	if d == t.warnedLocations {
		return
	}
	t.warnedLocations = d
	t.opts.Log.Warn("allowed_locations unset: the table's files are read from where its metadata and the warehouse say; set allowed_locations to confine them",
		"table", t.name(t.tbl), "allowed", d)
}

// named gives err the table's name, once: every error a method of Table
// returns (and every error of a commit's Rest) is a cdc.TableError, and
// the steps below the methods do not name the table in their texts.
func (t *Table) named(err error) error {
	return tableError(t.displayName(), err)
}

// displayName is the table's name for errors, loaded or not.
func (t *Table) displayName() string {
	switch {
	case t.opts.MetadataPath != "":
		return t.opts.MetadataPath
	case t.tbl != nil:
		return t.name(t.tbl)
	}
	return t.opts.Table
}

func tableError(name string, err error) error {
	if err == nil {
		return nil
	}
	return &cdc.TableError{Table: name, Err: err}
}

// namedRest makes c's Rest name the table in its errors, as name.
func namedRest(c *cdc.Commit, name string) {
	if c == nil || c.Rest == nil {
		return
	}
	rest := c.Rest
	c.Rest = func(ctx context.Context, from int, yield func([]cdc.Event) error) error {
		return tableError(name, rest(ctx, from, yield))
	}
}

// Close releases the table's catalog and IO. The Table must not be used
// afterwards.
func (t *Table) Close() error {
	err := t.io.close()
	t.io = nil
	if t.watch != nil {
		t.watchSet.remove(t.watch)
		t.watch = nil
	}
	if t.closeCatalog != nil {
		t.closeCatalog()
	}
	return err
}

func (t *Table) log() *slog.Logger {
	if t.opts.Log != nil {
		return t.opts.Log
	}
	return slog.Default()
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
func (t *Table) Snapshots(_ context.Context, afterSeq, toSeq int64) (_ []cdc.SnapshotInfo, err error) {
	defer func() { err = t.named(err) }()
	if t.tbl == nil {
		return nil, errNotLoaded
	}
	var out []cdc.SnapshotInfo
	_, err = t.walk(afterSeq, true, func(s *table.Snapshot) {
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
func (t *Table) Retained(_ context.Context) (_ []cdc.SnapshotInfo, whole bool, err error) {
	defer func() { err = t.named(err) }()
	if t.tbl == nil {
		return nil, false, errNotLoaded
	}
	var out []cdc.SnapshotInfo
	whole, err = t.walk(-1, false, func(s *table.Snapshot) { out = append(out, snapshotInfo(s)) })
	if err != nil {
		return nil, false, err
	}
	slices.Reverse(out)
	return out, whole, nil
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
	si.Files = -1
	if s.Summary != nil {
		si.Operation = string(s.Summary.Operation)
		si.Files = summaryFiles(s.Summary.Properties)
	}
	if s.SchemaID != nil {
		si.SchemaID = *s.SchemaID
	}
	return si
}

// summaryFiles is the data and delete files a snapshot's summary says it
// added or removed, or -1 when the summary does not count files. Writers
// leave out a count that is zero, but every Iceberg writer (Java,
// PyIceberg, iceberg-go) writes total-data-files.
func summaryFiles(props iceberg.Properties) int {
	if _, ok := props["total-data-files"]; !ok {
		return -1
	}
	n := 0
	for _, k := range [...]string{"added-data-files", "deleted-data-files", "added-delete-files", "removed-delete-files"} {
		v, err := strconv.Atoi(props[k])
		if props[k] != "" && (err != nil || v < 0) {
			return -1
		}
		n += v
	}
	return n
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
