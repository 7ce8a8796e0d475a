package source_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/variant"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// TestRandomHistories builds tables from seeded random sequences of every
// kind of commit the scenario writer makes and checks the contract by
// replay at every snapshot: the contract, not particular cases. Commits
// are held (read whole, as small commits are) unless the seed streams
// them.
func TestRandomHistories(t *testing.T) {
	testRandomHistories(t, []uint64{1, 2, 3, 4, 5, 6}, held)
}

// TestRandomHistoriesStreamed checks the same contract with every commit
// of two or more events streamed a record batch at a time, and resumed
// from every index.
func TestRandomHistoriesStreamed(t *testing.T) {
	testRandomHistories(t, []uint64{7, 8, 9}, streamed)
}

// TestRandomHistoriesSpilled streams every commit with a memory budget of
// one byte, so that every update's before image goes through the
// temporary file.
func TestRandomHistoriesSpilled(t *testing.T) {
	before := source.SpilledCommits()
	t.Cleanup(func() { // after the parallel seeds
		if source.SpilledCommits() == before {
			t.Error("no commit spilled its before images: the spill path went unchecked")
		}
	})
	testRandomHistories(t, []uint64{10, 11, 12}, spilled)
}

// TestRandomHistoriesV3Types runs the histories on orders with a variant
// and a nanosecond timestamp column, every commit streamed and resumed
// from every index; a third of the way in, two columns are added with
// defaults (initial-default and write-default), so that the rows written
// before read them as the default in both images.
func TestRandomHistoriesV3Types(t *testing.T) {
	testRandomHistories(t, []uint64{13, 14, 15}, v3types)
}

// historyMode is how a random history's commits are read.
type historyMode int

const (
	held     historyMode = iota // as the seed says (every third seed streams appends)
	streamed                    // every commit of 2+ events streamed
	spilled                     // streamed, before images spilled
	v3types                     // streamed, on a table with variant and timestamp_ns columns
)

func testRandomHistories(t *testing.T, seeds []uint64, mode historyMode) {
	if testing.Short() {
		seeds = seeds[:min(2, len(seeds))]
	}
	// ICECDC_RANDOM_SEEDS=N widens the search to seeds 1..N.
	if n, err := strconv.Atoi(os.Getenv("ICECDC_RANDOM_SEEDS")); err == nil && n > 0 {
		seeds = seeds[:0]
		for i := 1; i <= n; i++ {
			seeds = append(seeds, uint64(i))
		}
	}
	seen := map[string]int{}
	var mu sync.Mutex
	arrowBefore := replay.ArrowImages()
	t.Cleanup(func() {
		// replay.Check held every Arrow-held image to the Row path: there
		// must have been some.
		// (A variant column keeps a file's rows off the Arrow path: its
		// values are checked as they are read.)
		if mode != v3types && replay.ArrowImages() == arrowBefore {
			t.Error("no event held its image as Arrow columns: the Arrow encoding went unchecked")
		}
		// The generator must reach every kind of commit, or the test
		// checks less than it claims.
		if mode == held && len(seeds) >= 6 {
			for _, k := range []string{"append", "delete", "update", "compact", "equality delete", "upsert", "cow delete", "cow overwrite"} {
				if seen[k] == 0 {
					t.Errorf("no %q commit drawn: %v", k, seen)
				}
			}
		}
	})
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			kinds := randomHistory(t, seed, 24, mode)
			mu.Lock()
			defer mu.Unlock()
			for _, k := range kinds {
				seen[k]++
			}
		})
	}
}

