package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icecdc/icecdc/internal/scenario"
)

// countingSQLite is the SQLite driver icecdc uses, counting the
// statements and transactions its connections run: what a poll costs the
// catalog's database.
const countingSQLite = "icecdc-counting-sqlite"

var (
	sqlCalls        atomic.Int64
	registerCounter sync.Once
)

func useCountingSQLite(t *testing.T) {
	t.Helper()
	registerCounter.Do(func() {
		db, err := sql.Open(sqliteshim.ShimName, ":memory:")
		if err != nil {
			t.Fatal(err)
		}
		sql.Register(countingSQLite, countingDriver{db.Driver()})
		db.Close()
	})
}

type countingDriver struct{ d driver.Driver }

func (c countingDriver) Open(name string) (driver.Conn, error) {
	conn, err := c.d.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingConn{conn}, nil
}

type countingConn struct{ driver.Conn }

func (c *countingConn) Prepare(q string) (driver.Stmt, error) {
	sqlCalls.Add(1)
	return c.Conn.Prepare(q)
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	sqlCalls.Add(1)
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, q)
	}
	return c.Conn.Prepare(q)
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	qc, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	sqlCalls.Add(1)
	return qc.QueryContext(ctx, q, args)
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	ec, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	sqlCalls.Add(1)
	return ec.ExecContext(ctx, q, args)
}

func (c *countingConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	sqlCalls.Add(1)
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, o)
	}
	return c.Conn.Begin() //nolint:staticcheck // the driver has no BeginTx
}

func (c *countingConn) CheckNamedValue(v *driver.NamedValue) error {
	if nc, ok := c.Conn.(driver.NamedValueChecker); ok {
		return nc.CheckNamedValue(v)
	}
	return driver.ErrSkip
}

// manyTablesDaemon runs a daemon on n one-commit tables of a SQLite
// catalog read through countingSQLite, polling as pollCfg says, and
// waits until each table delivered its commit.
func manyTablesDaemon(t *testing.T, n int, pollCfg string) (env *scenario.Env, logs *syncBuffer, stop func()) {
	t.Helper()
	useCountingSQLite(t)
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.ManyTables(ctx, "many", n); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "icecdc.yaml")
	writeTestFile(t, cfg, fmt.Sprintf(`name: p
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s', properties: {sql.driver: %s}}
tables: [{name: 'many.*', start: earliest}]
poll: %s
sink: {type: file, file: {path: %s}}
state: {path: %s}
`, scenario.CatalogName, env.CatalogURI, env.Warehouse, countingSQLite, pollCfg, filepath.Join(t.TempDir(), "events.jsonl"),
		filepath.Join(t.TempDir(), "state.db")))
	rctx, cancel := context.WithCancel(ctx)
	logs = &syncBuffer{}
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- execute(rctx, []string{"run", "-c", cfg}, &out, logs) }()
	stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		env.Close()
	}
	waitDelivered(t, logs, done, n)
	return env, logs, stop
}

