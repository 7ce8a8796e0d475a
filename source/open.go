package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/glue"   // registers the glue catalog
	_ "github.com/apache/iceberg-go/catalog/hadoop" // registers the hadoop catalog
	_ "github.com/apache/iceberg-go/catalog/hive"   // registers the hive catalog
	_ "github.com/apache/iceberg-go/catalog/rest"   // registers the rest catalog
	_ "github.com/apache/iceberg-go/catalog/sql"    // registers the sql catalog
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/health"
)

// Options say where a table is.
type Options struct {
	// MetadataPath loads the table straight from a metadata.json file; the
	// catalog fields are ignored then.
	MetadataPath string

	CatalogName string // the catalog's own name (sql: catalog_name column)
	CatalogType string // sql | rest | glue | hadoop | hive (CatalogTypes)
	CatalogURI  string
	Warehouse   string
	Props       map[string]string // passed through to iceberg-go
	Table       string            // namespace.name; with MetadataPath, the name events carry (default: from the table location)
	Branch      string            // default main
	KeyFields   []string          // event key; default the identifier fields
	// MaxHeldRows bounds the events a commit holds in memory: a commit with
	// more is streamed, a record batch at a time (default 100,000). A commit
	// with equality deletes is held whole but for the inserts of files that
	// only insert, which are streamed past it.
	MaxHeldRows int
	// MaxMemory is the memory budget of one commit's events, in bytes
	// (default 512 MiB). Deletes, updates and inserts are streamed a
	// record batch at a time; the before images of a commit's updates
	// are held, encoded, in a quarter of it (the rest is for the reads in
	// flight and the garbage collector's headroom) and past that spilled
	// to a temporary file (in $TMPDIR).
	MaxMemory int64
	// AllowedLocations are the location prefixes the table's files may be
	// read from (file:/x, file:///x and /x are one local path; s3a and s3n
	// are s3). Manifest lists, manifests, data and delete files elsewhere
	// are refused before they are opened. Default: the table's location,
	// the write paths its properties name (write.data.path, …) and
	// Warehouse. The metadata file a catalog names, or MetadataPath, is
	// read wherever it is; being the metadata file allows no other read of
	// it.
	AllowedLocations []string
	// Log receives the few lifecycle messages of the source, such as a
	// SQLite catalog file being reopened (default slog.Default()).
	Log *slog.Logger
	// IOConcurrency bounds the reads of manifests, deletion vectors and
	// data files a table has in flight (default 16).
	IOConcurrency int
	// MaxResponseBytes bounds each answer of a REST catalog or the Glue API icecdc reads
	// (default DefaultMaxResponseBytes, 64 MiB): a longer one fails the
	// call with a ResponseTooLargeError naming the bound and the URL.
	MaxResponseBytes int64
	// FileIndex, when set, keeps the table's data-file index (where each
	// data file's manifest entry is) between runs, so that a restarted
	// follower decodes no manifest it decoded before. Default nil: the
	// index lives as long as the Table.
	FileIndex IndexStore
	// Catalog, when set, is the pipeline's catalog (NewCatalog) the table
	// loads through instead of opening its own; its owner closes it, not
	// the table. The catalog fields above must be the ones it was made
	// with: they still say how the table's files are read.
	Catalog *Catalog
}

// ErrNotV3 is returned for a table that never carried row lineage. It is
// not permanent: a daemon keeps retrying such a table, shown as failing,
// since it may be upgraded to v3; a one-shot read fails at once.
var ErrNotV3 = errors.New("table has no row lineage (format version < 3)")

