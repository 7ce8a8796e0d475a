package source

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"iter"
	"slices"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	lru "github.com/hashicorp/golang-lru/v2"
)

// defaultFileCacheSize bounds the decoded data-file entries kept per table
// (~200 bytes each).
const defaultFileCacheSize = 1 << 20

// maxIndexedFiles bounds the data files the index keeps (~100 bytes each);
// past it the index starts over.
const maxIndexedFiles = 4 << 20

// fileIndex locates data files that a snapshot touches without adding or
// removing them (a new deletion vector names its data file by path only).
//
// Its unit is the data manifest: manifests are immutable, so what one
// holds never changes, and a file known to be in manifest M is live in a
// snapshot, with the first_row_id recorded, exactly when M is in that
// snapshot's manifest list. Nothing is trusted across manifest lists
// otherwise: a compaction, a rewrite of manifests (which gives unchanged
// rows new row ids) or a removed file simply drop the manifests that held
// the old entries, and a lookup through the new list finds the new ones.
// A manifest is decoded at most once: its live files are indexed, and a
// file not found in any decoded manifest of the list is only searched for
// in the others. With a Store, the decoded manifests are kept next to the
// table's checkpoint, so a restart decodes none of them again.
type fileIndex struct {
	// metas caches decoded entries by path, with the manifest each came
	// from; an entry is used only while that manifest is live.
	metas *lru.Cache[string, cachedMeta]
	// manifests are the data manifests decoded whole, by path.
	manifests map[string]*indexedManifest
	// where lists the decoded manifests holding each data file (more than
	// one when manifests were rewritten).
	where map[string][]*indexedManifest
	files int // len of every manifests[].files

	store     IndexStore
	storeUUID string // the table uuid the store was loaded for
	staged    map[string]*indexedManifest
	reset     bool
}

type cachedMeta struct {
	meta     dataFileMeta
	manifest string
}

// indexedManifest is a decoded data manifest: its live data files, and
// what the manifest list says of it, to tell a stored record that does not
// belong to this table's manifest apart.
type indexedManifest struct {
	path       string
	length     int64
	seq        int64
	firstRowID int64 // -1: none
	files      []indexedFile
}

// indexedFile is what a lookup needs to know of a data file before its
// manifest entry is decoded again.
type indexedFile struct {
	path                       string
	firstRowID, dataSeq, count int64
}

func newFileIndex(size int) *fileIndex {
	c, err := lru.New[string, cachedMeta](size)
	if err != nil {
		panic(err) // only for size <= 0, a programming error
	}
	return &fileIndex{metas: c, manifests: map[string]*indexedManifest{}, where: map[string][]*indexedManifest{}}
}

// remember caches a data file whose first_row_id is known, as listed in
// manifest; a file without one is not final (an upgrade to v3 back-fills
// it) and is not cached.
func (fi *fileIndex) remember(m dataFileMeta, manifest string) {
	if m.firstRowID != nil {
		fi.metas.Add(m.path(), cachedMeta{meta: m, manifest: manifest})
	}
}

// add indexes a decoded manifest's live data files.
func (fi *fileIndex) add(im *indexedManifest) {
	if _, ok := fi.manifests[im.path]; ok {
		return
	}
	if fi.files+len(im.files) > maxIndexedFiles {
		fi.clear()
	}
	fi.manifests[im.path] = im
	fi.files += len(im.files)
	for _, f := range im.files {
		fi.where[f.path] = append(fi.where[f.path], im)
	}
	if fi.store != nil {
		fi.staged[im.path] = im
	}
}

// drop forgets a decoded manifest.
func (fi *fileIndex) drop(path string) {
	im, ok := fi.manifests[path]
	if !ok {
		return
	}
	delete(fi.manifests, path)
	delete(fi.staged, path)
	fi.files -= len(im.files)
	for _, f := range im.files {
		w := slices.DeleteFunc(fi.where[f.path], func(x *indexedManifest) bool { return x == im })
		if len(w) == 0 {
			delete(fi.where, f.path)
		} else {
			fi.where[f.path] = w
		}
	}
}

// clear forgets every decoded manifest (and the stored ones, at the next
// flush).
func (fi *fileIndex) clear() {
	fi.manifests = map[string]*indexedManifest{}
	fi.where = map[string][]*indexedManifest{}
	fi.files = 0
	if fi.store != nil {
		fi.staged = map[string]*indexedManifest{}
		fi.reset = true
	}
}

// holder returns the live manifest that holds path according to the index.
func (fi *fileIndex) holder(path string, live map[string]iceberg.ManifestFile) *indexedManifest {
	for _, im := range fi.where[path] {
		if _, ok := live[im.path]; ok {
			return im
		}
	}
	return nil
}

