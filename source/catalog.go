package source

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/icecdc/icecdc/internal/redact"
)

// CatalogTypes are the catalogs icecdc reads, each tested against a real
// server or directory: rest, sql (SQLite, PostgreSQL, MySQL through
// iceberg-go's sql catalog), glue (moto's Glue API), hadoop (a warehouse
// directory or bucket) and hive (a Hive 3.1 standalone metastore, in the
// interop stage).
var CatalogTypes = []string{"sql", "rest", "glue", "hadoop", "hive"}

// CheckCatalogType refuses a catalog type icecdc does not read.
func CheckCatalogType(typ string) error {
	switch typ {
	case "sql", "rest", "glue", "hadoop", "hive":
		return nil
	}
	return fmt.Errorf("%q: want %s", typ, strings.Join(CatalogTypes, ", "))
}

// CheckCatalogURI refuses a URI the catalog type cannot use. A hive
// catalog needs the Thrift URI of one metastore, thrift://host[:port]
// (port 9083 by default): iceberg-go's client takes no list of them, and
// would read an http:// URI's host and port as a metastore's. The error
// never quotes a URI that may hold a password.
func CheckCatalogURI(typ, uri string) error {
	if typ == "rest" || typ == "glue" {
		if _, err := url.Parse(uri); err != nil {
			return fmt.Errorf("%s: %s", redact.URL(uri), redact.ParseReason(err))
		}
		return nil
	}
	if typ == "" || typ == "sql" {
		return checkSQLURI(uri)
	}
	if typ != "hive" {
		return nil
	}
	if uri == "" {
		return errors.New("required for catalog type hive: the metastore's thrift://host:port")
	}
	if strings.Contains(uri, ",") {
		return errors.New("a list of metastores is not supported: give one thrift://host:port")
	}
	u, err := url.Parse(uri)
	if err != nil {
		return fmt.Errorf("%s: %s: want thrift://host:port", redact.URL(uri), redact.ParseReason(err))
	}
	if u.Scheme != "thrift" || u.Hostname() == "" {
		return fmt.Errorf("%s: want thrift://host:port (the metastore's Thrift address)", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%s: port %q: want 1 to 65535", u.Redacted(), p)
		}
	}
	return nil
}

// checkSQLURI refuses the URI forms other tools give a SQLite database
// (SQLAlchemy's sqlite:///PATH, JDBC's jdbc:sqlite:PATH), which the
// driver would take for a file name, and names the form it reads.
func checkSQLURI(uri string) error {
	for _, scheme := range []string{"jdbc:sqlite:", "sqlite3:", "sqlite:"} {
		rest, ok := strings.CutPrefix(uri, scheme)
		if !ok {
			continue
		}
		// sqlite:///rel is a relative path, sqlite:////abs an absolute one.
		if p, ok := strings.CutPrefix(rest, "//"); ok {
			rest = strings.TrimPrefix(p, "/")
			if rest == "" || !strings.HasPrefix(rest, "/") && !strings.HasPrefix(rest, ".") {
				rest = "./" + rest
			}
		}
		return fmt.Errorf("%s: a SQLite catalog's uri is file:PATH (here file:%s)", redact.URL(uri), rest)
	}
	return nil
}

// catalogHandle is a table's catalog, opened on first use. A SQLite
// catalog is a file that tools often rewrite by renaming a new copy over
// it; an open database keeps reading the old, deleted file and would never
// see another commit. So before each use the file at the path is compared
// with the one that was opened: a replaced file is reopened, and a missing
// one is an error (retried by a daemon), never a stale answer.
//
// A hive catalog is one Thrift connection to the metastore, which has no
// timeouts and takes one call at a time: its calls are serialized and
// bounded (see use), and one that fails closes the connection, so that the
// next call reconnects (a restarted metastore never answers on the old
// one).
type catalogHandle struct {
	mu     sync.Mutex // a retention hold may commit while the table reads (see Table.HoldLatest)
	calls  sync.Mutex // hive: one call at a time on the connection
	o      Options
	path   string // the SQLite file; "" for other catalogs
	hive   bool
	cat    catalog.Catalog
	opened os.FileInfo // the file at path when cat was opened
	// users counts the calls in flight on cat: a catalog replaced or
	// closed while calls (other tables', on a shared catalog) run on it is
	// closed when the last of them ends.
	users *catalogUsers
	// sem bounds the calls a shared catalog takes at once (nil: a
	// table's own catalog, which its table calls one at a time).
	sem chan struct{}
	// watch is the tables CheckChanges checks (see watch.go).
	watch watchSet
}

