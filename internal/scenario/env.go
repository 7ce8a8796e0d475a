package scenario

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"github.com/uptrace/bun/driver/sqliteshim"
)

// CatalogName is the name of the SQL catalog an [Env] creates; it is the
// catalog_name column of the catalog's tables.
const CatalogName = "local"

// Env is a warehouse (a local directory, or an object store with
// [NewEnvWith]) plus a SQL catalog kept in a local SQLite file.
type Env struct {
	// Dir is the root directory holding catalog.db and warehouse/.
	Dir string
	// CatalogURI is the "uri" property the SQL catalog was opened with:
	// "file:" followed by the absolute path of the SQLite file.
	CatalogURI string
	// Warehouse is the warehouse location: a file:// URI, or the
	// EnvOptions.Warehouse it was created with.
	Warehouse string
	// Catalog is the open SQL catalog named [CatalogName].
	Catalog catalog.Catalog
	// Props are the extra catalog properties the Env was opened with (an
	// object store's endpoint and credentials); nil for a local warehouse.
	Props iceberg.Properties
}

// EnvOptions put an Env's warehouse somewhere other than dir/warehouse.
type EnvOptions struct {
	// Warehouse is the warehouse location, such as s3://bucket/wh; the
	// default is dir/warehouse as a file:// URI.
	Warehouse string
	// Props are added to the catalog properties: what the file IO needs to
	// reach the warehouse (s3.endpoint, s3.access-key-id, …).
	Props iceberg.Properties
}

// NewEnv creates dir (if needed), dir/catalog.db and dir/warehouse and opens a
// SQL catalog named "local" on them. The SQLite driver is sqliteshim, so no
// cgo is needed.
func NewEnv(ctx context.Context, dir string) (*Env, error) {
	return NewEnvWith(ctx, dir, EnvOptions{})
}

// NewEnvWith is NewEnv with the warehouse and extra catalog properties of o:
// the SQLite file stays in dir, the tables go to o.Warehouse.
func NewEnvWith(ctx context.Context, dir string, o EnvOptions) (*Env, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("scenario env %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("scenario env: %w", err)
	}
	e := &Env{
		Dir:        abs,
		CatalogURI: "file:" + filepath.Join(abs, "catalog.db"),
		Warehouse:  o.Warehouse,
		Props:      o.Props,
	}
	if e.Warehouse == "" {
		wh := filepath.Join(abs, "warehouse")
		if err := os.MkdirAll(wh, 0o755); err != nil {
			return nil, fmt.Errorf("scenario env: %w", err)
		}
		e.Warehouse = "file://" + wh
	}
	e.Catalog, err = catalog.Load(ctx, CatalogName, e.CatalogProperties())
	if err != nil {
		return nil, fmt.Errorf("scenario env: open sql catalog: %w", err)
	}

	return e, nil
}

// CatalogProperties returns the properties that open this Env's catalog with
// catalog.Load (type sql, sqlite dialect, sqliteshim driver), so that other
// components can open the same catalog independently.
func (e *Env) CatalogProperties() iceberg.Properties {
	p := maps.Clone(e.Props)
	if p == nil {
		p = iceberg.Properties{}
	}
	// The writers of a test share the SQLite file with a daemon that polls
	// it: wait for its lock instead of failing with SQLITE_BUSY.
	maps.Copy(p, iceberg.Properties{
		"type":                "sql",
		"uri":                 e.CatalogURI + "?_pragma=busy_timeout(10000)",
		"warehouse":           e.Warehouse,
		"init_catalog_tables": "true",
		sqlcat.DriverKey:      sqliteshim.ShimName,
		sqlcat.DialectKey:     string(sqlcat.SQLite),
	})
	return p
}

// Close releases the catalog's database handle.
func (e *Env) Close() error {
	if c, ok := e.Catalog.(catalog.Closer); ok {
		return c.Close()
	}

	return nil
}

// CreateTable creates the namespace of ident if needed and a table with the
// given schema (whose identifier fields, if any, are kept), an optional
// partition spec (nil: unpartitioned) and format version 3, or 2 for a table
// to be upgraded later. The table properties are
// write.delete.mode=merge-on-read and write.update.mode=merge-on-read,
// overridden and extended by props.
func (e *Env) CreateTable(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, spec *iceberg.PartitionSpec, formatVersion int, props iceberg.Properties) (*table.Table, error) {
	return CreateTableIn(ctx, e.Catalog, ident, TableDef{Schema: sc, Spec: spec, FormatVersion: formatVersion, Props: props})
}

// TableDef is what [CreateTableIn] makes: a schema, an optional
// partition spec (nil: unpartitioned), the format version (2 or 3) and
// properties over the merge-on-read defaults.
type TableDef struct {
	Schema        *iceberg.Schema
	Spec          *iceberg.PartitionSpec
	FormatVersion int
	Props         iceberg.Properties
}

// CreateTableIn is [Env.CreateTable] in any catalog (glue, hadoop, …).
func CreateTableIn(ctx context.Context, cat catalog.Catalog, ident table.Identifier, def TableDef) (*table.Table, error) {
	sc, spec, formatVersion, props := def.Schema, def.Spec, def.FormatVersion, def.Props
	if formatVersion != 2 && formatVersion != 3 {
		return nil, fmt.Errorf("create table %v: format version %d not supported (2 or 3)", ident, formatVersion)
	}
	if len(ident) < 2 {
		return nil, fmt.Errorf("create table %v: identifier needs a namespace and a name", ident)
	}
	ns := catalog.NamespaceFromIdent(ident)
	exists, err := cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("create table %v: %w", ident, err)
	}
	if !exists {
		if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return nil, fmt.Errorf("create namespace %v: %w", ns, err)
		}
	}

	p := iceberg.Properties{
		"format-version":         strconv.Itoa(formatVersion),
		table.WriteDeleteModeKey: table.WriteModeMergeOnRead,
		"write.update.mode":      table.WriteModeMergeOnRead,
	}
	maps.Copy(p, props)
	opts := []catalog.CreateTableOpt{catalog.WithProperties(p)}
	if spec != nil {
		opts = append(opts, catalog.WithPartitionSpec(spec))
	}
	tbl, err := cat.CreateTable(ctx, ident, sc, opts...)
	if err != nil {
		return nil, fmt.Errorf("create table %v: %w", ident, err)
	}

	return tbl, nil
}

// LoadTable loads ident from the catalog.
func (e *Env) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := e.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table %v: %w", ident, err)
	}

	return tbl, nil
}
