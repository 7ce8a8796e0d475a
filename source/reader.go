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
// tables the empty caches were tens of MiB of the daemon's heap.
func newReader(ident table.Identifier, md table.Metadata, loc string, fsF func(context.Context) (iceio.IO, error)) *table.Table {
	return table.New(ident, noManifestListCache{md}, loc, fsF, nil)
}

// noManifestListCache is md with read.manifest-list-cache.enabled false,
// which table.New reads to leave its cache out; md's own properties are
// not changed.
type noManifestListCache struct{ table.Metadata }

func (m noManifestListCache) Properties() iceberg.Properties {
	p := maps.Clone(m.Metadata.Properties())
	if p == nil {
		p = iceberg.Properties{}
	}
	p[table.ReadManifestListCacheEnabledKey] = "false"
	return p
}
