//go:build unix

package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/internal/slowio"
	"github.com/icecdc/icecdc/source"
)

// BenchmarkLatency measures what a round trip to the object store costs
// icecdc (issue 8, part 4). Every local file IO goes through slowio, which
// waits a fixed delay on each request an object store serves with a round
// trip (an Open, a ranged read, a whole-file read) and counts them: the
// proxy in front of the storage. The cases:
//
//   - merge200: a MERGE-like commit (one RowDelta) that updates one row in
//     each of 200 data files of ~80 KiB, with 200 deletion vectors (in one
//     Puffin file, as one writer task writes them) and a new data file.
//     cold: a fresh source opens the table (reads its metadata) and
//     computes the commit; warm: a source that followed the table's
//     history computes it; cold-ranged: cold, with the files read as
//     those over 1 MiB are (footer from the tail, then column chunks)
//     instead of whole in one request.
//   - small: a commit appending 100 rows and deleting 10 rows of the
//     oldest file of a table of ICECDC_LATENCY_FILES data files (default
//     10,000, 1,000 per manifest), from a cold source.
//   - idle: a Refresh of an unchanged table (from its metadata file, and
//     through the SQL catalog, whose SQLite query costs no delay here).
//
// Each runs with io.concurrency 16 (the default), 64 and 1 (files read one
// after the other) at 20 ms and 50 ms per request, and without delay: the
// time of the transfer and computation alone, the "plus transfer" of the
// bound. Reported per op: requests and
// opens, roundtrips (wall time / delay: how many delays deep the work
// was, compute included), x-bound (wall time / (5 × delay), the dependent
// round trips metadata → manifest list → manifests → vectors and files
// → rows) and cpu-ms. Run (the tables are built once per process):
//
//	go test ./source -run '^$' -bench Latency -benchtime 1x -count 5 -timeout 120m
func BenchmarkLatency(b *testing.B) {
	fx := latencyTables(b)
	sio, restore := slowio.Install()
	defer restore()
	ctx := context.Background()
	for _, delay := range []time.Duration{0, 20 * time.Millisecond, 50 * time.Millisecond} {
		for _, conc := range []int{16, 64, 1} {
			name := fmt.Sprintf("delay=%s/conc=%d", delay, conc)
			b.Run("merge200/cold/"+name, func(b *testing.B) {
				o := source.Options{MetadataPath: fx.merge.meta, IOConcurrency: conc}
				measure(b, sio, delay, func() (int, error) {
					src, err := source.Open(ctx, o)
					if err != nil {
						return 0, err
					}
					defer src.Close()
					return commitEvents(ctx, src, fx.merge.last)
				})
			})
			b.Run("merge200/warm/"+name, func(b *testing.B) {
				src := fx.merge.warm(b, conc)
				measure(b, sio, delay, func() (int, error) { return commitEvents(ctx, src, fx.merge.last) })
			})
			if conc != 1 {
				// The same files read as files over 1 MiB are: the footer
				// from the tail, then the column chunks.
				b.Run("merge200/cold-ranged/"+name, func(b *testing.B) {
					defer source.SetWholeRead(0)()
					o := source.Options{MetadataPath: fx.merge.meta, IOConcurrency: conc}
					measure(b, sio, delay, func() (int, error) {
						src, err := source.Open(ctx, o)
						if err != nil {
							return 0, err
						}
						defer src.Close()
						return commitEvents(ctx, src, fx.merge.last)
					})
				})
			}
			b.Run(fmt.Sprintf("small%d/cold/%s", fx.small.files, name), func(b *testing.B) {
				o := source.Options{MetadataPath: fx.small.meta, IOConcurrency: conc}
				measure(b, sio, delay, func() (int, error) {
					src, err := source.Open(ctx, o)
					if err != nil {
						return 0, err
					}
					defer src.Close()
					return commitEvents(ctx, src, fx.small.last)
				})
			})
			if conc != 1 {
				continue // an idle poll reads one file however many may be read at once
			}
			for _, via := range []struct {
				name string
				o    source.Options
			}{
				{"metadata", source.Options{MetadataPath: fx.merge.meta}},
				{"sql", source.Options{CatalogURI: fx.merge.env.CatalogURI, Warehouse: fx.merge.env.Warehouse, Table: "shop.orders"}},
			} {
				b.Run(fmt.Sprintf("idle/%s/delay=%s", via.name, delay), func(b *testing.B) {
					src, err := source.Open(ctx, via.o)
					if err != nil {
						b.Fatal(err)
					}
					defer src.Close()
					measure(b, sio, delay, func() (int, error) {
						changed, err := src.Refresh(ctx)
						if err == nil && changed {
							err = fmt.Errorf("an idle Refresh says the table changed")
						}
						return 0, err
					})
				})
			}
		}
	}
}

// measure times op b.N times with every request delayed by delay, and
// reports the metrics BenchmarkLatency describes.
func measure(b *testing.B, sio *slowio.IO, delay time.Duration, op func() (events int, err error)) {
	b.Helper()
	sio.SetDelay(delay)
	defer sio.SetDelay(0)
	sio.Reset()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	events := 0
	for i := 0; i < b.N; i++ {
		n, err := op()
		if err != nil {
			b.Fatal(err)
		}
		events += n
	}
	b.StopTimer()
	cpu := cpuTime(b) - cpu0
	req, opens := sio.Requests()
	n := float64(b.N)
	wall := float64(b.Elapsed().Nanoseconds()) / n
	b.ReportMetric(wall/1e6, "ms/op")
	b.ReportMetric(float64(req)/n, "requests/op")
	b.ReportMetric(float64(opens)/n, "opens/op")
	if delay > 0 {
		b.ReportMetric(wall/float64(delay.Nanoseconds()), "roundtrips/op")
		b.ReportMetric(wall/float64(5*delay.Nanoseconds()), "x-bound")
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/1e6/n, "cpu-ms/op")
	if events > 0 {
		b.ReportMetric(float64(events)/n, "events/op")
	}
}

