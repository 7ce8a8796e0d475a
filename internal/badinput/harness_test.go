package badinput

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/source"
)

const (
	// memoryBudget is the peak RSS a case may reach, whatever it does.
	memoryBudget = 256 << 20
	// killRSS stops a case that is running away with the machine's memory.
	killRSS = 1 << 30
	// addressSpace caps a case's virtual memory: the binary reserves about
	// 1.2 GiB of address space on start, so an allocation of 2 GiB from an
	// untrusted size fails even if it would never be touched.
	addressSpace = 3 << 30
	// caseTimeout ends a case that hangs; a correct run takes well under
	// a second.
	caseTimeout = 10 * time.Second
	// daemonStop is how long `icecdc run` may keep running on a corrupt
	// state file before it is stopped and counted as having accepted it.
	daemonStop = 3 * time.Second
	// maxOutput bounds what a case may print: the untouched table yields
	// a few kilobytes.
	maxOutput = 32 << 20
	// midIdx is the snapshot (index into Story) the daemon's state file
	// is checkpointed at.
	midIdx = 2
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeFuzzTable()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// icecdcBinary builds ./cmd/icecdc once per test process.
func icecdcBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		if binDir, buildErr = os.MkdirTemp("", "icecdc-badinput-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "icecdc")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/icecdc")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/icecdc: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = up
	}
}

// slot is one private copy of the base table. A worker owns one slot and
// mutates files in it in place, restoring them after each case, so that
// the absolute paths inside the table stay valid.
type slot struct {
	root    string
	bin     string
	base    *Base
	metaRaw []byte
	meta    any
	cols    Columns // of the untouched metadata's current schema
	truth   []Event // the events of the untouched table

	// For state-file cases: the daemon's state checkpointed after snapshot
	// midIdx by pipeline "icecdc", and the same by pipeline "other".
	stateSeed, foreignSeed []byte
	stateAt                stateOffsets // the live records in stateSeed
	daemonTruth            []Event      // what a resume from stateSeed delivers
	secretText             string       // a plain file outside the warehouse
}

func newSlot(ctx context.Context, root, bin string) (*slot, error) {
	base, err := BuildBase(ctx, filepath.Join(root, "table"))
	if err != nil {
		return nil, err
	}
	s := &slot{root: root, bin: bin, base: base}
	if s.metaRaw, err = os.ReadFile(base.Metadata); err != nil {
		return nil, err
	}
	if s.meta, err = ParseJSON(s.metaRaw); err != nil {
		return nil, err
	}
	res, err := Run(bin, []string{"changes", "--metadata", base.Metadata}, root, Limits{Timeout: time.Minute})
	if err != nil {
		return nil, err
	}
	if res.Exit != 0 {
		return nil, fmt.Errorf("changes on the untouched table: exit %d: %s", res.Exit, res.Stderr)
	}
	s.cols = SchemaColumns(s.meta)
	if s.truth, err = ParseEvents(res.Stdout, s.cols); err != nil {
		return nil, err
	}
	if len(s.truth) < 8 {
		return nil, fmt.Errorf("the untouched table yields only %d events", len(s.truth))
	}
	// The truth must itself satisfy the contract: replaying it gives
	// live(S) at every snapshot.
	src, err := source.Open(ctx, source.Options{MetadataPath: base.Metadata})
	if err != nil {
		return nil, err
	}
	if _, err := replay.Check(ctx, src, base.Table); err != nil {
		return nil, fmt.Errorf("the untouched table fails the contract check: %w", err)
	}
	s.secretText = filepath.Join(root, "outside", "secret.txt")
	os.MkdirAll(filepath.Dir(s.secretText), 0o755)
	if err := os.WriteFile(s.secretText, []byte(Secret+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := s.makeStateSeeds(); err != nil {
		return nil, err
	}
	return s, nil
}

// makeStateSeeds runs the daemon on the table as it was after snapshot
// midIdx until it delivered that history, and keeps its state file.
func (s *slot) makeStateSeeds() error {
	mid, err := s.metadataAt(s.base.Snapshots[midIdx].ID)
	if err != nil {
		return err
	}
	keep := map[int64]bool{}
	for i := range s.base.Snapshots[:midIdx+1] {
		keep[s.base.Snapshots[i].ID] = true
	}
	upTo := len(OnlySnapshots(s.truth, keep))
	for _, pipe := range []string{"icecdc", "other"} {
		dir := filepath.Join(s.root, "seed-"+pipe)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cfg, sink, state := writeDaemonConfig(dir, pipe, mid)
		res, err := Run(s.bin, []string{"run", "-c", cfg}, dir, Limits{
			Timeout: time.Minute, StopWhen: func() bool { return countLines(sink) >= upTo },
		})
		if err != nil {
			return err
		}
		if res.Exit != 0 || !res.Stopped {
			return fmt.Errorf("seeding the state (%s): exit %d: %s", pipe, res.Exit, res.Stderr)
		}
		b, err := os.ReadFile(state)
		if err != nil {
			return err
		}
		if pipe == "icecdc" {
			s.stateSeed = b
		} else {
			s.foreignSeed = b
		}
	}
	var err2 error
	if s.stateAt, err2 = liveOffsets(s.stateSeed, "icecdc", "bookshop.orders"); err2 != nil {
		return fmt.Errorf("state seed: %w", err2)
	}
	after := map[int64]bool{}
	for _, sn := range s.base.Snapshots[midIdx+1:] {
		after[sn.ID] = true
	}
	s.daemonTruth = OnlySnapshots(s.truth, after)
	return nil
}

// metadataAt finds the table's metadata file whose current snapshot is id.
func (s *slot) metadataAt(id int64) (string, error) {
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(s.base.Metadata), "*.metadata.json"))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var md struct {
			Current int64 `json:"current-snapshot-id"`
		}
		if json.Unmarshal(raw, &md) == nil && md.Current == id {
			return f, nil
		}
	}
	return "", fmt.Errorf("no metadata file with current snapshot %d", id)
}

