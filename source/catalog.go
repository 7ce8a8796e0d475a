package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/catalog"
)

// CatalogTypes are the catalogs icecdc reads, each tested against a real
// server or directory: rest, sql (SQLite, PostgreSQL, MySQL through
// iceberg-go's sql catalog), glue (moto's Glue API) and hadoop (a
// warehouse directory or bucket).
var CatalogTypes = []string{"sql", "rest", "glue", "hadoop"}

// ErrHiveUnsupported says why the hive catalog is refused.
var ErrHiveUnsupported = errors.New(`"hive" is not supported yet: iceberg-go's Hive metastore catalog is not ` +
	"linked, since it has not been tested against a real metastore; use rest, sql, glue or hadoop, " +
	"or follow the table's metadata file")

// CheckCatalogType refuses a catalog type icecdc does not read.
func CheckCatalogType(typ string) error {
	switch typ {
	case "sql", "rest", "glue", "hadoop":
		return nil
	case "hive":
		return ErrHiveUnsupported
	}
	return fmt.Errorf("%q: want %s", typ, strings.Join(CatalogTypes, ", "))
}

// catalogHandle is a table's catalog, opened on first use. A SQLite
// catalog is a file that tools often rewrite by renaming a new copy over
// it; an open database keeps reading the old, deleted file and would never
// see another commit. So before each use the file at the path is compared
// with the one that was opened: a replaced file is reopened, and a missing
// one is an error (retried by a daemon), never a stale answer.
type catalogHandle struct {
	mu     sync.Mutex // a retention hold may commit while the table reads (see Table.HoldLatest)
	o      Options
	path   string // the SQLite file; "" for other catalogs
	cat    catalog.Catalog
	opened os.FileInfo // the file at path when cat was opened
}

func newCatalogHandle(o Options) *catalogHandle {
	return &catalogHandle{o: o, path: sqlitePath(o)}
}

// get returns the open catalog, reopening it when its file was replaced.
func (h *catalogHandle) get(ctx context.Context) (catalog.Catalog, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cat != nil && h.path != "" {
		fi, err := os.Stat(h.path)
		if err != nil {
			h.closeLocked()
			return nil, fmt.Errorf("sql catalog %s: %w", h.path, err)
		}
		if !os.SameFile(fi, h.opened) {
			h.log().Info("sql catalog file was replaced; reopening it", "path", h.path)
			h.closeLocked()
		}
	}
	if h.cat != nil {
		return h.cat, nil
	}
	// Identified before opening: should the file be replaced in between,
	// the next get sees a different file and reopens once more.
	var fi os.FileInfo
	if h.path != "" {
		fi, _ = os.Stat(h.path) // OpenCatalog reports a missing file
	}
	c, err := OpenCatalog(ctx, h.o)
	if err != nil {
		return nil, err
	}
	h.cat, h.opened = c, fi
	return c, nil
}

// close releases the catalog's database handle, if it has one.
func (h *catalogHandle) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked()
}

func (h *catalogHandle) closeLocked() {
	if c, ok := h.cat.(catalog.Closer); ok {
		if err := c.Close(); err != nil {
			h.log().Warn("close sql catalog", "path", h.path, "err", err)
		}
	}
	h.cat, h.opened = nil, nil
}

func (h *catalogHandle) log() *slog.Logger {
	if h.o.Log != nil {
		return h.o.Log
	}
	return slog.Default()
}

// sqlitePath returns the file of a SQLite catalog, or "" when the options
// describe another catalog or an in-memory database.
func sqlitePath(o Options) string {
	if o.CatalogType != "" && o.CatalogType != "sql" {
		return ""
	}
	if d, ok := o.Props["sql.dialect"]; ok && d != "sqlite" {
		return ""
	}
	uri := o.CatalogURI
	if uri == "" {
		uri = o.Props["uri"]
	}
	return sqliteFile(uri)
}

// sqliteFile returns the file a SQLite URI names ("" for none or memory).
func sqliteFile(uri string) string {
	p := strings.TrimPrefix(uri, "sql://")
	p = strings.TrimPrefix(p, "file://")
	p = strings.TrimPrefix(p, "file:")
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	if p == ":memory:" {
		return ""
	}
	return p
}

// ListTables returns the tables of namespace ns as NAMESPACE.NAME, through
// a catalog opened for the call; errors name the namespace and show no
// secret.
func ListTables(ctx context.Context, o Options, ns string) ([]string, error) {
	cat, err := OpenCatalog(ctx, o)
	if err != nil {
		return nil, err
	}
	if c, ok := cat.(catalog.Closer); ok {
		defer c.Close()
	}
	var out []string
	for ident, err := range cat.ListTables(ctx, catalog.ToIdentifier(ns)) {
		if err != nil {
			return nil, fmt.Errorf("list tables of namespace %s: %w", ns, newStore(o).explainCatalog(o, err))
		}
		out = append(out, strings.Join(ident, "."))
	}
	return out, nil
}
