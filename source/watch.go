package source

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/smithy-go"

	"github.com/icecdc/icecdc/catalogwatch"
	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/internal/redact"
)

// A shared Catalog learns in bulk which of its tables changed, so that
// a poll of an idle catalog costs a request or two, not a load per table
// (CheckChanges): a table whose metadata location differs from the one it
// loaded is woken, and its follower loads it as usual: sql reads the
// catalog's own table (below), hadoop the tables' version-hint.text, glue
// pages GetTables (watch_glue.go), hive asks get_table_objects_by_name in
// batches (watch_hive.go). A rest catalog is not checked in bulk (the REST
// protocol has no call for it): its tables are polled one by one, on the
// pipeline's adaptive schedule, each load an If-None-Match where the
// server sends ETags.

// watchEntry is one table of a shared catalog that its follower may wait
// on.
type watchEntry struct {
	ident []string
	wake  chan struct{} // capacity 1: a wake-up pending is enough
	// notify, when set, is called with each wake-up (see
	// Table.NotifyChanges); guarded by watchSet.mu.
	notify func()

	// Guarded by watchSet.mu.
	loaded  string // the metadata location the table loaded last
	covered bool   // the last bulk check found the table
	refs    int
}

// watchSet is the watched tables of a catalog, by NAMESPACE.NAME.
type watchSet struct {
	mu     sync.Mutex
	tables map[string]*watchEntry
	// gen counts the changes to the set and to its loaded locations: a
	// check may skip its work only if the catalog and gen are as they were
	// at the last full check (see sqlCatalog.unchanged).
	gen uint64
}

func (w *watchSet) add(ident []string) *watchEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := strings.Join(ident, ".")
	if w.tables == nil {
		w.tables = map[string]*watchEntry{}
	}
	e := w.tables[key]
	if e == nil {
		e = &watchEntry{ident: ident, wake: make(chan struct{}, 1)}
		w.tables[key] = e
		w.gen++
	}
	e.refs++
	return e
}

func (w *watchSet) remove(e *watchEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.refs--; e.refs <= 0 {
		delete(w.tables, strings.Join(e.ident, "."))
		w.gen++
	}
}

// setLoaded records the metadata location the table loaded.
func (w *watchSet) setLoaded(e *watchEntry, loc string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e.loaded != loc {
		e.loaded = loc
		w.gen++
	}
}

// generation is the set's gen.
func (w *watchSet) generation() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.gen
}

func (w *watchSet) state(e *watchEntry) (<-chan struct{}, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return e.wake, e.covered
}

// entries returns the watched tables.
func (w *watchSet) entries() []*watchEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*watchEntry, 0, len(w.tables))
	for _, e := range w.tables {
		out = append(out, e)
	}
	return out
}