func randomHistory(t *testing.T, seed uint64, commits int, mode historyMode) (kinds []string) {
	rng := rand.New(rand.NewPCG(seed, 99))
	var spec *iceberg.PartitionSpec
	if seed%2 == 0 {
		s := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "status", Transform: iceberg.IdentityTransform{}})
		spec = &s
	}
	var sc *iceberg.Schema
	if mode == v3types {
		sc = iceberg.NewSchemaWithIdentifiers(0, []int{1}, append(ordersSchema().Fields(),
			iceberg.NestedField{ID: 5, Name: "doc", Type: iceberg.VariantType{}},
			iceberg.NestedField{ID: 6, Name: "at", Type: iceberg.PrimitiveTypes.TimestampNs})...)
	}
	f := newFixture(t, 3, spec, sc)
	switch {
	case mode == spilled:
		f.held, f.memory = 1, 1
	case mode == streamed || mode == v3types || seed%3 == 0:
		f.held = 1
	}
	statuses := []string{"new", "paid", "shipped"}
	next := int64(1)
	live := map[int64]bool{}
	liveKeys := func() []int64 {
		var ks []int64
		for k := range live {
			ks = append(ks, k)
		}
		// deterministic order for the seed
		for i := range ks {
			for j := i + 1; j < len(ks); j++ {
				if ks[j] < ks[i] {
					ks[i], ks[j] = ks[j], ks[i]
				}
			}
		}
		return ks
	}
	pick := func(n int) []int64 {
		ks := liveKeys()
		rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
		if n > len(ks) {
			n = len(ks)
		}
		return ks[:n]
	}
	withDefaults := false
	newRows := func(n int) []map[string]any {
		var rows []map[string]any
		for range n {
			row := order(next, fmt.Sprint("c", next%5), statuses[rng.IntN(3)], float64(rng.IntN(1000))/4)
			if withDefaults && rng.IntN(2) == 0 {
				row["prio"] = int32(rng.IntN(5))
			}
			if withDefaults && rng.IntN(3) == 0 {
				row["region"] = fmt.Sprint("r", rng.IntN(3))
			}
			if mode == v3types {
				doc, err := variant.ParseJSON(fmt.Sprintf(`{"n":%d,"tags":["t%d",%d.50],"ok":%v}`, next, rng.IntN(9), rng.IntN(99), rng.IntN(2) == 0), false)
				if err != nil {
					t.Fatal(err)
				}
				row["doc"], row["at"] = doc, arrow.Timestamp(rng.Int64N(4e18)-2e18)
			}
			rows = append(rows, row)
			live[next] = true
			next++
		}
		return rows
	}
	var log []string
	// iceberg-go's copy-on-write rewrites a file without applying its
	// deletes (ICEBERG-GO-NOTES), so it is only drawn while no delete is
	// live: at the start and right after a compaction.
	cowSafe := true
	for i := 0; i < commits; i++ {
		if mode == v3types && i == commits/3 {
			tx := f.tbl.NewTransaction()
			us := tx.UpdateSchema(true, false)
			us.AddColumn([]string{"prio"}, iceberg.PrimitiveTypes.Int32, "", false, iceberg.Int32Literal(7))
			us.AddColumn([]string{"region"}, iceberg.PrimitiveTypes.String, "", false, iceberg.StringLiteral("eu"))
			if err := us.Commit(); err != nil {
				t.Fatalf("add columns with defaults: %v", err)
			}
			tbl, err := tx.Commit(f.ctx)
			if err != nil {
				t.Fatalf("add columns with defaults: %v", err)
			}
			f.tbl, withDefaults = tbl, true
			log = append(log, "add columns prio, region with defaults")
		}
		kind := rng.IntN(12)
		if len(live) < 3 {
			kind = 0
		}
		if kind >= 10 && !cowSafe {
			kind = 7 // compact instead, which makes copy-on-write safe again
		} else if cowSafe && len(live) >= 3 && rng.IntN(3) == 0 {
			kind = 10 + rng.IntN(2) // the safe window is short: use it
		}
		switch kind {
		case 3, 4, 5, 6, 8, 9:
			cowSafe = false
		case 7:
			cowSafe = true
		}
		var what string
		var fn func(context.Context, *table.Table) (*table.Table, error)
		switch kind {
		case 0, 1:
			rows := newRows(1 + rng.IntN(8))
			what = fmt.Sprintf("append %d", len(rows))
			fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Append(ctx, tb, rows)
			}
		case 2:
			files := [][]map[string]any{newRows(1 + rng.IntN(4)), newRows(1 + rng.IntN(4))}
			what = "append 2 files"
			fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.AppendFiles(ctx, tb, files)
			}
		case 3, 4:
			ks := pick(1 + rng.IntN(3))
			for _, k := range ks {
				delete(live, k)
			}
			what = fmt.Sprint("delete ", ks)
			fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Delete(ctx, tb, in("order_id", ks...))
			}
		case 5, 6:
			ks := pick(1 + rng.IntN(3))
			amount := float64(rng.IntN(100))
			what = fmt.Sprint("update ", ks)
			fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Update(ctx, tb, in("order_id", ks...), func(r map[string]any) map[string]any { r["amount"] = amount; return r })
			}
		case 7:
			what = "compact"
			fn = scenario.Compact
		case 8:
			ks := pick(1 + rng.IntN(2))
			var keys []map[string]any
			for _, k := range ks {
				delete(live, k)
				keys = append(keys, map[string]any{"order_id": k})
			}
			if spec != nil { // iceberg-go routes equality deletes by partition
				what = fmt.Sprint("delete ", ks)
				fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
					return scenario.Delete(ctx, tb, in("order_id", ks...))
				}
				break
			}
			what = fmt.Sprint("equality delete ", ks)
			fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.EqualityDelete(ctx, tb, []string{"order_id"}, keys)
			}
		case 9:
			if spec != nil {
				rows := newRows(2)
				what = "append 2"
				fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
					return scenario.Append(ctx, tb, rows)
				}
				break
			}
			ks := pick(2)
			var rows []map[string]any
			for _, k := range ks {
				rows = append(rows, order(k, "up", "upserted", float64(k)))
			}
			rows = append(rows, newRows(1)...)
			what = fmt.Sprint("upsert ", ks)
			fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.EqualityUpsert(ctx, tb, []string{"order_id"}, rows)
			}
		case 10:
			ks := pick(1 + rng.IntN(3))
			for _, k := range ks {
				delete(live, k)
			}
			what = fmt.Sprint("cow delete ", ks)
			fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.DeleteCoW(ctx, tb, in("order_id", ks...))
			}
		case 11:
			ks := pick(1 + rng.IntN(2))
			rows := newRows(1 + rng.IntN(3))
			for _, k := range ks {
				delete(live, k)
			}
			what = fmt.Sprint("cow overwrite ", ks)
			fn = func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.OverwriteCoW(ctx, tb, in("order_id", ks...), rows)
			}
		}
		log = append(log, what)
		tbl, err := fn(f.ctx, f.tbl)
		if err != nil {
			t.Fatalf("commit %d (%s): %v\nhistory: %v", i, what, err, log)
		}
		f.tbl = tbl
	}
	steps, err := replayCheck(f)
	if err != nil {
		t.Fatalf("%v\nhistory: %v", err, log)
	}
	if mode == v3types {
		// The replay held the events to the oracle's rows; that some
		// before image of a row older than the columns shows their
		// defaults makes sure the defaults were exercised at all.
		defaulted := 0
		for _, st := range steps {
			for _, e := range st.Events {
				if e.Before != nil && fmt.Sprint(e.Before["prio"]) == "7" && fmt.Sprint(e.Before["region"]) == "eu" {
					defaulted++
				}
			}
		}
		if defaulted == 0 {
			t.Fatalf("no before image showed the defaults of the added columns\nhistory: %v", log)
		}
		t.Logf("%d before images show the added columns' defaults", defaulted)
	}
	if mode != held {
		checkResume(t, f, steps)
	}
	// Net changes (docs/changes.md) against full replay, for every range.
	ranges, err := replay.CheckNet(f.ctx, steps, f.tbl)
	if err != nil {
		t.Fatalf("%v\nhistory: %v", err, log)
	}
	t.Logf("net changes of %d ranges match full replay", ranges)
	// A column subscription (docs/changes.md) against projected replay.
	for _, cols := range [][]string{{"status"}, {"amount"}} {
		dropped, err := replay.CheckSubscription(f.ctx, steps, f.tbl, cols)
		if err != nil {
			t.Fatalf("columns %v: %v\nhistory: %v", cols, err, log)
		}
		t.Logf("columns %v: %d updates dropped", cols, dropped)
	}
	n := checkExpiredParents(t, f, steps)
	t.Logf("%d of %d snapshots computed with their parent expired", n, len(steps))
	if n < len(steps)/2 {
		t.Fatalf("only %d of %d snapshots could be computed with their parent expired\nhistory: %v", n, len(steps), log)
	}
	for _, w := range log {
		kinds = append(kinds, strings.TrimRight(w, " 0123456789[]"))
	}
	return kinds
}