// matches reports whether a decoded manifest is the one the list entry m
// describes.
func (im *indexedManifest) matches(m iceberg.ManifestFile) bool {
	first := int64(-1)
	if f := m.FirstRowID(); f != nil {
		first = *f
	}
	// A manifest written before an upgrade to v3 has no first_row_id in
	// older manifest lists and one in later ones; its entries were final
	// (or it would not be indexed) under both.
	return im.length == m.Length() && im.seq == m.SequenceNum() && (im.firstRowID == first || im.firstRowID < 0 || first < 0)
}

func newIndexedManifest(m iceberg.ManifestFile) *indexedManifest {
	im := &indexedManifest{path: m.FilePath(), length: m.Length(), seq: m.SequenceNum(), firstRowID: -1}
	if f := m.FirstRowID(); f != nil {
		im.firstRowID = *f
	}
	return im
}

// addFile adds a decoded live entry; a file without first_row_id makes
// the manifest not final (nil): it is not indexed.
func (im *indexedManifest) addFile(m dataFileMeta) *indexedManifest {
	if im == nil || m.firstRowID == nil {
		return nil
	}
	im.files = append(im.files, indexedFile{path: m.path(), firstRowID: *m.firstRowID, dataSeq: m.dataSeq, count: m.file.Count()})
	return im
}

// agrees reports whether the index's record of m's file is m.
func (im *indexedManifest) agrees(m dataFileMeta) bool {
	for _, f := range im.files {
		if f.path == m.path() {
			return m.firstRowID != nil && f.firstRowID == *m.firstRowID && f.dataSeq == m.dataSeq && f.count == m.file.Count()
		}
	}
	return false
}

