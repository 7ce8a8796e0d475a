package source

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	lru "github.com/hashicorp/golang-lru/v2"
)

// defaultFileCacheSize bounds the data-file metadata kept per table
// (~200 bytes each).
const defaultFileCacheSize = 1 << 20

// fileIndex locates data files that a snapshot touches without adding or
// removing them (a new deletion vector names its data file by path only).
// Every snapshot processed feeds it with the files it added, so a follower
// that walks the history never reads a manifest twice; only files older
// than the walk are searched for, once, in the snapshot's data manifests.
type fileIndex struct {
	cache *lru.Cache[string, dataFileMeta]
}

func newFileIndex(size int) *fileIndex {
	c, err := lru.New[string, dataFileMeta](size)
	if err != nil {
		panic(err) // only for size <= 0, a programming error
	}
	return &fileIndex{cache: c}
}

// remember records a data file whose first_row_id is known; a file without
// one is not final (an upgrade to v3 back-fills it) and is not cached.
func (fi *fileIndex) remember(m dataFileMeta) {
	if m.firstRowID != nil {
		fi.cache.Add(m.path(), m)
	}
}

// forget drops a data file that a snapshot removed: a later deletion
// vector that names it must not find it.
func (fi *fileIndex) forget(path string) { fi.cache.Remove(path) }

// locate returns the metadata of the data files at paths as seen through
// the manifest list list. Files not live there are missing from the result.
// nextRowID bounds the row ids of the entries read (see checkEntry).
// Manifests are searched newest first, as many at once as the pool reads,
// until every file is found.
func (t *Table) locate(ctx context.Context, fs iceio.IO, list []iceberg.ManifestFile, paths []string, nextRowID int64) (map[string]dataFileMeta, error) {
	fi := t.files
	out := make(map[string]dataFileMeta, len(paths))
	want := make(map[string]struct{})
	for _, p := range paths {
		if m, ok := fi.cache.Get(p); ok {
			out[p] = m
		} else {
			want[p] = struct{}{}
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	// Newest manifests first: recent files are the likeliest targets.
	var ms []iceberg.ManifestFile
	for _, m := range list {
		if m.ManifestContent() == iceberg.ManifestContentData {
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(a, b iceberg.ManifestFile) int { return cmp.Compare(b.SequenceNum(), a.SequenceNum()) })
	// Column statistics are most of a manifest entry's decoding cost and a
	// lookup needs none of them.
	entries := func(m iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error] {
		return iceberg.EntriesWithProjection(fs, m, true, iceberg.ManifestEntryProjection{})
	}
	wave := cap(t.pool.slots)
	for start := 0; start < len(ms) && len(want) > 0; start += wave {
		batch := ms[start:min(start+wave, len(ms))]
		reads, err := t.readManifests(ctx, batch, entries, nil)
		if err != nil {
			return nil, err
		}
		for i, m := range batch {
			for _, e := range reads[i].entries {
				if err := checkEntry(e, nextRowID); err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				dm := metaOf(e)
				fi.remember(dm)
				if _, ok := want[dm.path()]; ok {
					out[dm.path()] = dm
					delete(want, dm.path())
				}
			}
			if err := reads[i].err; err != nil {
				return nil, decodeError("manifest", m.FilePath(), err)
			}
			if len(want) == 0 {
				break
			}
		}
	}
	return out, nil
}
