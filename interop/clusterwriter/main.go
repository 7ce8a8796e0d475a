// Command clusterwriter is the interop stage's table writer for the
// cluster part: it creates format-v3 orders tables in a SQL (SQLite)
// catalog with iceberg-go and commits to them, in turn, until told to
// stop. Commands on stdin, one a line:
//
//	burst   commit to every table now; answers "burst <unix nanos>" once
//	        every table has a commit no member has seen yet
//	stop    stop committing; answers "stopped <commits>" and exits
//
// The cluster part of interop/run.sh (interop/cluster_e2e.py) drives it.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// orders is one table and the order ids live in it.
type orders struct {
	name string
	tbl  *table.Table
	live []int64
	next int64
	n    int
}

// step makes the table's next commit. The catalog's SQLite database is
// read by the members all the time: a commit that finds it locked
// (SQLITE_BUSY) did not happen and is made again.
func (o *orders) step(ctx context.Context, cat catalog.Catalog) error {
	for attempt := 1; ; attempt++ {
		err := o.try(ctx)
		if err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") || attempt == 50 {
			return err
		}
		time.Sleep(20 * time.Millisecond)
		cur, lerr := cat.LoadTable(ctx, o.tbl.Identifier())
		if lerr != nil {
			return fmt.Errorf("table %s: reload after %v: %w", o.name, err, lerr)
		}
		if cur.CurrentSnapshot().SnapshotID != o.tbl.CurrentSnapshot().SnapshotID {
			return fmt.Errorf("table %s: commit %d failed (%v) but the table moved on", o.name, o.n, err)
		}
	}
}

// try makes the table's next commit: appends, updates and deletes in
// turn, so that every kind of event flows.
func (o *orders) try(ctx context.Context) error {
	var (
		next *table.Table
		err  error
	)
	in := func(ids []int64) iceberg.BooleanExpression {
		return iceberg.IsIn(iceberg.Reference("order_id"), ids...)
	}
	switch {
	case o.n%4 == 0 || len(o.live) < 4:
		rows := make([]map[string]any, 5)
		for i := range rows {
			id := o.next + int64(i)
			rows[i] = scenario.Order(id, fmt.Sprintf("c%d", id%97), "new", float64(id%1000)+0.25)
		}
		if next, err = scenario.Append(ctx, o.tbl, rows); err == nil {
			for i := range rows {
				o.live = append(o.live, o.next+int64(i))
			}
			o.next += int64(len(rows))
		}
	case o.n%4 == 1 || o.n%4 == 3:
		ids := []int64{o.live[o.n%len(o.live)], o.live[(o.n+1)%len(o.live)]}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		n := o.n
		next, err = scenario.Update(ctx, o.tbl, in(ids), func(r map[string]any) map[string]any {
			r["status"] = fmt.Sprintf("updated-%d", n)
			return r
		})
	default:
		next, err = scenario.Delete(ctx, o.tbl, in(o.live[:1]))
		if err == nil {
			o.live = o.live[1:]
		}
	}
	if err != nil {
		return fmt.Errorf("table %s: commit %d: %w", o.name, o.n, err)
	}
	o.tbl = next
	o.n++
	return nil
}

func main() {
	dir := flag.String("dir", "", "directory of the catalog (catalog.db) and warehouse")
	count := flag.Int("tables", 6, "number of tables, ns.t00 on")
	ns := flag.String("namespace", "cluster", "namespace of the tables")
	every := flag.Duration("interval", 100*time.Millisecond, "time between two commits (to the tables in turn)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "clusterwriter: -dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *ns, *count, *every); err != nil {
		fmt.Fprintln(os.Stderr, "clusterwriter:", err)
		os.Exit(1)
	}
}

func run(dir, ns string, count int, every time.Duration) error {
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return err
	}
	defer env.Close()
	tables := make([]*orders, count)
	for i := range tables {
		name := fmt.Sprintf("%s.t%02d", ns, i)
		tbl, err := env.CreateTable(ctx, catalog.ToIdentifier(name), scenario.OrdersSchema(), nil, 3, nil)
		if err != nil {
			return fmt.Errorf("create table %s: %w", name, err)
		}
		tables[i] = &orders{name: name, tbl: tbl, next: 1}
		if err := tables[i].step(ctx, env.Catalog); err != nil {
			return err
		}
	}
	fmt.Printf("ready %d tables\n", count)

	var mu sync.Mutex // one commit at a time
	commits := count
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			case <-t.C:
			}
			mu.Lock()
			err := tables[i%count].step(ctx, env.Catalog)
			commits++
			mu.Unlock()
			if err != nil {
				done <- err
				return
			}
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "burst":
			mu.Lock()
			for _, o := range tables {
				if err := o.step(ctx, env.Catalog); err != nil {
					mu.Unlock()
					return err
				}
				commits++
			}
			mu.Unlock()
			fmt.Printf("burst %d\n", time.Now().UnixNano())
		case "stop":
			close(stop)
			if err := <-done; err != nil {
				return err
			}
			fmt.Printf("stopped %d\n", commits)
			return nil
		default:
			return fmt.Errorf("unknown command %q (want burst or stop)", in.Text())
		}
	}
	return fmt.Errorf("stdin closed before stop")
}