// Catalog is one catalog shared by the tables of a pipeline: opened on
// first use, reopened when its SQLite file is replaced, and closed once,
// by its owner, when every table is done with it. Each table keeps its
// own IO (and the vended credentials a REST catalog's answer gives it);
// only the catalog's client, its connections and caches are shared, so
// that a thousand tables cost one database handle or HTTP client, not a
// thousand.
type Catalog struct{ h *catalogHandle }

// DefaultCatalogConcurrency is NewCatalog's bound when given 0.
const DefaultCatalogConcurrency = 8

// NewCatalog returns the catalog the options describe (their table fields
// are ignored), without opening it. At most concurrency calls (loads,
// commits of retention holds) run through it at once (0:
// DefaultCatalogConcurrency); the others wait their turn, which also
// bounds the connections a SQLite catalog's pool opens.
func NewCatalog(o Options, concurrency int) *Catalog {
	if concurrency <= 0 {
		concurrency = DefaultCatalogConcurrency
	}
	o.Table, o.MetadataPath, o.Catalog = "", "", nil
	h := newCatalogHandle(o)
	h.sem = make(chan struct{}, concurrency)
	return &Catalog{h: h}
}

// Close releases the catalog's connections. Tables using it must not load
// after; a later use would open it again.
func (c *Catalog) Close() {
	if c != nil {
		c.h.close()
	}
}

func newCatalogHandle(o Options) *catalogHandle {
	return &catalogHandle{o: o, path: sqlitePath(o), hive: o.CatalogType == "hive"}
}

// get returns the open catalog, reopening it when its file was replaced,
// and the function that ends its use.
func (h *catalogHandle) get(ctx context.Context) (catalog.Catalog, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cat != nil && h.path != "" {
		fi, err := os.Stat(h.path)
		if err != nil {
			h.closeLocked()
			return nil, nil, fmt.Errorf("sql catalog %s: %w", h.path, err)
		}
		if !os.SameFile(fi, h.opened) {
			h.log().Info("sql catalog file was replaced; reopening it", "path", h.path)
			h.closeLocked()
		}
	}
	if h.cat != nil {
		return h.cat, h.enter(), nil
	}
	// Identified before opening: should the file be replaced in between,
	// the next get sees a different file and reopens once more.
	var fi os.FileInfo
	if h.path != "" {
		fi, _ = os.Stat(h.path) // OpenCatalog reports a missing file
	}
	c, err := OpenCatalog(ctx, h.o)
	if err != nil {
		return nil, nil, err
	}
	h.cat, h.opened, h.users = c, fi, &catalogUsers{cat: c}
	return c, h.enter(), nil
}

// use runs fn with the open catalog, which it returns (nil when it
// could not be opened); for a hive catalog, alone, within hiveCallTimeout,
// and closing the connection when fn fails (but for the metastore's answer
// that there is no such table or database).
func (h *catalogHandle) use(ctx context.Context, fn func(context.Context, catalog.Catalog) error) (catalog.Catalog, error) {
	if h.sem != nil {
		select {
		case h.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-h.sem }()
	}
	if !h.hive {
		cat, done, err := h.get(ctx)
		if err != nil {
			return nil, err
		}
		defer done()
		return cat, fn(ctx, cat)
	}
	h.calls.Lock()
	defer h.calls.Unlock()
	cat, done, err := h.get(ctx)
	if err != nil {
		return nil, err
	}
	err = hiveBounded(ctx, cat, fn)
	done()
	if err != nil && !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace) {
		h.mu.Lock()
		if h.cat == cat {
			h.closeLocked()
		}
		h.mu.Unlock()
	}
	return cat, err
}

// hiveCallTimeout bounds a call to a Hive metastore whose context has no
// earlier deadline, and hiveConnectTimeout the connection to it: the
// Thrift client has neither, and a metastore that accepts a connection
// but never answers would hold its caller for good.
var (
	hiveCallTimeout    = 2 * time.Minute
	hiveConnectTimeout = 30 * time.Second
)

