package badinput

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/changes"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/source"
)

// fuzzTable is the base table one fuzzing process works on.
type fuzzTable struct {
	base    *Base
	metaRaw []byte
	meta    any
	list    string // the head's manifest list, which the fuzzer may replace
	listRaw []byte
	dir     string // this process's: where mutated files go
	owned   string // the table's directory, when this process made it
	truth   []Event
	byID    map[int64][]Event
	graph   string // graphKey of the untouched metadata
	uuid    string
}

var (
	fuzzOnce  sync.Once
	fuzzBase  *fuzzTable
	fuzzSetup error
)

// fuzzTableFor builds the base table once. With -fuzz, the seed corpus is
// made in the coordinating process and run in worker processes, so the
// workers use the coordinator's table (read-only) rather than their own.
func fuzzTableFor(f *testing.F) *fuzzTable {
	fuzzOnce.Do(func() {
		owner := os.Getpid()
		if fl := flag.Lookup("test.fuzzworker"); fl != nil && fl.Value.String() == "true" {
			owner = os.Getppid()
		}
		shared := filepath.Join(os.TempDir(), fmt.Sprintf("icecdc-fuzz-table-%d", owner))
		var err error
		ft := &fuzzTable{}
		if owner == os.Getpid() {
			os.RemoveAll(shared)
			ft.base, err = BuildBase(context.Background(), shared)
			ft.owned = shared
		} else {
			ft.base, err = LoadBase(filepath.Join(shared, "warehouse"))
		}
		if err != nil {
			fuzzSetup = err
			return
		}
		// Under the owner's directory, which it removes: a worker is
		// stopped without running its cleanups.
		ft.dir = filepath.Join(shared, fmt.Sprintf("case-%d", os.Getpid()))
		if err := os.MkdirAll(ft.dir, 0o755); err != nil {
			fuzzSetup = err
			return
		}
		ft.metaRaw, _ = os.ReadFile(ft.base.Metadata)
		ft.meta, _ = ParseJSON(ft.metaRaw)
		ft.list = ft.base.Snapshots[len(ft.base.Snapshots)-1].ManifestList
		ft.listRaw, _ = os.ReadFile(ft.list)
		ft.graph = graphKey(ft.meta)
		u, _ := Get(ft.meta, Path{"table-uuid"})
		ft.uuid, _ = u.(string)
		res := runInProcess(ft.base.Metadata, 0)
		if res.err != nil {
			fuzzSetup = fmt.Errorf("the untouched table: %w", res.err)
			return
		}
		if ft.truth, err = ParseEvents(res.out, SchemaColumns(ft.meta)); err != nil {
			fuzzSetup = err
			return
		}
		ft.byID = map[int64][]Event{}
		for _, e := range ft.truth {
			ft.byID[e.Snap] = append(ft.byID[e.Snap], e)
		}
		fuzzBase = ft
	})
	if fuzzSetup != nil {
		f.Fatal(fuzzSetup)
	}
	return fuzzBase
}

// removeFuzzTable removes the base table at the end of the test process
// (TestMain), not at the end of the first fuzz target that used it: the
// targets share it, and a later one would find it gone.
func removeFuzzTable() {
	if fuzzBase != nil && fuzzBase.owned != "" {
		os.RemoveAll(fuzzBase.owned)
	}
}

// graphKey is what of a metadata.json decides which events a table has:
// the followed branch, the snapshots' ids, parents, sequence numbers,
// manifest lists, operations and row ranges, the format version.
//
// Go's JSON decoding matches keys without regard to case, so a document
// with two keys that differ only in case may be read either way: its key
// is "" (never equal).
func graphKey(meta any) string {
	if foldDuplicates(meta) {
		return ""
	}
	pick := func(p Path) any { v, _ := Get(meta, p); return v }
	var snaps []any
	if list, ok := pick(Path{"snapshots"}).([]any); ok {
		for i := range list {
			sp := Path{"snapshots", i}
			snaps = append(snaps, []any{pick(sp.with("snapshot-id")), pick(sp.with("parent-snapshot-id")),
				pick(sp.with("sequence-number")), pick(sp.with("manifest-list")), pick(sp.with("first-row-id")),
				pick(append(sp, "summary", "operation"))})
		}
	}
	b, _ := json.Marshal([]any{pick(Path{"format-version"}), pick(Path{"current-snapshot-id"}),
		pick(Path{"refs", "main", "snapshot-id"}), pick(Path{"refs", "main", "type"}), snaps})
	return string(b)
}

