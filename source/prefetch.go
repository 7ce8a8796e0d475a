package source

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// Reads of a commit fan out in phases (see ioPool): the files a phase needs
// are fetched concurrently first, then the sequential code that decides
// the events runs over the results in manifest order, as it would over
// reads made one after the other. So the order of events, and which error
// a commit fails with, never depend on which read finished first.

// manifestRead is one manifest's entries, in file order, up to its first
// decoding error.
type manifestRead struct {
	entries []iceberg.ManifestEntry
	err     error
	done    bool // read to its end or its error (false: never started)
}

// readManifests reads ms concurrently through entries, keeping the entries
// keep accepts (nil: all of them). A manifest that was not read (a
// cancelled context) has done false, and the error says why; a decoding
// error is left in its manifestRead for the caller to report in order.
func (t *fileReader) readManifests(ctx context.Context, ms []iceberg.ManifestFile,
	entries func(iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error], keep func(iceberg.ManifestEntry) bool) ([]manifestRead, error) {
	out := make([]manifestRead, len(ms))
	err := t.pool.each(ctx, len(ms), func(i int) error {
		r := &out[i]
		defer func() { r.done = true }()
		for e, err := range entries(ms[i]) {
			if err != nil {
				r.err = err
				return err
			}
			if keep == nil || keep(e) {
				r.entries = append(r.entries, e)
			}
		}
		return nil
	})
	// Tasks start in order and none after a failure: a manifest not read
	// before the first that failed can only be one a cancelled context
	// kept from starting.
	for i := range out {
		if out[i].err != nil {
			return out, nil // the caller reports it where it meets it
		}
		if !out[i].done {
			if err == nil {
				err = context.Canceled
			}
			return out, err
		}
	}
	return out, nil
}

// allEntries reads a manifest's entries, deleted ones included.
func allEntries(fs iceio.IO) func(iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error] {
	return func(m iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error] { return m.Entries(fs, false) }
}

// prefetched holds the footers and vectors a commit read ahead, by file,
// with the error of reading each: the sequential code meets an error where
// it would have met it reading the file itself.
type prefetched struct {
	mu   sync.Mutex
	lays map[layoutKey]layoutResult
	dvs  map[dvKey]dvResult
}

// layoutKey names a data file as a manifest entry describes it: the
// footer is checked against the record count and size the entry claims.
type layoutKey struct {
	path        string
	count, size int64
}

type layoutResult struct {
	lay layout
	err error
}

// dvKey names a vector read for a data file of count rows.
type dvKey struct {
	path                string
	off, size, card     int64
	count               int64
	referencedDataFile  string
	hasOffset, hasRange bool
}

type dvResult struct {
	bm  *roaring64.Bitmap
	err error
}

func newPrefetched() *prefetched {
	return &prefetched{lays: map[layoutKey]layoutResult{}, dvs: map[dvKey]dvResult{}}
}

func keyOfLayout(m dataFileMeta) layoutKey {
	return layoutKey{path: m.path(), count: m.file.Count(), size: m.file.FileSizeBytes()}
}

func keyOfDV(e iceberg.ManifestEntry, count int64) dvKey {
	df := e.DataFile()
	k := dvKey{path: df.FilePath(), card: df.Count(), count: count}
	if v := df.ContentOffset(); v != nil {
		k.off, k.hasOffset = *v, true
	}
	if v := df.ContentSizeInBytes(); v != nil {
		k.size, k.hasRange = *v, true
	}
	if v := df.ReferencedDataFile(); v != nil {
		k.referencedDataFile = *v
	}
	return k
}

// layout returns the footer layout of m, read once per commit. It checks
// m's record_count against the file: nothing is sized from m.file.Count()
// before this was called for m.
func (t *fileReader) layout(pf *prefetched, fs iceio.IO, m dataFileMeta) (layout, error) {
	k := keyOfLayout(m)
	pf.mu.Lock()
	r, ok := pf.lays[k]
	pf.mu.Unlock()
	if !ok {
		func() {
			// Read ahead on another goroutine, a decoder's panic must
			// become this file's error, met where the file is.
			defer recoverAs(&r.err, "data file %s", m.path())
			r.lay, r.err = readLayout(fs, m.file, t.footers)
		}()
		pf.mu.Lock()
		pf.lays[k] = r
		pf.mu.Unlock()
	}
	return r.lay, r.err
}

