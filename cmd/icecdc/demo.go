package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/changes"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// demoStep is one commit of the bookshop story.
type demoStep struct {
	what string
	do   func(context.Context, *table.Table) (*table.Table, error)
}

var bookshopOrder = scenario.Order

// bookshopStory is the demo's history of the orders table.
func bookshopStory() []demoStep {
	id := func(v int64) iceberg.BooleanExpression { return iceberg.EqualTo(iceberg.Reference("order_id"), v) }
	return []demoStep{
		{"insert orders 1-5", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, t, []map[string]any{
				bookshopOrder(1, "ada", "new", 12.5), bookshopOrder(2, "bob", "new", 30),
				bookshopOrder(3, "cy", "new", 7.25), bookshopOrder(4, "dee", "new", 19.99),
				bookshopOrder(5, "eve", "new", 42),
			})
		}},
		{"merge-on-read delete of order 2", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Delete(ctx, t, id(2))
		}},
		{"update order 1 to shipped", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Update(ctx, t, id(1), func(r map[string]any) map[string]any { r["status"] = "shipped"; return r })
		}},
		{"insert order 6", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, t, []map[string]any{bookshopOrder(6, "fay", "new", 5)})
		}},
		{"compaction", scenario.Compact},
		{"delete order 3 inside the compacted file", func(ctx context.Context, t *table.Table) (*table.Table, error) {
			return scenario.Delete(ctx, t, id(3))
		}},
	}
}

// demoTable is where the demo's table is.
var demoTable = table.Identifier{"bookshop", "orders"}

// buildBookshop writes the demo table into dir and returns where it is.
func buildBookshop(ctx context.Context, dir string) (source.Options, []string, error) {
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return source.Options{}, nil, err
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, demoTable, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		return source.Options{}, nil, err
	}
	var whats []string
	for _, s := range bookshopStory() {
		if tbl, err = s.do(ctx, tbl); err != nil {
			return source.Options{}, nil, fmt.Errorf("demo: %s: %w", s.what, err)
		}
		whats = append(whats, s.what)
	}
	return demoOptions(env), whats, nil
}

func demoOptions(env *scenario.Env) source.Options {
	return source.Options{
		CatalogType: "sql", CatalogName: scenario.CatalogName, CatalogURI: env.CatalogURI,
		Warehouse: env.Warehouse, Table: strings.Join(demoTable, "."),
	}
}

// demoCommits are the kinds of commit --commit makes.
var demoCommits = []string{"insert", "update", "delete", "merge"}

// demoStatuses is the life of an order: an update moves the oldest order
// not yet delivered one step on.
var demoStatuses = []string{"new", "paid", "shipped", "delivered"}

// commitDemo makes one commit of kind to the demo table in dir and says
// what it did.
func commitDemo(ctx context.Context, dir, kind string) (source.Options, string, error) {
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return source.Options{}, "", err
	}
	defer env.Close()
	tbl, err := env.LoadTable(ctx, demoTable)
	if err != nil {
		return source.Options{}, "", fmt.Errorf("demo --commit %s: %w", kind, err)
	}
	var live []scenario.Row
	if snap := tbl.CurrentSnapshot(); snap != nil {
		rows, err := scenario.LiveRows(ctx, tbl, snap.SnapshotID)
		if err != nil {
			return source.Options{}, "", fmt.Errorf("demo --commit %s: read %s: %w", kind, tbl.MetadataLocation(), err)
		}
		for _, r := range rows {
			live = append(live, r)
		}
	}
	orderID := func(r scenario.Row) int64 { id, _ := r.Values["order_id"].(int64); return id }
	slices.SortFunc(live, func(a, b scenario.Row) int { return cmp.Compare(orderID(a), orderID(b)) })
	next := int64(1)
	if len(live) > 0 {
		next = orderID(live[len(live)-1]) + 1
	}
	customers := []string{"gus", "hal", "ivy", "jo", "kim", "lu"}
	newOrder := scenario.Order(next, customers[next%int64(len(customers))], "new", float64(next%9)*4.5+3)
	// The update's target: the oldest order not yet delivered, else the
	// oldest.
	var target *scenario.Row
	for i := range live {
		if live[i].Values["status"] != demoStatuses[len(demoStatuses)-1] {
			target = &live[i]
			break
		}
	}
	if target == nil && len(live) > 0 {
		target = &live[0]
	}
	advance := func(r map[string]any) map[string]any {
		i := slices.Index(demoStatuses, fmt.Sprint(r["status"]))
		r["status"] = demoStatuses[(i+1)%len(demoStatuses)]
		return r
	}
	id := func(r *scenario.Row) iceberg.BooleanExpression {
		return iceberg.EqualTo(iceberg.Reference("order_id"), orderID(*r))
	}
	var what string
	switch {
	case kind == "insert":
		what = fmt.Sprintf("insert order %d", next)
		tbl, err = scenario.Append(ctx, tbl, []map[string]any{newOrder})
	case target == nil:
		return source.Options{}, "", fmt.Errorf("demo --commit %s: table %s has no rows left; try --commit insert", kind, strings.Join(demoTable, "."))
	case kind == "update":
		what = fmt.Sprintf("update order %d to %s", orderID(*target), advance(maps.Clone(target.Values))["status"])
		tbl, err = scenario.Update(ctx, tbl, id(target), advance)
	case kind == "delete":
		what = fmt.Sprintf("merge-on-read delete of order %d", orderID(live[0]))
		tbl, err = scenario.Delete(ctx, tbl, id(&live[0]))
	case kind == "merge":
		what = fmt.Sprintf("merge: update order %d to %s, insert order %d", orderID(*target), advance(maps.Clone(target.Values))["status"], next)
		tbl, err = scenario.Merge(ctx, tbl, id(target), advance, []map[string]any{newOrder})
	}
	if err != nil {
		return source.Options{}, "", fmt.Errorf("demo --commit %s: %w", kind, err)
	}
	return demoOptions(env), what, nil
}