// waitDelivered waits until the daemon logged n delivered commits; the
// deadline is a hang guard only.
func waitDelivered(t *testing.T, logs *syncBuffer, done <-chan error, n int) {
	t.Helper()
	for guard := time.Now().Add(2 * time.Minute); strings.Count(logs.String(), `"msg":"commit delivered"`) < n; {
		if time.Now().After(guard) {
			t.Fatalf("%d commits not delivered; logs:\n%s", n, logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v; logs:\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestRunIdleCatalogCostsQueriesPerPoll: a daemon following 40 idle
// tables of a SQLite catalog, polling every 20ms, runs a few statements
// per poll for all of them together (the bulk change check), not a load
// per table per poll. Checks are at least poll.interval apart, so over a
// window of any length the statements are bounded by the polls that fit
// in it, whatever the machine's speed; each table loading itself every
// poll (two to three statements a load) runs over ten times more.
func TestRunIdleCatalogCostsQueriesPerPoll(t *testing.T) {
	const n, poll = 40, 20 * time.Millisecond
	_, _, stop := manyTablesDaemon(t, n, "{interval: "+poll.String()+"}")
	defer stop()
	q0, t0 := sqlCalls.Load(), time.Now()
	time.Sleep(time.Second) // the window measured; nothing is asserted about time
	q, elapsed := sqlCalls.Load()-q0, time.Since(t0)
	polls := int64(elapsed/poll) + 2
	// A check: its read transaction and its query; the loads of a table
	// reaching poll.max_interval (30s) do not fall in the window.
	const perPoll = 3
	t.Logf("%d statements over %s (%d polls at most) for %d idle tables", q, elapsed.Round(time.Millisecond), polls, n)
	if q > perPoll*polls {
		t.Errorf("%d idle tables ran %d statements over %s, more than %d per poll for all of them (%d polls at most): each table still loads itself every poll",
			n, q, elapsed.Round(time.Millisecond), perPoll, polls)
	}
}

// TestRunWakesChangedTable: with poll.max_interval far beyond the test's
// hang guard, a commit to one of many idle tables is delivered anyway:
// the catalog's change check woke it.
func TestRunWakesChangedTable(t *testing.T) {
	const n = 10
	env, logs, stop := manyTablesDaemon(t, n, "{interval: 20ms, max_interval: 1h}")
	defer stop()
	ctx := context.Background()
	tbl, err := env.LoadTable(ctx, catalog.ToIdentifier("many.t0007"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenario.Append(ctx, tbl, []map[string]any{scenario.Order(1000, "c", "new", 1)}); err != nil {
		t.Fatal(err)
	}
	waitDelivered(t, logs, nil, n+1)
	if got := strings.Count(logs.String(), `"msg":"commit delivered","table":"many.t0007"`); got != 2 {
		t.Errorf("many.t0007 delivered %d commits, want 2; logs:\n%s", got, logs.String())
	}
}

// TestRunThrottledCatalogBacksOff: a REST catalog that answers every
// loadTable with 429 Too Many Requests slows the table's polls down (the
// wait doubles from poll.interval: the gap between the fifth and sixth
// request is at least four intervals, which the schedule's sleeps
// guarantee), /readyz names the throttling catalog, and the table is not
// failing: it is the catalog's doing, not the table's.
func TestRunThrottledCatalogBacksOff(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/v1/config") {
			io.WriteString(w, `{"defaults": {}, "overrides": {}}`)
			return
		}
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error": {"message": "slow down", "type": "TooManyRequestsException", "code": 429}}`)
	}))
	defer srv.Close()
	listen := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "icecdc.yaml")
	writeTestFile(t, cfg, fmt.Sprintf(`name: p
catalog: {type: rest, uri: '%s'}
tables: [{name: shop.orders}]
poll: {interval: 20ms, max_interval: 1s}
sink: {type: file, file: {path: %s}}
state: {path: %s}
http: {listen: '%s'}
`, srv.URL, filepath.Join(t.TempDir(), "events.jsonl"), filepath.Join(t.TempDir(), "state.db"), listen))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- execute(ctx, []string{"run", "-c", cfg}, &out, &logs) }()
	requests := func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(at)
	}
	for guard := time.Now().Add(2 * time.Minute); len(requests()) < 6; {
		if time.Now().After(guard) {
			t.Fatalf("%d loads in 2 minutes; logs:\n%s", len(requests()), logs.String())
		}
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v; logs:\n%s", err, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	resp, err := http.Get("http://" + listen + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("/readyz %d: %s", resp.StatusCode, body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "catalog: throttled since") {
		t.Errorf("/readyz answered %d %q, want 503 naming the throttled catalog", resp.StatusCode, body)
	}
	if strings.Contains(string(body), "shop.orders: source") {
		t.Errorf("/readyz shows the table as failing: %s", body)
	}
	if strings.Contains(logs.String(), "source failing") {
		t.Errorf("the table was logged as failing; logs:\n%s", logs.String())
	}
	// The schedule's own word, not the gaps between requests (a loaded
	// machine delays a request past its due time and the next one then
	// seems early): the polls were slowed from poll.interval.
	m := regexp.MustCompile(`polls slowed to every (\S+?):`).FindStringSubmatch(string(body))
	if m == nil {
		t.Fatalf("/readyz does not say the polls were slowed: %s", body)
	}
	if every, err := time.ParseDuration(m[1]); err != nil || every < 40*time.Millisecond {
		t.Errorf("polls slowed to every %s (%v), want at least twice poll.interval (20ms)", m[1], err)
	}
	req := requests()
	t.Logf("the sixth load came %s after the fifth", req[5].Sub(req[4]))
	cancel()
	<-done
}