// noAnswerError is a metastore that did not answer in time.
type noAnswerError struct {
	what  string // "no answer" or "no connection"
	after time.Duration
}

func (e *noAnswerError) Error() string { return fmt.Sprintf("%s within %s", e.what, e.after) }
func (e *noAnswerError) Timeout() bool { return true }

// hiveBounded runs fn on cat until it returns or ctx ends, at most
// hiveCallTimeout. A call still running then is ended by closing cat (a
// read blocked on its connection fails), and the error says which bound
// passed. A call that goes on using the closed client panics (the client
// is gone): that is recovered, and cat is not used again.
func hiveBounded(ctx context.Context, cat catalog.Catalog, fn func(context.Context, catalog.Catalog) error) error {
	limit := hiveCallTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) < limit {
		limit = max(time.Until(d), 0)
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("hive catalog: %v", r)
			}
		}()
		done <- fn(cctx, cat)
	}()
	select {
	case err := <-done:
		return err
	case <-cctx.Done():
	}
	if c, ok := cat.(catalog.Closer); ok {
		c.Close()
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err // the caller gave up: not the metastore's doing
	}
	return &noAnswerError{what: "no answer", after: limit.Round(time.Second)}
}

// loadHive opens a hive catalog (openHive), which connects to the
// metastore, within hiveConnectTimeout; a connection made after that is
// closed.
func loadHive(ctx context.Context, props iceberg.Properties) (catalog.Catalog, error) {
	type opened struct {
		cat catalog.Catalog
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		c, err := openHive(props)
		ch <- opened{c, err}
	}()
	t := time.NewTimer(hiveConnectTimeout)
	defer t.Stop()
	select {
	case o := <-ch:
		return o.cat, o.err
	case <-t.C:
	case <-ctx.Done():
	}
	go func() {
		if o := <-ch; o.cat != nil {
			if c, ok := o.cat.(catalog.Closer); ok {
				c.Close()
			}
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, &noAnswerError{what: "no connection", after: hiveConnectTimeout}
}

// close releases the catalog's database handle, if it has one.
func (h *catalogHandle) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked()
}

// catalogUsers are the calls in flight on one opened catalog.
type catalogUsers struct {
	cat     catalog.Catalog
	n       int  // guarded by the handle's mu
	retired bool // dropped by the handle: closed when n reaches 0
}

// enter counts a call on the open catalog and returns its end. h.mu is
// held.
func (h *catalogHandle) enter() func() {
	u := h.users
	u.n++
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if u.n--; u.n == 0 && u.retired {
			h.closeCatalog(u.cat)
		}
	}
}

// closeLocked drops the catalog, so that the next get opens a new one,
// and closes it now or, with calls still in flight on it, when the last
// ends: never under a call of another table.
func (h *catalogHandle) closeLocked() {
	if u := h.users; u != nil {
		u.retired = true
		if u.n == 0 {
			h.closeCatalog(u.cat)
		}
	}
	h.cat, h.opened, h.users = nil, nil, nil
}

func (h *catalogHandle) closeCatalog(cat catalog.Catalog) {
	if c, ok := cat.(catalog.Closer); ok {
		if err := c.Close(); err != nil {
			h.log().Warn("close catalog", "type", h.o.CatalogType, "path", h.path, "err", err)
		}
	}
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
	ctx, answered := watchAnswers(ctx)
	list := func(ctx context.Context, cat catalog.Catalog) error {
		for ident, err := range cat.ListTables(ctx, catalog.ToIdentifier(ns)) {
			if err != nil {
				return err
			}
			out = append(out, strings.Join(ident, "."))
		}
		return nil
	}
	if o.CatalogType == "hive" {
		err = hiveBounded(ctx, cat, list)
	} else {
		err = list(ctx, cat)
	}
	if err != nil {
		return nil, fmt.Errorf("list tables of namespace %s: %w", ns, newStore(o).explainCatalog(o, answered(err)))
	}
	return out, nil
}

func (c *Catalog) handle() *catalogHandle {
	if c == nil {
		return nil
	}
	return c.h
}