// checkResume resumes every streamed commit of steps from every index and
// wants exactly the tail of its events, as a restart from a checkpoint
// inside the commit reads them.
func checkResume(t *testing.T, f *fixture, steps []replay.Step) {
	t.Helper()
	src := f.open()
	resumed := 0
	for _, s := range steps {
		if len(s.Events) < 2 {
			continue
		}
		for from := 1; from < len(s.Events); from++ {
			c, err := src.Commit(f.ctx, s.Snapshot)
			if err != nil {
				t.Fatal(err)
			}
			if c.Rest == nil {
				break // held: a commit with equality deletes
			}
			resumed++
			var tail []cdc.Event
			if err := c.EachBatch(f.ctx, from, func(evs []cdc.Event) error { tail = append(tail, evs...); return nil }); err != nil {
				t.Fatalf("snapshot seq %d from %d: %v", s.Snapshot.SequenceNumber, from, err)
			}
			c.Events, c.Rest, c.Total = tail, nil, 0
			got, err := replay.Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tail {
				if tail[i].Index != from+i {
					t.Fatalf("snapshot seq %d from %d: event %d has index %d", s.Snapshot.SequenceNumber, from, i, tail[i].Index)
				}
			}
			if want := s.Events[from:]; !reflect.DeepEqual(got, want) {
				t.Fatalf("snapshot seq %d resumed from %d:\n got %v\nwant %v", s.Snapshot.SequenceNumber, from, got, want)
			}
		}
	}
	if resumed == 0 {
		t.Fatal("no commit was streamed")
	}
}
