//go:build unix

package source_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// The small commit of BenchmarkSmallCommit, made on tables of growing size.
const (
	benchRowsPerFile    = 100  // rows in each data file of the base table
	benchFilesPerCommit = 1000 // data files per append building the base table (one manifest each)
	benchAppended       = 100  // rows the small commit appends
	benchDeleted        = 10   // rows the small commit deletes, all in the oldest data file
)

// BenchmarkSmallCommit measures one small commit (benchAppended new rows and
// benchDeleted deleted rows, in one RowDelta snapshot) on tables of 10, 1,000
// and 10,000 data files. docs/contract.md: the cost must follow the size of the
// commit, so the time must stay flat across table sizes.
//
//   - warm: a source.Table that has processed the whole history before the
//     small commit (its caches are fed) computes the small commit, again and
//     again.
//   - cold: a fresh source.Table per iteration (opened outside the timer)
//     computes the small commit; it must locate the old data file that the
//     deletion vector names.
//
// Each table is built once per run, the first time a case needs it, in a
// directory removed when the benchmark ends; building 10,000 files takes a
// while (the time is logged). Run for example:
//
//	go test ./source -run '^$' -bench SmallCommit -count 5 -benchtime 20x -timeout 60m
func BenchmarkSmallCommit(b *testing.B) {
	dir := b.TempDir()
	for _, n := range []int{10, 1000, 10000} {
		fx := &smallCommitFixture{dir: filepath.Join(dir, fmt.Sprint(n)), files: n}
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			b.Run("warm", func(b *testing.B) { benchSmallCommitWarm(b, fx) })
			b.Run("cold", func(b *testing.B) { benchSmallCommitCold(b, fx) })
		})
	}
}

func benchSmallCommitWarm(b *testing.B, fx *smallCommitFixture) {
	ctx := context.Background()
	tb := fx.table(b)
	src := fx.warmSource(b, tb)
	runtime.GC() // the warm-up's garbage is not the small commit's cost
	b.ResetTimer()
	events, cpu0 := 0, cpuTime(b)
	for i := 0; i < b.N; i++ {
		c, err := src.Commit(ctx, tb.last)
		if err != nil {
			b.Fatal(err)
		}
		events += len(c.Events)
	}
	b.StopTimer()
	reportSmallCommit(b, events, cpuTime(b)-cpu0)
}

func benchSmallCommitCold(b *testing.B, fx *smallCommitFixture) {
	ctx := context.Background()
	tb := fx.table(b)
	runtime.GC() // nor is the build's
	b.ResetTimer()
	var cpu time.Duration
	events := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		src, err := source.Open(ctx, tb.opts)
		if err != nil {
			b.Fatal(err)
		}
		cpu0 := cpuTime(b)
		b.StartTimer()
		c, err := src.Commit(ctx, tb.last)
		b.StopTimer()
		cpu += cpuTime(b) - cpu0
		if err != nil {
			b.Fatal(err)
		}
		events += len(c.Events)
	}
	reportSmallCommit(b, events, cpu)
}

// reportSmallCommit reports events and wall time per commit, and the CPU
// time of the whole process (all threads) per commit: on a shared machine
// the CPU time is the steadier measure of the work done.
func reportSmallCommit(b *testing.B, events int, cpu time.Duration) {
	b.ReportMetric(float64(events)/float64(b.N), "events/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/commit")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e6/float64(b.N), "cpu-ms/commit")
}

// cpuTime is the user+system CPU time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// smallCommitFixture builds its table once, when a case first asks for it,
// and keeps a warmed source.Table for the warm cases.
type smallCommitFixture struct {
	dir   string
	files int

	once sync.Once
	tb   *smallCommitTable
	err  error

	warmOnce sync.Once
	warm     *source.Table
	warmErr  error
}

// smallCommitTable is a built table: its metadata file and the small commit.
type smallCommitTable struct {
	opts    source.Options
	history []cdc.SnapshotInfo // every snapshot of main, ascending
	last    cdc.SnapshotInfo   // the small commit
}

func (fx *smallCommitFixture) table(b *testing.B) *smallCommitTable {
	b.Helper()
	fx.once.Do(func() {
		start := time.Now()
		fx.tb, fx.err = buildSmallCommitTable(context.Background(), fx.dir, fx.files)
		if fx.err != nil {
			return
		}
		b.Logf("built table of %d data files (+1 small commit, %d snapshots) in %s",
			fx.files, len(fx.tb.history), time.Since(start).Round(time.Millisecond))
		// Verify once, cold, untimed.
		src, err := source.Open(context.Background(), fx.tb.opts)
		if err != nil {
			fx.err = err
			return
		}
		fx.err = verifySmallCommit(context.Background(), src, fx.tb.last)
	})
	if fx.err != nil {
		b.Fatal(fx.err)
	}
	return fx.tb
}

