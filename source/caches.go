package source

// caches are what a table keeps between commits only to read the next
// ones faster: where each data file's manifest entry is, and the delete
// files live at a snapshot. Idle drops them; warm makes them again.
type caches struct {
	files *fileIndex
	dels  *deleteIndex
}

// warm makes the caches that are not made yet; store keeps the file
// index between runs (Options.FileIndex).
func (c *caches) warm(store IndexStore) {
	if c.files == nil {
		files := newFileIndex(defaultFileCacheSize)
		if store != nil {
			files.store, files.staged = store, map[string]*indexedManifest{}
		}
		c.files = files
	}
	if c.dels == nil {
		c.dels = newDeleteIndex()
	}
}

// drop forgets the caches (Idle).
func (c *caches) drop() { c.files, c.dels = nil, nil }

// flushIndex hands the manifests decoded since the last flush, and the
// stored ones no longer in list, to the store.
func (t *caches) flushIndex(list []string) {
	fi := t.files
	if fi.store == nil || fi.storeUUID == "" {
		return
	}
	live := make(map[string]bool, len(list))
	for _, p := range list {
		live[p] = true
	}
	var drop []string
	for p := range fi.manifests {
		if !live[p] {
			drop = append(drop, p)
		}
	}
	for _, p := range drop {
		fi.drop(p)
	}
	if len(drop) == 0 && len(fi.staged) == 0 && !fi.reset {
		return
	}
	put := make(map[string][]byte, len(fi.staged))
	for p, im := range fi.staged {
		put[p] = im.encode()
	}
	fi.store.StageFileIndex(fi.storeUUID, put, drop, fi.reset)
	clear(fi.staged)
	fi.reset = false
}
