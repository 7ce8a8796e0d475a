package source

import (
	"github.com/icecdc/icecdc/catalogwatch"
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
	t.footers = nil
	t.caches.drop()
	t.eqIndex.drop()
	t.forget()
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
	t.caches.warm(t.opts.FileIndex)
	t.eqIndex.warm()
}

var _ cdc.Idler = (*Table)(nil)

// CheckFailed implements catalogwatch.CheckFailer: a failed change check
// told nothing about the catalog's tables, so none is covered until a
// check succeeds again, and each polls on its own meanwhile (kept out of
// CheckChanges, whose checks per catalog type only report).
func (c *Catalog) CheckFailed() {
	w := &c.h.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range w.tables {
		e.covered = false
	}
}

var _ catalogwatch.CheckFailer = (*Catalog)(nil)