// apply takes a check's answer: found says, per watched table, whether the
// check could tell its state, and changed whether it differs from what the
// table loaded. A table not found is uncovered, so polled on its own (its
// own load then says what became of it).
func (w *watchSet) apply(es []*watchEntry, judge func(e *watchEntry, loaded string) (found, changed bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range es {
		found, changed := judge(e, e.loaded)
		e.covered = found
		if changed && e.loaded != "" {
			select {
			case e.wake <- struct{}{}:
			default:
			}
			if e.notify != nil {
				e.notify()
			}
		}
	}
}

// applyLocations takes a check's metadata locations by NAMESPACE.NAME
// (lower case when fold: Glue and Hive name tables in lower case): a
// table not among them is uncovered, one whose location is not the one
// it loaded is woken.
func (w *watchSet) applyLocations(es []*watchEntry, locs map[string]string, fold bool) {
	w.apply(es, func(e *watchEntry, loaded string) (bool, bool) {
		key := strings.Join(e.ident, ".")
		if fold {
			key = strings.ToLower(key)
		}
		loc, ok := locs[key]
		return ok, ok && loc != loaded
	})
}

// CheckChanges checks every watched table of the catalog at once and
// wakes those whose metadata location is not the one they loaded. For a
// catalog type that has no bulk check it does nothing (its tables stay
// uncovered). A catalog that throttles returns an error marked
// health.Throttled.
func (c *Catalog) CheckChanges(ctx context.Context) error {
	h := c.h
	es := h.watch.entries()
	if len(es) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	switch typ := h.o.CatalogType; typ {
	case "", "sql":
		return h.checkSQL(ctx, es)
	case "hadoop":
		return h.checkHadoop(ctx, es)
	case "glue":
		return h.checkGlue(ctx, es)
	case "hive":
		return h.checkHive(ctx, es)
	}
	return nil
}

// checkTimeout bounds one CheckChanges: a catalog slow to answer fails
// the check (its tables are then polled at poll.max_interval) and frees
// the call it holds of the catalog's concurrency, rather than hold it
// from the tables' own loads.
var checkTimeout = 30 * time.Second

// throttledIf marks err as health.Throttled when it is a catalog
// throttling (isThrottle).
func throttledIf(err error) error {
	if isThrottle(err) {
		return health.Throttled(err)
	}
	return err
}

var _ catalogwatch.ChangeChecker = (*Catalog)(nil)

// sqlCatalog is iceberg-go's sql catalog with the database handle it was
// made with: iceberg-go has no call that reads many tables' metadata
// locations, so the change check queries the catalog's own iceberg_tables
// table through the same handle (and the same bound on calls).
type sqlCatalog struct {
	*sqlcat.Catalog
	db      *sql.DB
	dialect string
	name    string

	checkMu   sync.Mutex
	checkConn *sql.Conn     // SQLite: the change check's own connection (see conn)
	checkBusy time.Duration // its busy timeout

	// What the last full check saw (SQLite only, see unchanged), guarded
	// by checkMu: data_version is per connection, so it is read on checkConn.
	version int64
	gen     uint64
	valid   bool
}

// Close closes the catalog, which no call (a change check included) uses
// any more (see catalogUsers).
func (c *sqlCatalog) Close() error {
	c.checkMu.Lock()
	if c.checkConn != nil {
		discard(c.checkConn)
		c.checkConn = nil
	}
	c.checkMu.Unlock()
	return errors.Join(c.Catalog.Close(), c.db.Close())
}

// unchanged reports whether a SQLite catalog had no commit since the last
// full check (PRAGMA data_version, which changes with every commit of
// another connection, read on the check's own connection) while the
// watched set and its loaded locations stayed as they were (gen): then a
// full check would find what the last one did, and is skipped. At 10,000
// tables, that is one tiny statement a second instead of 10,000 rows.
// It returns the version for the check that follows (ok false: not
// SQLite, or the pragma failed; the check is then always full). The
// caller holds checkMu (conn).
func (c *sqlCatalog) unchanged(ctx context.Context, conn *sql.Conn, gen uint64) (same bool, version int64, ok bool) {
	if c.dialect != string(sqlcat.SQLite) {
		return false, 0, false
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&version); err != nil {
		c.valid = false
		return false, 0, false
	}
	return c.valid && version == c.version && gen == c.gen, version, true
}

// conn returns the connection a change check runs on, and the function
// that ends its use with the check's error. For SQLite it is one kept for
// the checks, whose busy timeout ends well within checkTimeout: SQLite
// waits out its busy timeout (withBusyTimeout's 10s) however early the
// context of the call ends, and the check would hold its call of the
// catalog that long. The timeout is set as the connection is made, so
// that a check runs its own statements only; a connection that failed is
// dropped, never returned to the pool the loads use.
func (c *sqlCatalog) conn(ctx context.Context) (*sql.Conn, func(error), error) {
	if c.dialect != string(sqlcat.SQLite) {
		conn, err := c.db.Conn(ctx)
		if err != nil {
			return nil, nil, err
		}
		return conn, func(error) { conn.Close() }, nil
	}
	c.checkMu.Lock()
	busy := checkTimeout - min(checkTimeout/2, 500*time.Millisecond)
	if c.checkConn != nil && c.checkBusy != busy {
		discard(c.checkConn)
		c.checkConn = nil
	}
	if c.checkConn == nil {
		conn, err := c.db.Conn(ctx)
		if err == nil {
			if _, err = conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(busy.Milliseconds(), 10)); err != nil {
				discard(conn)
			}
		}
		if err != nil {
			c.checkMu.Unlock()
			return nil, nil, err
		}
		c.checkConn, c.checkBusy = conn, busy
	}
	conn := c.checkConn
	return conn, func(err error) {
		// A throttled check too: SQLite's busy error can leave its read
		// transaction open (the deferred rollback's error is not seen),
		// and the next check would fail to begin one on this connection.
		if err != nil {
			discard(conn)
			c.checkConn = nil
		}
		c.checkMu.Unlock()
	}, nil
}