// OpenCatalog builds the catalog the options describe.
func OpenCatalog(ctx context.Context, o Options) (catalog.Catalog, error) {
	props := iceberg.Properties(storeProps(o))
	typ := o.CatalogType
	if typ == "" {
		typ = "sql"
	}
	if err := CheckCatalogType(typ); err != nil {
		return nil, fmt.Errorf("catalog type %w", err)
	}
	props["type"] = typ
	if o.CatalogURI != "" {
		props["uri"] = o.CatalogURI
	}
	if o.Warehouse != "" {
		props["warehouse"] = o.Warehouse
	}
	if err := CheckCatalogURI(typ, props["uri"]); err != nil {
		return nil, fmt.Errorf("open %s catalog: uri %w", typ, err)
	}
	if err := checkURLProps(props); err != nil {
		return nil, fmt.Errorf("open %s catalog: property %w", typ, err)
	}
	if typ == "sql" {
		if _, ok := props["sql.driver"]; !ok {
			props["sql.driver"] = sqliteshim.ShimName
		}
		if _, ok := props["sql.dialect"]; !ok {
			props["sql.dialect"] = "sqlite"
		}
		if props["sql.dialect"] == "sqlite" {
			if err := checkSQLiteFile(props["uri"]); err != nil {
				return nil, err
			}
		}
		props["uri"] = withBusyTimeout(props["uri"])
	}
	if typ == "hadoop" {
		// iceberg-go refuses a hadoop catalog on an object store unless
		// told its commits may race (they are not atomic there). icecdc
		// never commits, so reading is safe.
		if _, ok := props["allow-unsafe-commits"]; !ok {
			props["allow-unsafe-commits"] = "true"
		}
	}
	name := o.CatalogName
	if name == "" {
		name = "local"
	}
	if typ == "glue" && props["glue.region"] == "" {
		// Without a region the AWS SDK sends requests anyway when an
		// endpoint is set, and the answers do not say what is missing.
		if cfg, err := awsconfig.LoadDefaultConfig(ctx); err == nil && cfg.Region == "" {
			return nil, fmt.Errorf("open glue catalog %q: no region: set glue.region (catalog property), AWS_REGION, or a region in the AWS profile", name)
		}
	}
	var cat catalog.Catalog
	var err error
	switch typ {
	case "hive":
		cat, err = loadHive(ctx, props)
	case "rest":
		cat, err = openREST(ctx, name, props, o.MaxResponseBytes)
	case "sql":
		cat, err = openSQL(name, props)
	case "glue":
		cat, err = openGlue(ctx, props, o.MaxResponseBytes)
	default:
		cat, err = catalog.Load(ctx, name, props)
	}
	if err != nil {
		var se *storeError
		if err = newStore(o).explainCatalog(o, err); errors.As(err, &se) {
			return nil, fmt.Errorf("open catalog %q: %w", name, err) // it names the type
		}
		if f := sqliteFile(props["uri"]); typ == "sql" && props["sql.dialect"] == "sqlite" && f != "" {
			return nil, fmt.Errorf("open sql catalog %q: SQLite file %s: %w", name, f, err)
		}
		return nil, fmt.Errorf("open %s catalog %q: %w", typ, name, err)
	}
	return cat, nil
}

// checkSQLiteFile refuses a sqlite catalog whose file does not exist: the
// driver would create an empty database and report "table not found".
func checkSQLiteFile(uri string) error {
	p := sqliteFile(uri)
	if p == "" {
		return nil
	}
	if _, err := os.Stat(p); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is said once, below
		}
		return fmt.Errorf("open sql catalog %s: SQLite file %s: %w (a SQLite catalog's uri is file:PATH)", uri, p, err)
	}
	return nil
}

