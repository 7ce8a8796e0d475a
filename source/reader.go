package source

import (
	"context"
	"fmt"
	"io"
	"iter"
	"maps"
	"sync"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// newReader is the table the scans use: md read through fsF, without
// iceberg-go's manifest-list cache. Every table.New makes one (an LRU of
// 64 decoded manifest lists whose empty buffers alone are kilobytes), and
// a reader's would only serve a scan that plans from the manifest list
// (an equality delete's, see equality.go), which reads it again instead;
// the commits' own reads go through the file index. At 10,000 followed
// tables the empty caches were tens of MiB of the daemon's heap. Its
// temporal defaults are numbers (see numericDefaults).
func newReader(ident table.Identifier, md table.Metadata, loc string, fsF func(context.Context) (iceio.IO, error)) *table.Table {
	return table.New(ident, withoutManifestListCache(numericDefaults(md)), loc, fsF, nil)
}

// noManifestListCache is md with read.manifest-list-cache.enabled false,
// which table.New reads to leave its cache out; md's own properties are
// not changed. The loaded table (confine) is made with it too: it is
// kept for as long as the table is followed, and its cache would never
// be used (the scans go through the reader).
type noManifestListCache struct {
	table.Metadata
	props iceberg.Properties
}

func withoutManifestListCache(md table.Metadata) table.Metadata {
	if m, ok := md.(noManifestListCache); ok {
		return m
	}
	p := maps.Clone(md.Properties())
	if p == nil {
		p = iceberg.Properties{}
	}
	p[table.ReadManifestListCacheEnabledKey] = "false"
	return noManifestListCache{Metadata: md, props: p}
}

func (m noManifestListCache) Properties() iceberg.Properties { return m.props }

// Equals compares the metadata underneath: iceberg-go's Equals asserts
// the other side's concrete type.
func (m noManifestListCache) Equals(other table.Metadata) bool {
	if o, ok := other.(noManifestListCache); ok {
		other = o.Metadata
	}
	return m.Metadata.Equals(other)
}

// fileReader reads the files of the loaded metadata: its IO, opened on
// first use, the footers of its data files, the iceberg-go tables the
// scans go through and the pool that bounds the reads in flight.
type fileReader struct {
	io *tableIO
	// reader is the loaded table reading through io: the table the
	// scans use.
	reader *table.Table
	// geoReader is reader with geometry and geography read as binary, for
	// the files whose footers give arrow-go no geoarrow type (see geo.go);
	// nil when no schema of the table holds either.
	geoReader *table.Table
	pool      *ioPool
	footers   *footerCache
}

// tableIO is the IO of one loaded metadata, opened on first use: reads go
// through the footer cache to the (confined) IO the table was loaded with.
type tableIO struct {
	open    func(context.Context) (iceio.IO, error)
	footers *footerCache

	mu  sync.Mutex
	raw iceio.IO
	fs  iceio.IO
}

func (l *tableIO) get(ctx context.Context) (iceio.IO, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fs == nil {
		raw, err := l.open(ctx)
		if err != nil {
			return nil, err
		}
		l.raw, l.fs = raw, &footerIO{inner: raw, cache: l.footers}
	}
	return l.fs, nil
}

// close closes the IO if it was opened and can be closed.
func (l *tableIO) close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.raw.(io.Closer)
	l.raw, l.fs = nil, nil
	if !ok {
		return nil
	}
	return c.Close()
}

// checkRenumbered stops at a replace snapshot that gives unchanged rows
// new row ids. A replace has no logical change, so it emits nothing; but
// a writer that rewrites manifests and writes EXISTING entries without
// their first_row_id into a manifest with a new first_row_id range (Iceberg
// 1.11's rewrite_manifests does) changes the ids every reader sees for
// those rows. No event of a replace can say so, and passing it silently
// would leave consumers keyed by _row_id with ids that no longer exist:
// rewrites are detected, never papered over (docs/delivery.md).
//
// Only the data manifests the snapshot wrote that hold EXISTING entries
// are read. The ids a snapshot assigns start at its first-row-id, above
// every id assigned before it, so an EXISTING file (its rows were written
// before S) whose first_row_id is at or past S's first-row-id was given
// new ids by S — unless it stores a _row_id in every row, which wins.
func (t *fileReader) checkRenumbered(ctx context.Context, fs iceio.IO, s *table.Snapshot, list []iceberg.ManifestFile) error {
	if s.FirstRowID == nil {
		return nil
	}
	var mine []iceberg.ManifestFile
	for _, m := range list {
		if m.SnapshotID() == s.SnapshotID && m.ManifestContent() == iceberg.ManifestContentData && m.ExistingDataFiles() != 0 {
			mine = append(mine, m)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	existing := func(m iceberg.ManifestFile) iter.Seq2[iceberg.ManifestEntry, error] {
		return iceberg.EntriesWithProjection(fs, m, true, iceberg.ManifestEntryProjection{})
	}
	reads, err := t.readManifests(ctx, mine, existing, func(e iceberg.ManifestEntry) bool {
		return e.Status() == iceberg.EntryStatusEXISTING
	})
	if err != nil {
		return err
	}
	var moved []dataFileMeta
	where := ""
	for i, m := range mine {
		if err := reads[i].err; err != nil {
			return decodeError("manifest", m.FilePath(), err)
		}
		for _, e := range reads[i].entries {
			dm := metaOf(e)
			if dm.firstRowID == nil || *dm.firstRowID < *s.FirstRowID {
				continue
			}
			l, err := readLayout(fs, dm.file, t.footers)
			if err != nil {
				return err
			}
			if !l.allRowIDs {
				if len(moved) == 0 {
					where = m.FilePath()
				}
				moved = append(moved, dm)
			}
		}
	}
	if len(moved) == 0 {
		return nil
	}
	first := moved[0]
	return lostHistory(fmt.Sprintf("snapshot %d (sequence number %d, %s) gives the unchanged rows of %d data files new row ids "+
		"(%s: first_row_id %d, at or past the snapshot's first-row-id %d, in manifest %s, which lists it as EXISTING; Iceberg 1.11's rewrite_manifests does this): "+
		"a replace has no event to say so, and consumers keyed by _row_id would keep ids no reader sees any more; "+
		"on_history_loss: resync re-emits the table's rows under their new ids, or reset the table ('icecdc reset --table') and restart with start: initial",
		s.SnapshotID, s.SequenceNumber, operationOf(s), len(moved), first.path(), *first.firstRowID, *s.FirstRowID, where))
}