// discard closes conn rather than return it to its pool.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

// openSQL opens a sql catalog as iceberg-go's registry does, keeping the
// database handle (see sqlCatalog).
func openSQL(name string, props iceberg.Properties) (catalog.Catalog, error) {
	driver, dialect := props[sqlcat.DriverKey], strings.ToLower(props[sqlcat.DialectKey])
	db, err := sql.Open(driver, strings.TrimPrefix(props["uri"], "sql://"))
	if err != nil {
		return nil, err
	}
	c, err := sqlcat.NewCatalog(name, db, sqlcat.SupportedDialect(dialect), props)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &sqlCatalog{Catalog: c, db: db, dialect: dialect, name: name}, nil
}

// checkSQL reads the metadata locations of the watched tables' namespaces
// in one query, in a read-only transaction that ends as soon as the rows
// are read: a writer of the catalog waits for it a few milliseconds at
// most.
func (h *catalogHandle) checkSQL(ctx context.Context, es []*watchEntry) error {
	locs := map[string]string{}
	gen := h.watch.generation()
	skipped := false
	_, err := h.use(ctx, func(ctx context.Context, c catalog.Catalog) (err error) {
		sc, ok := c.(*sqlCatalog)
		if !ok {
			return nil
		}
		q, args := sqlLocationsQuery(sc.dialect, sc.name, namespaces(es))
		conn, done, err := sc.conn(ctx)
		if err != nil {
			return err
		}
		defer func() { done(err) }()
		same, version, vok := sc.unchanged(ctx, conn, gen)
		if skipped = same; same {
			return nil
		}
		sqlFullChecks.Add(1)
		if vok {
			sc.valid = false
			defer func() {
				if err == nil {
					sc.version, sc.gen, sc.valid = version, gen, true
				}
			}()
		}
		tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return err
		}
		defer tx.Rollback()
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ns, name string
			var loc sql.NullString
			if err := rows.Scan(&ns, &name, &loc); err != nil {
				return err
			}
			if loc.Valid {
				locs[ns+"."+name] = loc.String
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return throttledIf(fmt.Errorf("check sql catalog %q for changes: %w", cmp.Or(h.o.CatalogName, "local"), err))
	}
	if skipped {
		return nil
	}
	h.watch.applyLocations(es, locs, false)
	return nil
}

// sqlFullChecks counts the checks that queried iceberg_tables (for
// tests: an unchanged SQLite catalog is not queried).
var sqlFullChecks atomic.Int64

// sqlLocationsQuery is the query of checkSQL, with the dialect's
// placeholders (PostgreSQL numbers them).
func sqlLocationsQuery(dialect, catalogName string, nss []string) (string, []any) {
	ph := func(i int) string {
		if dialect == string(sqlcat.Postgres) {
			return "$" + strconv.Itoa(i)
		}
		return "?"
	}
	args := []any{catalogName}
	in := make([]string, len(nss))
	for i, ns := range nss {
		args = append(args, ns)
		in[i] = ph(i + 2)
	}
	return "SELECT table_namespace, table_name, metadata_location FROM iceberg_tables WHERE catalog_name = " + ph(1) +
		" AND table_namespace IN (" + strings.Join(in, ", ") + ")", args
}

// checkHadoop reads each watched table's version-hint.text, a file of a
// few bytes, instead of listing its metadata directory and reading the
// newest metadata file as a load does: a hint whose version is not the
// one of the loaded metadata file wakes the table. A table without a
// readable hint is left to its own polls. iceberg-go's hadoop catalog
// reads hints only privately, hence the read here.
func (h *catalogHandle) checkHadoop(ctx context.Context, es []*watchEntry) error {
	wh := h.o.Warehouse
	if wh == "" {
		wh = h.o.Props["warehouse"]
	}
	local := !strings.Contains(wh, "://") || strings.HasPrefix(wh, "file://")
	var fsys iceio.IO
	if !local {
		var err error
		if fsys, err = iceio.LoadFS(ctx, storeProps(h.o), wh); err != nil {
			return fmt.Errorf("check hadoop catalog %s for changes: %w", wh, err)
		}
	}
	hints := make(map[*watchEntry]int, len(es))
	var bad []error
	for _, e := range es {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var name string
		var open func() (io.ReadCloser, error)
		if local {
			name = filepath.Join(append([]string{strings.TrimPrefix(wh, "file://")}, append(e.ident, "metadata", "version-hint.text")...)...)
			open = func() (io.ReadCloser, error) { return os.Open(name) }
		} else {
			name = strings.TrimRight(wh, "/") + "/" + strings.Join(e.ident, "/") + "/metadata/version-hint.text"
			open = func() (io.ReadCloser, error) { return fsys.Open(name) }
		}
		v, err := readHint(open, name)
		switch {
		case err != nil:
			bad = append(bad, err) // the table is left to its own polls
		case v > 0:
			hints[e] = v
		}
	}
	h.watch.apply(es, func(e *watchEntry, loaded string) (bool, bool) {
		v, ok := hints[e]
		if !ok {
			return false, false
		}
		lv, lok := metadataVersion(loaded)
		return lok, lok && v != lv
	})
	if len(bad) > 0 {
		more := ""
		if len(bad) > 1 {
			more = fmt.Sprintf(" (and %d more tables' hints)", len(bad)-1)
		}
		return fmt.Errorf("check hadoop catalog %s for changes: %w%s", redact.URL(wh), bad[0], more)
	}
	return nil
}

// maxHintBytes bounds the read of a version-hint.text, which holds a
// number: a longer file is no hint.
const maxHintBytes = 64

// readHint reads the version of the hint file name: 0 for none (a
// missing or unreadable file, or no number: the table is left to its own
// polls), an error for a file longer than maxHintBytes.
func readHint(open func() (io.ReadCloser, error), name string) (int, error) {
	f, err := open()
	if err != nil {
		return 0, nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHintBytes+1))
	if err != nil {
		return 0, nil
	}
	if len(data) > maxHintBytes {
		return 0, fmt.Errorf("%s is longer than %d bytes, the most a version hint holds: the table is polled on its own", redact.URL(name), maxHintBytes)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || v <= 0 {
		return 0, nil
	}
	return v, nil
}

// metadataVersion is N of a hadoop table's metadata file vN.metadata.json
// (or vN.gz.metadata.json).
func metadataVersion(loc string) (int, bool) {
	base := loc[strings.LastIndexByte(loc, '/')+1:]
	rest, ok := strings.CutPrefix(base, "v")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(num)
	return v, err == nil && v > 0
}

// isThrottle reports whether err is a catalog refusing a call for being
// called too often: SQLite busy past its busy timeout, HTTP 429 (REST:
// see catalogTransport), AWS's ThrottlingException (Glue).
func isThrottle(err error) bool {
	if err == nil {
		return false
	}
	if health.IsThrottled(err) {
		return true
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded":
			return true
		}
	}
	msg := err.Error()
	return strings.Contains(msg, "SQLITE_BUSY") || strings.Contains(msg, "database is locked") ||
		strings.Contains(msg, http.StatusText(http.StatusTooManyRequests))
}

// Changes implements cdc.Watched: a table loaded through a shared Catalog
// is woken by its CheckChanges.
func (t *Table) Changes() (<-chan struct{}, bool) {
	if t.watch == nil {
		return nil, false
	}
	return t.watchSet.state(t.watch)
}

// NotifyChanges implements cdc.ChangeNotifier: fn is called, besides the
// channel's wake-up, when a check finds the table changed.
func (t *Table) NotifyChanges(fn func()) {
	if t.watch == nil {
		return
	}
	t.watchSet.mu.Lock()
	defer t.watchSet.mu.Unlock()
	t.watch.notify = fn
}

var _ cdc.ChangeNotifier = (*Table)(nil)