// vector returns the deletion vector of entry e for a data file of count
// rows (see readDV), read once per commit.
func (t *fileReader) vector(pf *prefetched, fs iceio.IO, e iceberg.ManifestEntry, count int64) (*roaring64.Bitmap, error) {
	k := keyOfDV(e, count)
	pf.mu.Lock()
	r, ok := pf.dvs[k]
	pf.mu.Unlock()
	if !ok {
		func() {
			defer recoverAs(&r.err, "deletion vector file %s", e.DataFile().FilePath())
			r.bm, r.err = readDV(fs, e, count)
		}()
		pf.mu.Lock()
		pf.dvs[k] = r
		pf.mu.Unlock()
	}
	return r.bm, r.err
}

// vectors reads vectors of one Puffin file together (see readDVs) and
// keeps their results for vector.
func (t *fileReader) vectors(pf *prefetched, fs iceio.IO, path string, reads []dvRead) {
	var res []dvResult
	func() {
		defer func() {
			if v := recover(); v != nil {
				// A decoder's panic is every vector's error, met where each is.
				res = make([]dvResult, len(reads))
				for i := range res {
					res[i].err = fmt.Errorf("deletion vector file %s: malformed input (panic in a decoder: %v)", path, v)
				}
			}
		}()
		res = readDVs(fs, path, reads)
	}()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	for i, d := range reads {
		pf.dvs[keyOfDV(d.e, d.count)] = res[i]
	}
}

// dvRead is a vector to read ahead for a data file of count rows.
type dvRead struct {
	e     iceberg.ManifestEntry
	count int64
}

// prefetch reads the footers of files and the vectors dvs concurrently,
// those not read yet. Errors are kept for layout and vector to return;
// prefetch itself fails only when ctx ends.
func (t *fileReader) prefetch(ctx context.Context, pf *prefetched, fs iceio.IO, files []dataFileMeta, dvs []dvRead) error {
	var jobs []func()
	seenL := map[layoutKey]bool{}
	for _, m := range files {
		k := keyOfLayout(m)
		pf.mu.Lock()
		_, done := pf.lays[k]
		pf.mu.Unlock()
		if !done && !seenL[k] {
			seenL[k] = true
			jobs = append(jobs, func() { t.layout(pf, fs, m) })
		}
	}
	// Vectors by Puffin file, in the order first named: one job per file.
	seenV := map[dvKey]bool{}
	byFile := map[string][]dvRead{}
	var puffins []string
	for _, d := range dvs {
		k := keyOfDV(d.e, d.count)
		pf.mu.Lock()
		_, done := pf.dvs[k]
		pf.mu.Unlock()
		if done || seenV[k] {
			continue
		}
		seenV[k] = true
		p := d.e.DataFile().FilePath()
		if byFile[p] == nil {
			puffins = append(puffins, p)
		}
		byFile[p] = append(byFile[p], d)
	}
	for _, p := range puffins {
		jobs = append(jobs, func() { t.vectors(pf, fs, p, byFile[p]) })
	}
	return t.pool.each(ctx, len(jobs), func(i int) error {
		jobs[i]()
		return nil
	})
}

// deadPositions returns the positions of m deleted by its vector, or by
// v2 position deletes when it has no vector (a vector supersedes them).
func (t *fileReader) deadPositions(pf *prefetched, fs iceio.IO, m dataFileMeta, od oldDeletes) (*roaring64.Bitmap, error) {
	if od.dv != nil {
		return t.vector(pf, fs, od.dv, m.file.Count())
	}
	if od.pos != nil {
		return od.pos, nil
	}
	return roaring64.New(), nil
}