// commitEvents computes snapshot si and drains its events.
func commitEvents(ctx context.Context, src *source.Table, si cdc.SnapshotInfo) (int, error) {
	c, err := src.Commit(ctx, si)
	if err != nil {
		return 0, err
	}
	n := 0
	err = c.EachBatch(ctx, 0, func(evs []cdc.Event) error { n += len(evs); return nil })
	return n, err
}

// latencyFixture holds the tables BenchmarkLatency reads, built once per
// process (see TestMain) in a directory removed at its end.
type latencyFixture struct {
	merge *latencyTable
	small *latencyTable
}

type latencyTable struct {
	env   *scenario.Env
	meta  string           // the metadata file of the head
	last  cdc.SnapshotInfo // the measured commit
	files int

	mu      sync.Mutex
	warmSrc map[int]*source.Table // by io concurrency
}

var (
	latencyOnce sync.Once
	latencyFx   *latencyFixture
	latencyErr  error
	latencyDir  string
)

func latencyTables(b *testing.B) *latencyFixture {
	b.Helper()
	latencyOnce.Do(func() {
		ctx := context.Background()
		latencyDir, latencyErr = os.MkdirTemp("", "icecdc-latency-")
		if latencyErr != nil {
			return
		}
		files := 10_000
		if v, err := strconv.Atoi(os.Getenv("ICECDC_LATENCY_FILES")); err == nil && v > 0 {
			files = v
		}
		start := time.Now()
		fx := &latencyFixture{}
		if fx.merge, latencyErr = buildMerge200(ctx, filepath.Join(latencyDir, "merge")); latencyErr != nil {
			return
		}
		b.Logf("built the merge200 table in %s", time.Since(start).Round(time.Millisecond))
		start = time.Now()
		tb, err := buildSmallCommitTable(ctx, filepath.Join(latencyDir, "small"), files)
		if err != nil {
			latencyErr = err
			return
		}
		fx.small = &latencyTable{meta: tb.opts.MetadataPath, last: tb.last, files: files}
		b.Logf("built the table of %d data files in %s", files, time.Since(start).Round(time.Millisecond))
		latencyFx = fx
	})
	if latencyErr != nil {
		b.Fatal(latencyErr)
	}
	return latencyFx
}

// buildMerge200 builds a table of 200 data files of 8,000 rows (~80 KiB
// each, more than one tail read, so that their scans read column chunks as
// those of real files do) and a commit updating one row in each of them.
func buildMerge200(ctx context.Context, dir string) (*latencyTable, error) {
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return nil, err
	}
	return fillMerge200(ctx, env, source.Options{})
}

// fillMerge200 builds buildMerge200's table in env; o carries what a
// source needs besides the metadata file (the store's properties).
func fillMerge200(ctx context.Context, env *scenario.Env, o source.Options) (*latencyTable, error) {
	const files, rows = 200, 8000
	tbl, err := env.CreateTable(ctx, table.Identifier{"shop", "orders"}, ordersSchema(), nil, 3, nil)
	if err != nil {
		return nil, err
	}
	var batch [][]map[string]any
	var ids []int64
	for f := 0; f < files; f++ {
		var rs []map[string]any
		for i := 0; i < rows; i++ {
			id := int64(f*rows + i + 1)
			// A customer name that does not compress away keeps files large.
			rs = append(rs, order(id, fmt.Sprintf("customer-%x", uint64(id)*0x9e3779b97f4a7c15), "new", float64(id)/3))
		}
		batch = append(batch, rs)
		ids = append(ids, int64(f*rows+rows/2))
	}
	if tbl, err = scenario.AppendFiles(ctx, tbl, batch); err != nil {
		return nil, err
	}
	if tbl, err = scenario.Update(ctx, tbl, in("order_id", ids...), setStatus("paid")); err != nil {
		return nil, err
	}
	lt := &latencyTable{env: env, meta: tbl.MetadataLocation(), files: files, warmSrc: map[int]*source.Table{}}
	o.MetadataPath = lt.meta
	src, err := source.Open(ctx, o)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	snaps, err := src.Snapshots(ctx, 0, 0)
	if err != nil {
		return nil, err
	}
	lt.last = snaps[len(snaps)-1]
	n, err := commitEvents(ctx, src, lt.last)
	if err != nil {
		return nil, err
	}
	if n != files {
		return nil, fmt.Errorf("merge200: %d events, want %d updates", n, files)
	}
	return lt, nil
}

// warm returns a source that computed every commit before the measured one.
func (lt *latencyTable) warm(b *testing.B, conc int) *source.Table {
	b.Helper()
	lt.mu.Lock()
	defer lt.mu.Unlock()
	if src, ok := lt.warmSrc[conc]; ok {
		return src
	}
	ctx := context.Background()
	src, err := source.Open(ctx, source.Options{MetadataPath: lt.meta, IOConcurrency: conc})
	if err != nil {
		b.Fatal(err)
	}
	snaps, err := src.Snapshots(ctx, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, si := range snaps[:len(snaps)-1] {
		if _, err := commitEvents(ctx, src, si); err != nil {
			b.Fatal(err)
		}
	}
	lt.warmSrc[conc] = src
	return src
}

// cleanupLatency removes the benchmark's tables.
func cleanupLatency() {
	if latencyFx != nil {
		latencyFx.merge.env.Close()
		for _, src := range latencyFx.merge.warmSrc {
			src.Close()
		}
	}
	if latencyDir != "" {
		os.RemoveAll(latencyDir)
	}
}
