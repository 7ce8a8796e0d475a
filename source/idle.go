package source

import (
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

// Idle drops what the table keeps only to read its next commits faster:
// the footers of its data files, its data-file index (which, with a
// FileIndex store, the state file still holds, and which is read again
// from there), the delete and equality-delete caches, the ancestry and
// the file IO of the loaded metadata. A table its catalog's change check
// covers also drops the loaded metadata itself, keeping only its location
// and a summary (droppedMeta): it is loaded again only when the check
// names another location (or by the rare reload that makes sure), and
// Refresh tells then, from the summary, whether it changed. A table
// polled on its own keeps its metadata, which each poll compares with the
// catalog's answer (a REST server's 304 answers with it). Everything
// dropped is rebuilt, as it was at the first load, by the next load or
// read (warm). A daemon following thousands of tables calls
// it on those that stay idle (see cdc.Idler), so that their memory follows
// the tables that change.
func (t *Table) Idle() {
	if fi := t.files; fi != nil && fi.store != nil && (len(fi.staged) > 0 || fi.reset) {
		return // the index holds what the store does not yet
	}
	t.footers, t.files, t.dels, t.eq, t.stats = nil, nil, nil, nil, nil
	t.v2Known, t.chain = false, nil
	if t.io != nil {
		if err := t.io.close(); err != nil {
			t.log().Warn("close the file IO of an idle table", "table", t.opts.Table, "err", err)
		}
		t.io.mu.Lock()
		t.io.footers = nil
		t.io.mu.Unlock()
	}
	if _, covered := t.Changes(); covered && t.tbl != nil {
		t.dropped = &droppedMeta{loc: t.tbl.MetadataLocation(), sum: summarize(t.tbl.Metadata(), t.opts.Branch)}
		t.tbl, t.reader, t.geoReader, t.io = nil, nil, nil, nil
	}
}

// warm makes the caches Idle dropped (or that a new Table has not made
// yet): at each load of new metadata (adopt), and at the start of a read
// (Commit, InitialRead) of a table that idled since, before it fans out.
func (t *Table) warm() {
	if t.footers == nil {
		t.footers = newFooterCache(defaultFooterBudget)
		if t.io != nil {
			t.io.mu.Lock()
			t.io.footers = t.footers
			t.io.mu.Unlock()
		}
	}
	if t.files == nil {
		files := newFileIndex(defaultFileCacheSize)
		if t.opts.FileIndex != nil {
			files.store, files.staged = t.opts.FileIndex, map[string]*indexedManifest{}
		}
		t.files = files
	}
	if t.dels == nil {
		t.dels, t.eq, t.stats = newDeleteIndex(), newEqCache(), newStatsCache()
	}
}

// droppedMeta is what an idle table keeps of the metadata it dropped.
type droppedMeta struct {
	loc string
	sum metaSummary
}

// metaSummary tells two loads of one metadata location apart should the
// file have been rewritten in place (metadata files are never rewritten
// by Iceberg's writers): what a commit always changes.
type metaSummary struct {
	lastUpdated, lastSeq, head int64
	snapshots, schema, refs    int
}

func summarize(md table.Metadata, branch string) metaSummary {
	s := metaSummary{lastUpdated: md.LastUpdatedMillis(), lastSeq: md.LastSequenceNumber(), snapshots: len(md.Snapshots()), schema: -1}
	if sc := md.CurrentSchema(); sc != nil {
		s.schema = sc.ID
	}
	if h := md.SnapshotByName(branch); h != nil {
		s.head = h.SnapshotID
	}
	for range md.Refs() {
		s.refs++
	}
	return s
}

var _ cdc.Idler = (*Table)(nil)

// CheckFailed implements cdc.CheckFailer: a failed change check told
// nothing about the catalog's tables, so none is covered until a check
// succeeds again, and each polls on its own meanwhile (kept out of
// CheckChanges, whose checks per catalog type only report).
func (c *Catalog) CheckFailed() {
	w := &c.h.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.tables {
		e.covered = false
	}
}

var _ cdc.CheckFailer = (*Catalog)(nil)