// writeDaemonConfig writes dir/icecdc.yaml following the table at
// metadata into dir/events.jsonl with its state in dir/state.db.
func writeDaemonConfig(dir, pipeline, metadata string) (cfg, sink, state string) {
	cfg, sink, state = filepath.Join(dir, "icecdc.yaml"), filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "state.db")
	y := fmt.Sprintf(`name: %s
tables:
  - name: bookshop.orders
    metadata: %s
    start: earliest
poll: {interval: 50ms}
sink: {type: file, file: {path: %s}}
state: {path: %s}
`, pipeline, metadata, sink, state)
	os.WriteFile(cfg, []byte(y), 0o644)
	return cfg, sink, state
}

func countLines(p string) int {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// kind is how a case runs the binary.
type kind int

const (
	kindChanges kind = iota // icecdc changes --metadata PATH
	kindRun                 // icecdc run -c CFG, stopped after daemonStop
	kindStatus              // icecdc status -c CFG
	// kindDaemon: a table corruption under the daemon, started afresh
	// (start: earliest): icecdc run --once -c CFG, stopped once it logs the
	// table as down, then icecdc status -c CFG
	kindDaemon
)

// tcase is one corruption. prep applies it to a slot (in place, with
// restores, or into the case's own directory) and says what an error
// must name.
type tcase struct {
	name    string
	group   string // for the tally: metadata, graph, manifest-list, manifest, puffin, parquet, daemon, state
	kind    kind
	control bool // an unmutated or identity-rewritten input: must be harmless
	prep    func(w *work) error
}

// work is one case in progress on a slot.
type work struct {
	s      *slot
	dir    string
	meta   string   // the metadata.json to run on
	names  []string // an error line must contain one of these
	must   []string // and all of these
	expect []Event  // the right answer for an exit 0
	cols   Columns  // the columns of the schema run on
	cfg    string   // kindRun / kindStatus / kindDaemon
	sink   string
	// a state-file case: the daemon must refuse to start, unless the
	// corruption is absorbed by bbolt and the resume is exact
	corruptState, absorbed bool

	restores []func() error
}

func (w *work) name(n ...string) { w.names = append(w.names, n...) }

// replace writes b over path and restores the original after the case.
func (w *work) replace(path string, b []byte) error {
	orig, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	w.restores = append(w.restores, func() error { return os.WriteFile(path, orig, 0o644) })
	return os.WriteFile(path, b, 0o644)
}

// sparse makes path a file of size bytes of zeros without using disk.
func (w *work) sparse(path string, size int64) error {
	if err := w.replace(path, nil); err != nil {
		return err
	}
	return os.Truncate(path, size)
}

func (w *work) restore() error {
	var first error
	for i := len(w.restores) - 1; i >= 0; i-- {
		if err := w.restores[i](); err != nil && first == nil {
			first = err
		}
	}
	w.restores = nil
	return first
}

// setupSlots builds the binary and n slots concurrently.
func setupSlots(t *testing.T, n int) []*slot {
	t.Helper()
	root := t.TempDir()
	bin := icecdcBinary(t)
	slots := make([]*slot, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots[i], errs[i] = newSlot(context.Background(), filepath.Join(root, fmt.Sprintf("slot%d", i)), bin)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
	}
	return slots
}