// warmSource opens a source.Table and computes every snapshot before the
// small commit once, as a follower that kept up with the table would have.
func (fx *smallCommitFixture) warmSource(b *testing.B, tb *smallCommitTable) *source.Table {
	b.Helper()
	fx.warmOnce.Do(func() {
		ctx := context.Background()
		start := time.Now()
		src, err := source.Open(ctx, tb.opts)
		if err != nil {
			fx.warmErr = err
			return
		}
		for _, si := range tb.history[:len(tb.history)-1] {
			if _, err := src.Commit(ctx, si); err != nil {
				fx.warmErr = fmt.Errorf("warm up: snapshot %d: %w", si.SequenceNumber, err)
				return
			}
		}
		b.Logf("warmed up on %d earlier snapshots in %s", len(tb.history)-1, time.Since(start).Round(time.Millisecond))
		fx.warmErr = verifySmallCommit(ctx, src, tb.last)
		fx.warm = src
	})
	if fx.warmErr != nil {
		b.Fatal(fx.warmErr)
	}
	return fx.warm
}

// verifySmallCommit checks that src computes exactly the small commit's
// inserts and deletes.
func verifySmallCommit(ctx context.Context, src *source.Table, si cdc.SnapshotInfo) error {
	c, err := src.Commit(ctx, si)
	if err != nil {
		return err
	}
	n := map[cdc.Op]int{}
	for _, e := range c.Events {
		n[e.Op]++
		if e.Op == cdc.OpDelete {
			before, err := e.BeforeRow()
			if err != nil {
				return err
			}
			if id, ok := before[0].(int64); !ok || id < 1 || id > benchDeleted {
				return fmt.Errorf("small commit deletes order %v, want one of 1..%d", before[0], benchDeleted)
			}
		}
	}
	if len(c.Events) != benchAppended+benchDeleted || n[cdc.OpCreate] != benchAppended || n[cdc.OpDelete] != benchDeleted {
		return fmt.Errorf("small commit: %d events (%d c, %d d, %d u), want %d inserts and %d deletes",
			len(c.Events), n[cdc.OpCreate], n[cdc.OpDelete], n[cdc.OpUpdate], benchAppended, benchDeleted)
	}
	return nil
}

// buildSmallCommitTable builds, in dir, a v3 table of files data files of
// benchRowsPerFile rows, appended benchFilesPerCommit files per commit (so
// one manifest per commit), then the small commit: benchAppended new rows
// and the deletion of benchDeleted rows of the oldest data file, in one
// snapshot.
func buildSmallCommitTable(ctx context.Context, dir string, files int) (*smallCommitTable, error) {
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, ordersSchema(), nil, 3, nil)
	if err != nil {
		return nil, err
	}
	for first := 0; first < files; first += benchFilesPerCommit {
		var batch [][]map[string]any
		for f := first; f < min(first+benchFilesPerCommit, files); f++ {
			from := int64(f*benchRowsPerFile) + 1
			batch = append(batch, orders(from, from+benchRowsPerFile-1))
		}
		if tbl, err = scenario.AppendFiles(ctx, tbl, batch); err != nil {
			return nil, err
		}
	}
	from := int64(files*benchRowsPerFile) + 1
	tbl, err = scenario.AppendAndDelete(ctx, tbl, orders(from, from+benchAppended-1),
		iceberg.LessThanEqual(iceberg.Reference("order_id"), int64(benchDeleted)))
	if err != nil {
		return nil, err
	}

	tb := &smallCommitTable{opts: source.Options{MetadataPath: tbl.MetadataLocation()}}
	src, err := source.Open(ctx, tb.opts)
	if err != nil {
		return nil, err
	}
	if tb.history, err = src.Snapshots(ctx, 0, 0); err != nil {
		return nil, err
	}
	tb.last = tb.history[len(tb.history)-1]
	if got := tbl.CurrentSnapshot(); got == nil || got.SnapshotID != tb.last.ID {
		return nil, fmt.Errorf("small commit is not the head of main")
	}
	return tb, nil
}
