package source

import "github.com/icecdc/icecdc/cdc"

// Idle drops what the table keeps only to read its next commits faster:
// the footers of its data files, its data-file index (which, with a
// FileIndex store, the state file still holds, and which is read again
// from there), the delete and equality-delete caches, the ancestry and
// the file IO of the loaded metadata. The loaded metadata stays, so that
// the next Refresh still tells an unchanged table from a changed one;
// everything dropped is rebuilt, as it was at the first load, by the next
// commit read. A daemon following thousands of tables calls it on those
// that stay idle (see cdc.Idler), so that their memory follows the tables
// that change.
func (t *Table) Idle() {
	if fi := t.files; fi.store != nil && (len(fi.staged) > 0 || fi.reset) {
		return // the index holds what the store does not yet
	}
	t.footers = newFooterCache(defaultFooterBudget)
	if t.io != nil {
		t.io.close()
		t.io.mu.Lock()
		t.io.footers = t.footers
		t.io.mu.Unlock()
	}
	files := newFileIndex(defaultFileCacheSize)
	if t.opts.FileIndex != nil {
		files.store, files.staged = t.opts.FileIndex, map[string]*indexedManifest{}
	}
	t.files = files
	t.dels, t.eq, t.stats = newDeleteIndex(), newEqCache(), newStatsCache()
	t.v2Known, t.chain = false, nil
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