// locate returns the metadata of the data files at paths as seen through
// the manifest list list. Files not live there are missing from the result.
// nextRowID bounds the row ids of the entries read (see checkEntry).
// The manifests the index says hold the files are decoded; a file the
// index does not know is searched for in the manifests not decoded yet,
// newest first, as many at once as the pool reads, until every file is
// found.
func (t *Table) locate(ctx context.Context, fs iceio.IO, list []iceberg.ManifestFile, paths []string, nextRowID int64) (map[string]dataFileMeta, error) {
	fi := t.files
	t.loadIndex()
	out := make(map[string]dataFileMeta, len(paths))
	live := make(map[string]iceberg.ManifestFile, len(list))
	for _, m := range list {
		if m.ManifestContent() == iceberg.ManifestContentData {
			live[m.FilePath()] = m
		}
	}
	for path, im := range fi.manifests {
		if m, ok := live[path]; ok && !im.matches(m) {
			t.log().Warn("the data-file index does not match the table's manifests: rebuilding it", "table", t.name(t.tbl), "manifest", path)
			fi.clear()
			break
		}
	}
	want := make(map[string]struct{})
	holders := map[string]iceberg.ManifestFile{}
	for _, p := range paths {
		if c, ok := fi.metas.Get(p); ok {
			if _, ok := live[c.manifest]; ok {
				out[p] = c.meta
				continue
			}
		}
		want[p] = struct{}{}
		if im := fi.holder(p, live); im != nil {
			holders[im.path] = live[im.path]
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	// First the manifests the index names, then, for files still missing,
	// the manifests never decoded, newest first: recent files are the
	// likeliest targets.
	var first, rest []iceberg.ManifestFile
	for _, m := range list {
		if _, ok := holders[m.FilePath()]; ok {
			first = append(first, m)
		} else if _, ok := live[m.FilePath()]; ok && fi.manifests[m.FilePath()] == nil {
			rest = append(rest, m)
		}
	}
	slices.SortStableFunc(rest, func(a, b iceberg.ManifestFile) int { return cmp.Compare(b.SequenceNum(), a.SequenceNum()) })
	if err := t.searchManifests(ctx, fs, first, want, out, nextRowID); err != nil {
		return nil, err
	}
	if len(holders) > 0 {
		bad := ""
		for p := range want {
			if fi.holder(p, live) != nil {
				bad = p // the index named a manifest that does not hold the file
			}
		}
		for p, m := range out {
			if im := fi.holder(p, live); im != nil && !im.agrees(m) {
				bad = p // the index's record differs from the manifest's
			}
		}
		if bad != "" {
			// What was read from the manifests themselves stands; the
			// index is rebuilt from them.
			t.log().Warn("the data-file index disagrees with the manifest that holds a file: rebuilding it", "table", t.name(t.tbl), "file", bad)
			fi.clear()
			rest = rest[:0]
			for _, m := range list {
				if _, ok := live[m.FilePath()]; ok {
					rest = append(rest, m)
				}
			}
			slices.SortStableFunc(rest, func(a, b iceberg.ManifestFile) int { return cmp.Compare(b.SequenceNum(), a.SequenceNum()) })
		}
	}
	if err := t.searchManifests(ctx, fs, rest, want, out, nextRowID); err != nil {
		return nil, err
	}
	return out, nil
}

// searchManifests decodes ms, a wave of io.concurrency manifests at a
// time, indexing them, until every path of want is found (and moved to
// out). Without a stored index (a `changes` run, whose index dies with
// it) a wave's manifests are first scanned for the paths' bytes and only
// those that hold one are decoded; the others are decoded only if some
// path is still missing after every wave.
func (t *Table) searchManifests(ctx context.Context, fs iceio.IO, ms []iceberg.ManifestFile, want map[string]struct{}, out map[string]dataFileMeta, nextRowID int64) error {
	wave := cap(t.pool.slots)
	scan := t.files.store == nil && len(want) <= maxScannedPaths
	var skipped []iceberg.ManifestFile
	for start := 0; start < len(ms) && len(want) > 0; start += wave {
		batch := ms[start:min(start+wave, len(ms))]
		if scan {
			var err error
			var rest []iceberg.ManifestFile
			if batch, rest, err = t.scanManifests(ctx, fs, batch, want); err != nil {
				return err
			}
			skipped = append(skipped, rest...)
		}
		if err := t.decodeManifests(ctx, fs, batch, want, out, nextRowID); err != nil {
			return err
		}
	}
	for start := 0; start < len(skipped) && len(want) > 0; start += wave {
		if err := t.decodeManifests(ctx, fs, skipped[start:min(start+wave, len(skipped))], want, out, nextRowID); err != nil {
			return err
		}
	}
	return nil
}

// maxScannedPaths is the most paths a byte scan looks for: past it, most
// manifests are likely to hold one, and decoding them is cheaper.
const maxScannedPaths = 16

// scanManifests splits ms into the manifests whose bytes hold one of the
// paths of want, or that could not be scanned, and the others.
func (t *fileReader) scanManifests(ctx context.Context, fs iceio.IO, ms []iceberg.ManifestFile, want map[string]struct{}) (hit, miss []iceberg.ManifestFile, err error) {
	paths := make([][]byte, 0, len(want))
	for p := range want {
		paths = append(paths, []byte(p))
	}
	found := make([]bool, len(ms))
	err = t.pool.each(ctx, len(ms), func(i int) error {
		found[i] = true
		m := ms[i]
		if m.Length() <= 0 || m.Length() > scanRawLimit {
			return nil
		}
		if err := scanBytes.Acquire(ctx, m.Length()); err != nil {
			return err
		}
		defer scanBytes.Release(m.Length())
		f, err := fs.Open(m.FilePath())
		if err != nil {
			return nil // the decode reports it
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, m.Length()+1))
		if err != nil || int64(len(data)) != m.Length() {
			return nil
		}
		if ok, err := scanContainer(data, paths); err == nil && !ok {
			found[i] = false
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for i, m := range ms {
		if found[i] {
			hit = append(hit, m)
		} else {
			miss = append(miss, m)
		}
	}
	return hit, miss, nil
}

// decodeManifests decodes ms at once, indexing them, and moves the paths
// of want they hold to out.
func (t *Table) decodeManifests(ctx context.Context, fs iceio.IO, ms []iceberg.ManifestFile, want map[string]struct{}, out map[string]dataFileMeta, nextRowID int64) error {
	if len(ms) == 0 {
		return nil
	}
	fi := t.files
	// Column statistics are most of a manifest entry's decoding cost and a
	// lookup needs none of them.
	entries := func(m iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error] {
		return iceberg.EntriesWithProjection(fs, m, true, iceberg.ManifestEntryProjection{})
	}
	reads, err := t.readManifests(ctx, ms, entries, nil)
	if err != nil {
		return err
	}
	for i, m := range ms {
		im := newIndexedManifest(m)
		for _, e := range reads[i].entries {
			if err := checkEntry(e, nextRowID); err != nil {
				return fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			dm := metaOf(e)
			if _, ok := want[dm.path()]; ok {
				out[dm.path()] = dm
				delete(want, dm.path())
				fi.remember(dm, m.FilePath())
			}
			im = im.addFile(dm)
		}
		if err := reads[i].err; err != nil {
			return decodeError("manifest", m.FilePath(), err)
		}
		if im != nil {
			fi.add(im)
		}
		if len(want) == 0 {
			break
		}
	}
	return nil
}
