package source

import (
	"context"
	"maps"

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