// Open loads the table the options name.
func Open(ctx context.Context, o Options) (*Table, error) {
	t, err := New(o)
	if err != nil {
		return nil, err
	}
	if _, err := t.Refresh(ctx); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// New checks the options and returns the table without loading it: its
// first Refresh does. A daemon follows a table that cannot be loaded yet
// (catalog down, table being re-created) by retrying that Refresh.
func New(o Options) (*Table, error) {
	if o.Branch == "" {
		o.Branch = table.MainBranch
	}
	if o.MetadataPath != "" {
		return newFromMetadata(o)
	}
	if o.Table == "" {
		return nil, errors.New("no table: give --metadata PATH or --table NAMESPACE.NAME")
	}
	ident := catalog.ToIdentifier(o.Table)
	if len(ident) < 2 {
		return nil, fmt.Errorf("table %q: want namespace.name", o.Table)
	}
	var closeCatalog func()
	h := o.Catalog.handle()
	if h == nil {
		h = newCatalogHandle(o)
		closeCatalog = h.close
	}
	// The table's loads and commits read the options from t: o stays on
	// the stack, not a second copy on the heap for each of 10,000 tables.
	ct := &catalogTable{h: h, st: newStore(o), ident: ident}
	t := newTable(o, closeCatalog)
	ct.t = t
	t.load = ct.load
	if o.Catalog != nil {
		t.watchSet = &h.watch
		t.watch = h.watch.add(ident)
	}
	t.commit = ct.commit
	return t, nil
}

// newFromMetadata is the table of the metadata file o names, loaded
// from that file each time.
func newFromMetadata(o Options) (*Table, error) {
	loc := o.MetadataPath
	if !strings.Contains(loc, "://") {
		abs, err := filepath.Abs(loc)
		if err != nil {
			return nil, fmt.Errorf("metadata %s: %w", loc, err)
		}
		loc = abs
	}
	st := newStore(o)
	t := newTable(o, nil)
	t.load = func(ctx context.Context) (*table.Table, error) {
		o := &t.opts
		fsF := st.fs(loc, iceio.LoadFSFunc(st.props, loc))
		opened, err := openMetadata(ctx, fsF, loc)
		if err != nil {
			return nil, fmt.Errorf("load metadata %s: %w", o.MetadataPath, err)
		}
		tbl, err := table.NewFromLocation(ctx, nil, loc, opened, nil)
		if err != nil {
			return nil, fmt.Errorf("load metadata %s: %w", o.MetadataPath, metadataError(ctx, fsF, loc, err))
		}
		st.loaded(tbl)
		ident := metadataIdent(o.Table, tbl.Metadata().Location())
		return confine(*o, st, table.New(ident, tbl.Metadata(), tbl.MetadataLocation(), fsF, nil), nil), nil
	}
	return t, nil
}

// catalogTable is how a table named in a catalog is loaded and
// committed to: through the catalog handle h, reading its files through
// the store st.
type catalogTable struct {
	t     *Table
	h     *catalogHandle
	st    *store
	ident table.Identifier
	last  restAnswer // see etagProbe
}

// load loads the table through the catalog.
func (ct *catalogTable) load(ctx context.Context) (*table.Table, error) {
	t, h, st := ct.t, ct.h, ct.st
	o := &t.opts
	// The catalog reads the metadata file itself: with the store's S3
	// configuration when the warehouse says the tables are on S3.
	lctx, err := st.context(ctx, o.Warehouse)
	if err != nil {
		return nil, err
	}
	// The catalog reads the metadata file with a client of its own,
	// out of reach of the store's retry bounds: GCS's retries a
	// refused connection until its context ends.
	lctx, cancel := context.WithTimeout(lctx, loadTableTimeout)
	defer cancel()
	lctx, answered := watchAnswers(lctx)
	probe := ct.last.probe(o.CatalogType)
	if probe != nil {
		lctx = context.WithValue(lctx, etagKey{}, probe)
	}
	var tbl *table.Table
	cat, err := h.use(lctx, func(ctx context.Context, c catalog.Catalog) (err error) {
		tbl, err = c.LoadTable(ctx, ct.ident)
		if h.hive && errors.Is(err, catalog.ErrNoSuchTable) {
			// The metastore's answer is the same for a missing database.
			if ok, nerr := c.CheckNamespaceExists(ctx, catalog.NamespaceFromIdent(ct.ident)); nerr == nil && !ok {
				err = fmt.Errorf("%w: %w", catalog.ErrNoSuchNamespace, err)
			}
		}
		return answered(err)
	})
	if probe != nil && probe.notModified && ct.last.tbl != nil {
		return ct.last.tbl, nil
	}
	if err != nil {
		return nil, ct.loadError(ctx, lctx, err, cat != nil)
	}
	st.loaded(tbl)
	tbl = confine(*o, st, tbl, cat)
	ct.last.keep(probe, tbl)
	return tbl, nil
}

// loadError is the error of a load that failed with err, before the
// catalog opened or after; lctx is the load's context.
func (ct *catalogTable) loadError(ctx, lctx context.Context, err error, opened bool) error {
	t, h, st := ct.t, ct.h, ct.st
	o := &t.opts
	switch {
	case !opened && h.hive:
		// A hive catalog connects as it opens: that is the load failing.
		return cdc.NamedIn(o.Table, fmt.Errorf("load table %s: %w", o.Table, err))
	case !opened:
		return err
	case isMissing(err) && t.tbl == nil && t.dropped == nil:
		// Never loaded: a name to correct, not a wait (missing.go).
		return missingTable(lctx, h, *o, ct.ident, err)
	case isThrottle(err):
		// Not the table's fault: see health.ErrThrottled.
		return health.Throttled(cdc.NamedIn(o.Table, fmt.Errorf("load table %s: %w", o.Table, st.explainLoad(ctx, *o, err))))
	}
	return cdc.NamedIn(o.Table, fmt.Errorf("load table %s: %w", o.Table, st.explainLoad(ctx, *o, err)))
}

// commit commits a retention hold's requirements and updates through the
// catalog.
func (ct *catalogTable) commit(ctx context.Context, reqs []table.Requirement, updates []table.Update) error {
	o := &ct.t.opts
	if err := ctx.Err(); err != nil {
		return err
	}
	// A commit that began runs to its end, within commitTimeout, even
	// when its caller stops (the daemon is shutting down): a hive
	// commit cut off after it locked the table leaves the lock in the
	// metastore until the metastore times it out (minutes), and every
	// writer of the table, `icecdc reset` included, fails to lock it
	// until then.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	lctx, err := ct.st.context(ctx, o.Warehouse)
	if err != nil {
		return err
	}
	lctx, answered := watchAnswers(lctx)
	_, err = ct.h.use(lctx, func(ctx context.Context, c catalog.Catalog) error {
		_, _, err := c.CommitTable(ctx, ct.ident, reqs, updates)
		return answered(err)
	})
	if err != nil && ct.h.hive {
		err = ct.st.explainCatalog(*o, err) // names the metastore
	}
	return err
}

// commitTimeout bounds a commit of a retention hold through the catalog,
// which its caller's end does not cut short.
const commitTimeout = 30 * time.Second

// restAnswer is a REST table's last full loadTable answer and its ETag.
type restAnswer struct {
	tbl  *table.Table
	etag string
	at   time.Time
}

// restETagMaxAge is how long a REST table is loaded with If-None-Match
// after its last full answer: then a full answer again, so that the
// storage credentials the catalog vends with it are renewed well before
// they expire.
const restETagMaxAge = 5 * time.Minute

// restNow is the clock of restETagMaxAge (tests move it).
var restNow = time.Now

// probe returns the etagProbe of the next load of a REST table (nil for
// other catalogs).
func (a *restAnswer) probe(typ string) *etagProbe {
	if typ != "rest" {
		return nil
	}
	p := &etagProbe{}
	if a.tbl != nil && restNow().Sub(a.at) < restETagMaxAge {
		p.send = a.etag
	}
	return p
}

// keep records a full answer.
func (a *restAnswer) keep(p *etagProbe, tbl *table.Table) {
	if p == nil {
		return
	}
	a.tbl, a.etag, a.at = nil, "", time.Time{}
	if p.got != "" {
		a.tbl, a.etag, a.at = tbl, p.got, restNow()
	}
}

// loadTableTimeout bounds one load of a table through a catalog: its
// request and the read of the metadata file.
const loadTableTimeout = 2 * time.Minute

// metadataIdent names a table loaded from a metadata file: the name
// given (NAMESPACE.NAME, or a NAME whose namespace is taken as below), else
// from the table location as Hive and Spark warehouses lay it out,
// .../<namespace>.db/<name>.
func metadataIdent(given, location string) table.Identifier {
	var ns string
	parts := strings.Split(strings.TrimRight(location, "/"), "/")
	first := 0 // the first segment that may be a namespace
	if strings.Contains(location, "://") {
		first = 3 // past "scheme:", "" and the bucket or host
	}
	n := len(parts)
	name := parts[n-1]
	if n-2 >= first {
		ns = strings.TrimSuffix(parts[n-2], ".db")
	}
	if given != "" {
		ident := catalog.ToIdentifier(given)
		if len(ident) >= 2 {
			return ident
		}
		name = given
	}
	if ns == "" {
		ns = "default"
	}
	return table.Identifier{ns, name}
}

// withBusyTimeout makes SQLite wait for a writer's lock instead of failing
// with SQLITE_BUSY: the catalog is shared with the engines that commit.
func withBusyTimeout(uri string) string {
	if uri == "" || strings.Contains(uri, "busy_timeout") {
		return uri
	}
	sep := "?"
	if strings.Contains(uri, "?") {
		sep = "&"
	}
	return uri + sep + "_pragma=busy_timeout(10000)"
}

// DefaultMaxMemory is Options.MaxMemory when unset.
const DefaultMaxMemory = 512 << 20

// imageBudget is the bytes of before images a commit holds before it
// spills them.
func (t *Table) imageBudget() int64 {
	m := t.opts.MaxMemory
	if m <= 0 {
		m = DefaultMaxMemory
	}
	return m / 4
}

// defaultMaxHeldRows is Options.MaxHeldRows when unset.
const defaultMaxHeldRows = 100_000

func (t *Table) maxHeldRows() int {
	if t.opts.MaxHeldRows > 0 {
		return t.opts.MaxHeldRows
	}
	return defaultMaxHeldRows
}

// maxMetadataBytes bounds the metadata file icecdc reads: it is decoded
// whole, at a few times its size in memory. Real metadata files, even of
// tables with thousands of snapshots, are a few MiB.
const maxMetadataBytes = 64 << 20

// openMetadata opens the metadata file at loc and refuses it when it is
// too large to decode safely. The IO it returns serves that open file to
// iceberg-go's read of it, so that loading the metadata costs one request:
// all an idle poll of a metadata file costs.
func openMetadata(ctx context.Context, fsF func(context.Context) (iceio.IO, error), loc string) (table.FSysF, error) {
	fs, err := fsF(ctx)
	if err != nil {
		return nil, err
	}
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.Size() > maxMetadataBytes {
		f.Close()
		return nil, fmt.Errorf("the file is %d bytes, more than the %d MiB icecdc reads: it is not table metadata, or it is damaged", st.Size(), maxMetadataBytes>>20)
	}
	o := &openedIO{IO: fs, name: loc, f: f}
	return func(context.Context) (iceio.IO, error) { return o, nil }, nil
}

// openedIO is an IO whose first Open of name returns the file already
// open. It is no ReadFileIO, so that iceberg-go reads the file it opens.
type openedIO struct {
	iceio.IO
	name string
	f    iceio.File
}

func (o *openedIO) Open(name string) (iceio.File, error) {
	if f := o.f; f != nil && name == o.name {
		o.f = nil
		return f, nil
	}
	return o.IO.Open(name)
}