// demoExists reports whether dir holds the demo table already.
func demoExists(ctx context.Context, dir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dir, "catalog.db")); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return false, err
	}
	defer env.Close()
	return env.Catalog.CheckTableExists(ctx, demoTable)
}

func demoCommand(e *cli) *cobra.Command {
	var dir, commit string
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [--commit insert|update|delete|merge]",
		Short: "write a small v3 table and print its change events",
		Long: `Write a small Iceberg v3 table, bookshop.orders (a SQLite catalog and a local warehouse), through a
story of commits (inserts, a merge-on-read delete, an update, a compaction) and print each commit's
change events. With --dir the table stays there: a second demo on the same directory prints its
events again, and --commit adds one commit and prints its events, for 'icecdc run' to follow.`,
		Example: `  icecdc demo                                 # in a temporary directory, removed afterwards
  icecdc demo --dir ./demo                     # keep the table in ./demo
  icecdc demo --dir ./demo --commit update     # one more commit: insert, update, delete or merge`,
		Args:                  noArgs,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmdDemo(cmd.Context(), dir, commit, e.stdout, e.log)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dir, "dir", "", "directory for the demo catalog and warehouse, kept (default: a temporary one, removed afterwards)")
	fl.StringVar(&commit, "commit", "", "commit to the demo table in --dir: "+strings.Join(demoCommits, " | "))
	groupFlags(fl, "Demo", "dir", "commit")
	return cmd
}