func foldDuplicates(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		seen := map[string]bool{}
		for k, x := range v {
			f := strings.ToLower(k)
			if seen[f] || !isASCII(k) || foldDuplicates(x) {
				return true
			}
			seen[f] = true
		}
	case []any:
		for _, x := range v {
			if foldDuplicates(x) {
				return true
			}
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// inProcess is what one run of the engine produced.
type inProcess struct {
	out      []byte         // the events as debezium-json lines
	complete map[int64]bool // snapshots whose commit was emitted whole
	err      error          // the engine's error
	hang     bool           // did not return in time
	alloc    uint64         // bytes allocated meanwhile
}

// fuzzBudget bounds what one run may allocate, and fuzzTimeout how long
// it may take.
const (
	fuzzBudget  = 256 << 20
	fuzzTimeout = 10 * time.Second
)

// runInProcess runs what `icecdc changes --metadata` runs, in this process,
// watching its allocations and its time.
func runInProcess(metadata string, budget uint64) inProcess {
	return runWatched(budget, func(ctx context.Context) (*source.Table, error) {
		return source.Open(ctx, source.Options{MetadataPath: metadata})
	})
}

// runWatched prints the changes of the table open gives as `icecdc
// changes` does, in this process, watching its allocations and its time.
func runWatched(budget uint64, open func(context.Context) (*source.Table, error)) inProcess {
	ctx, cancel := context.WithTimeout(context.Background(), fuzzTimeout)
	defer cancel()
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocs := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	before := allocs()
	var res inProcess
	done := make(chan struct{})
	var out bytes.Buffer
	complete := map[int64]bool{}
	go func() {
		defer close(done)
		src, err := open(ctx)
		if err != nil {
			res.err = err
			return
		}
		defer src.Close()
		enc := &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "icecdc", Version: "fuzz"}}
		var buf []byte
		res.err = changes.Changes(ctx, src, 0, 0, slog.New(slog.DiscardHandler), func(c *cdc.Commit) error {
			err := c.EachBatch(ctx, 0, func(evs []cdc.Event) error {
				for i := range evs {
					var err error
					if buf, err = enc.AppendValue(buf[:0], c, &evs[i], 0); err != nil {
						return err
					}
					out.Write(append(buf, '\n'))
				}
				return nil
			})
			if err == nil {
				complete[c.Snapshot.ID] = true
			}
			return err
		})
	}()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(fuzzTimeout + 5*time.Second)
	for {
		select {
		case <-done:
			res.alloc = allocs() - before
			res.out, res.complete = out.Bytes(), complete
			return res
		case <-tick.C:
			if a := allocs() - before; budget > 0 && a > budget {
				// The run goes on in its goroutine; the caller fails now.
				res.alloc, res.err = a, errOverBudget
				return res
			}
		case <-deadline:
			res.hang = true
			return res
		}
	}
}

var errOverBudget = errors.New("over the allocation budget")

// FuzzTableMetadata mutates a whole small table's metadata.json (and,
// optionally, replaces its head's manifest list) and runs the engine the
// way `icecdc changes --metadata` does, in process. It checks: no panic
// (a panic fails the fuzz), no hang, at most fuzzBudget allocated, an
// error of one line naming the object at fault (as the suite's
// namesObject judges it: a file of the table, a snapshot, a metadata key,
// a column), and never a wrong event: every event emitted, error or not, is one the
// untouched table yields for the same snapshot; a snapshot whose commit
// was emitted whole has all its events; and when the run succeeded on a
// metadata.json whose snapshot graph is unchanged (and the untouched
// manifest list), the events are exactly the untouched ones. Images are
// compared by field id, and the table uuid the metadata gives is taken as
// the table's (renaming a column or giving the table another uuid is not
// a wrong event).
func FuzzTableMetadata(f *testing.F) {
	ft := fuzzTableFor(f)
	f.Add(ft.metaRaw, []byte{})
	f.Add(ft.metaRaw, ft.listRaw)
	f.Add(ft.metaRaw[:len(ft.metaRaw)/2], []byte{})
	f.Add(ft.metaRaw, ft.listRaw[:len(ft.listRaw)/2])
	if rb, err := withMeta(ft.meta, func(root any) {
		id, _ := Get(root, Path{"snapshots", 3, "snapshot-id"})
		Set(root, Path{"current-snapshot-id"}, id)
		Set(root, Path{"refs", "main", "snapshot-id"}, id)
	}); err == nil {
		f.Add(rb, []byte{}) // a valid rollback to snapshot 4
	}
	if rn, err := withMeta(ft.meta, func(root any) {
		Set(root, Path{"schemas", 0, "fields", 1, "name"}, "buyer")
	}); err == nil {
		f.Add(rn, []byte{}) // a renamed column
	}
	f.Fuzz(fuzzBody(ft))
}