func cmdDemo(ctx context.Context, dir, commit string, stdout io.Writer, log *slog.Logger) error {
	if commit != "" && !slices.Contains(demoCommits, commit) {
		return fmt.Errorf("demo: --commit %q: want %s", commit, strings.Join(demoCommits, ", "))
	}
	if commit != "" && dir == "" {
		return errors.New("demo: --commit needs --dir, the directory of the demo table to commit to")
	}
	kept := dir != ""
	if !kept {
		tmp, err := os.MkdirTemp("", "icecdc-demo-")
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	exists, err := demoExists(ctx, dir)
	if err != nil {
		return fmt.Errorf("demo %s: %w", dir, err)
	}
	var (
		opts    source.Options
		whats   []string
		fromSeq int64
		header  string
	)
	switch {
	case commit != "":
		if !exists {
			if _, _, err := buildBookshop(ctx, dir); err != nil {
				return err
			}
		}
		if fromSeq, err = demoHead(ctx, dir); err != nil {
			return err
		}
		var what string
		if opts, what, err = commitDemo(ctx, dir, commit); err != nil {
			return err
		}
		whats = []string{what}
		header = fmt.Sprintf("# icecdc demo: a commit to table bookshop.orders in %s, its events as debezium-json", dir)
	case exists:
		env, err := scenario.NewEnv(ctx, dir)
		if err != nil {
			return err
		}
		opts = demoOptions(env)
		env.Close()
		header = fmt.Sprintf("# icecdc demo: table bookshop.orders in %s exists; its events as debezium-json", dir)
	default:
		if opts, whats, err = buildBookshop(ctx, dir); err != nil {
			return err
		}
		header = fmt.Sprintf("# icecdc demo: table bookshop.orders in %s, events as debezium-json", dir)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	fmt.Fprintln(w, header)
	if err := printDemo(ctx, w, opts, fromSeq, whats, log); err != nil {
		return err
	}
	if kept {
		// After a --commit the commands were said already, when the
		// table was made.
		return demoNext(w, dir, opts, commit == "")
	}
	fmt.Fprintln(w, "# the table was in a temporary directory, now removed; 'icecdc demo --dir ./demo' keeps it, to follow with icecdc run")
	return nil
}

// demoHead is the sequence number of the demo table's head.
func demoHead(ctx context.Context, dir string) (int64, error) {
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return 0, err
	}
	defer env.Close()
	tbl, err := env.LoadTable(ctx, demoTable)
	if err != nil {
		return 0, fmt.Errorf("demo: %w", err)
	}
	if s := tbl.CurrentSnapshot(); s != nil {
		return s.SequenceNumber, nil
	}
	return 0, nil
}

// printDemo prints the events of the commits after fromSeq; whats says
// what each did, in order, where known.
func printDemo(ctx context.Context, w io.Writer, opts source.Options, fromSeq int64, whats []string, log *slog.Logger) error {
	src, err := source.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer src.Close()
	enc := &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "demo", Version: version}}
	i := 0
	var buf []byte
	return changes.Changes(ctx, src, fromSeq, 0, log, func(c *cdc.Commit) error {
		if err := c.Materialize(ctx); err != nil {
			return err
		}
		what := ""
		if i < len(whats) {
			what = " (" + whats[i] + ")"
		}
		i++
		fmt.Fprintf(w, "# snapshot %d  seq %d  %s%s: %d %s\n", c.Snapshot.ID, c.Snapshot.SequenceNumber, c.Snapshot.Operation, what, len(c.Events), plural(len(c.Events), "event", "events"))
		now := time.Now().UnixMilli()
		for k := range c.Events {
			var err error
			e := &c.Events[k]
			if buf, err = enc.AppendValue(buf[:0], c, e, now); err != nil {
				return err
			}
			// With its event id, as the stdout sink writes the event.
			buf = cdc.EncodingOf(enc).AddEventID(buf, 0, cdc.EventID(c.Table.UUID, c.Snapshot.SequenceNumber, e.RowID, e.Op))
			w.Write(append(buf, '\n'))
		}
		return nil
	})
}

// demoListen is the HTTP address of the demo's config: loopback only (it
// has no token), and the address the README gives for the endpoints, so
// icecdc status and curl find the demo daemon where the docs say.
const demoListen = "127.0.0.1:9464"

// demoNext writes a config for icecdc run on the demo table into dir
// (unless one is there) and prints the commands to try next, when told
// to or when it wrote the config.
func demoNext(w io.Writer, dir string, opts source.Options, tell bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	cfgPath := filepath.Join(abs, "icecdc.yaml")
	cfg := fmt.Sprintf(`# icecdc run -c %[1]s: follow the demo table, events on stdout.
name: demo
catalog:
  type: sql
  uri: %[2]s
  warehouse: %[3]s
tables:
  - name: %[4]s
    start: earliest
sink:
  type: stdout
state:
  path: %[5]s
allowed_locations: [%[3]s]   # files are read from under the warehouse only
http:
  listen: %[6]s   # /metrics, /healthz, /readyz, /status; icecdc status asks here
`, cfgPath, opts.CatalogURI, opts.Warehouse, opts.Table, filepath.Join(abs, "icecdc-state.db"), demoListen)
	if _, err := os.Stat(cfgPath); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			return fmt.Errorf("demo: write %s: %w", cfgPath, err)
		}
		tell = true
	}
	if !tell {
		return nil
	}
	q := shellQuote
	fmt.Fprintf(w, `#
# next, try:
#   icecdc changes --catalog-uri %s --warehouse %s --table %s --format table
#   icecdc run -c %s            # follows the table (config written by the demo), Ctrl-C to stop
#   icecdc demo --dir %s --commit update    # in another terminal: insert, update, delete or merge
#   icecdc status -c %s         # while run follows it: checkpoint, head and lag
#   curl -s http://%s/status
`, q(opts.CatalogURI), q(opts.Warehouse), opts.Table, q(cfgPath), q(dir), q(cfgPath), demoListen)
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