// fuzzBody runs one fuzzed input against ft and checks the invariants.
func fuzzBody(ft *fuzzTable) func(t *testing.T, meta, list []byte) {
	return func(t *testing.T, meta, list []byte) {
		// The table is shared with other fuzzing processes: a replaced
		// manifest list is this process's copy, and the metadata points
		// at it where it named the head's list.
		if len(list) > 0 {
			mine := filepath.Join(ft.dir, filepath.Base(ft.list))
			if err := os.WriteFile(mine, list, 0o644); err != nil {
				t.Fatal(err)
			}
			meta = bytes.ReplaceAll(meta, []byte(ft.list), []byte(mine))
		}
		p := filepath.Join(ft.dir, filepath.Base(ft.base.Metadata))
		if err := os.WriteFile(p, meta, 0o644); err != nil {
			t.Fatal(err)
		}
		res := runInProcess(p, fuzzBudget)
		switch {
		case res.hang:
			t.Fatalf("no result after %s", fuzzTimeout)
		case errors.Is(res.err, errOverBudget):
			t.Fatalf("allocated %d MiB, budget %d MiB", res.alloc>>20, fuzzBudget>>20)
		case res.alloc > fuzzBudget:
			t.Fatalf("allocated %d MiB, budget %d MiB", res.alloc>>20, fuzzBudget>>20)
		}
		if res.err != nil {
			// What icecdc prints (or logs) for it must be one line that
			// names the object at fault, as for the suite's cases.
			msg := res.err.Error()
			if class, detail := namesObject(ft.objectNames(p, meta), msg); class != classClear || strings.Contains(msg, "\n") {
				t.Fatalf("unclear error (%s): %s", class, detail)
			}
		}
		cols, graph, tableUUID := ft.cols(meta)
		out := res.out
		if _, err := uuid.Parse(tableUUID); err == nil && len(tableUUID) == 36 && tableUUID != ft.uuid {
			// another valid uuid is the table's: events carry it
			out = bytes.ReplaceAll(out, []byte(`"`+tableUUID), []byte(`"`+ft.uuid))
		}
		got, err := ParseEvents(out, cols)
		if err != nil {
			t.Fatalf("output is not events: %v", err)
		}
		bySnap := map[int64][]Event{}
		for _, e := range got {
			bySnap[e.Snap] = append(bySnap[e.Snap], e)
		}
		for id, evs := range bySnap {
			want := ft.byID[id]
			complete := res.complete[id]
			if d := Compare(evs, want, complete); d != "" {
				t.Fatalf("snapshot %d (error %v): %s", id, res.err, d)
			}
		}
		if res.err == nil && len(list) == 0 && graph == ft.graph {
			if d := Compare(got, ft.truth, true); d != "" {
				t.Fatalf("the snapshot graph is unchanged, yet: %s", d)
			}
		}
	}
}

// objectNames is what an error about a fuzzed table may name: the
// metadata file, a file of the table, a snapshot, a key of the metadata
// (as metadata.json spells it, or in words), a column.
func (ft *fuzzTable) objectNames(metaPath string, raw []byte) []string {
	names := []string{metaPath, filepath.Base(metaPath), filepath.Base(ft.list)}
	for _, sn := range ft.base.Snapshots {
		names = append(names, strconv.FormatInt(sn.ID, 10), filepath.Base(sn.ManifestList))
		for _, m := range sn.Manifests {
			names = append(names, filepath.Base(m.Path))
			for _, e := range m.Entries {
				names = append(names, filepath.Base(e.Path))
			}
		}
	}
	// Short keys and values ("id", a column "a") would match any text.
	for _, root := range []any{ft.meta, parsedOrNil(raw)} {
		for _, n := range Walk(root) {
			k := n.Path.Last()
			if len(k) >= 5 {
				names = append(names, keyNames(k)...)
			}
			if v := fmt.Sprint(n.Value); len(v) >= 4 && (k == "snapshot-id" || k == "parent-snapshot-id" || k == "name") {
				names = append(names, v)
			}
		}
	}
	return names
}

func parsedOrNil(raw []byte) any {
	v, _ := ParseJSON(raw)
	return v
}

// cols reads what a mutated metadata.json says about the events: its
// columns (the untouched ones if it has none), its graph and its uuid.
func (ft *fuzzTable) cols(raw []byte) (Columns, string, string) {
	m, err := ParseJSON(raw)
	if err != nil {
		return SchemaColumns(ft.meta), "", ""
	}
	cols := SchemaColumns(m)
	if len(cols) == 0 {
		cols = SchemaColumns(ft.meta)
	}
	u, _ := Get(m, Path{"table-uuid"})
	uuid, _ := u.(string)
	return cols, graphKey(m), uuid
}

func withMeta(meta any, fn func(root any)) ([]byte, error) {
	root := CloneJSON(meta)
	fn(root)
	return json.Marshal(root)
}
