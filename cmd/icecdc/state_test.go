package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/kafka"
	"github.com/icecdc/icecdc/state"
)

// writeConfig writes an icecdc.yaml for pipeline name that follows
// bookshop.orders from its earliest snapshot with the given catalog and
// sink sections, keeping its state at statePath.
func writeConfig(t *testing.T, name, catalog, sink, statePath string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "icecdc.yaml")
	body := fmt.Sprintf(`name: %s
catalog: %s
tables: [{name: bookshop.orders, start: earliest}]
poll: {interval: 50ms}
sink: %s
state: {path: %s}
`, name, catalog, sink, statePath)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// noCatalog is a catalog section for commands that fail before they use it.
const noCatalog = "{type: sql, uri: 'file:/nonexistent/catalog.db'}"

// saveCheckpoints stores a checkpoint for each table of pipeline in the
// state file at path.
func saveCheckpoints(t *testing.T, path, pipeline string, tables ...string) {
	t.Helper()
	s, err := state.Open(path, state.Options{Pipeline: pipeline})
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		cp := cdc.Checkpoint{TableUUID: "u", SnapshotID: 1, Seq: 1000, Done: true}
		if err := s.Save(context.Background(), pipeline, table, cp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func storedTables(t *testing.T, path, pipeline string) []string {
	t.Helper()
	s, err := state.Open(path, state.Options{Pipeline: pipeline, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts, err := s.Tables(pipeline)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range ts {
		names = append(names, st.Table)
	}
	return names
}

// wantFail runs icecdc and wants exit 1 with one line on stderr that
// holds every part.
func wantFail(t *testing.T, args []string, parts ...string) {
	t.Helper()
	out, errOut, code := runCmd(args...)
	if code != 1 || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("icecdc %s: exit %d, want 1 with one line on stderr; stdout %q stderr %q", strings.Join(args, " "), code, out, errOut)
	}
	for _, p := range parts {
		if !strings.Contains(errOut, p) {
			t.Fatalf("stderr %q does not say %q", errOut, p)
		}
	}
}

// TestRunRefusesStateFile: a state file that would make every table start
// over is refused at start with one line that names it, whatever is
// wrong with it, and is left as it was.
func TestRunRefusesStateFile(t *testing.T) {
	for _, tc := range []struct {
		name  string
		make  func(t *testing.T, path string)
		parts []string
	}{
		{"0-byte file", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o600) },
			[]string{"the file is empty (0 bytes) but exists", "--adopt-state"}},
		{"truncated file", func(t *testing.T, path string) {
			saveCheckpoints(t, path, "shop-cdc", "bookshop.orders")
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:3*4096], 0o600)
		}, []string{"the file is truncated", "restore it from a backup"}},
		{"bit-flipped file", func(t *testing.T, path string) {
			saveCheckpoints(t, path, "shop-cdc", "bookshop.orders")
			b, _ := os.ReadFile(path)
			for _, meta := range []int{0, 4096} {
				b[meta+16] ^= 0xff // the magic of both meta pages
			}
			os.WriteFile(path, b, 0o600)
		}, []string{"header is damaged", "restore it from a backup"}},
		{"not a state file", func(t *testing.T, path string) { os.WriteFile(path, []byte("SQLite format 3\x00"), 0o600) },
			[]string{"not an icecdc state file"}},
		{"another pipeline's file", func(t *testing.T, path string) { saveCheckpoints(t, path, "old-name", "bookshop.orders") },
			[]string{`holds checkpoints of pipeline "old-name", not "shop-cdc": was the pipeline renamed?`, "--adopt-state"}},
		{"an existing file without checkpoints", func(t *testing.T, path string) {
			s, err := state.Open(path, state.Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
		}, []string{"holds no checkpoints and was not created for pipeline \"shop-cdc\"", "--adopt-state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			tc.make(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg := writeConfig(t, "shop-cdc", noCatalog, "{type: stdout}", path)
			wantFail(t, []string{"run", "-c", cfg}, append([]string{"icecdc: state " + path + ": "}, tc.parts...)...)
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatal("the refused state file was changed")
			}
		})
	}
}

// syncBuffer is a bytes.Buffer that the daemon writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// daemon is `icecdc run` in this process; stop cancels it as a signal
// would.
type daemon struct {
	out, logs syncBuffer
	cancel    context.CancelFunc
	done      chan error
}

func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{cancel: cancel, done: make(chan error, 1)}
	go func() { d.done <- execute(ctx, append([]string{"run"}, args...), &d.out, &d.logs) }()
	t.Cleanup(func() { d.stop(t) })
	return d
}

// waitFor polls cond until it holds, failing the test after a while or
// when the daemon ends early.
func (d *daemon) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("the daemon ended (%v) before %s; logs:\n%s", err, what, d.logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; logs:\n%s", what, d.logs.String())
		}
	}
}

func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cancel()
	if err := <-d.done; err != nil {
		t.Errorf("icecdc run: %v", err)
	}
	d.done <- nil
}

// logLines decodes the daemon's JSON log lines whose msg is msg.
func (d *daemon) logLines(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(d.logs.String()))
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// bookshopCatalog builds the demo table and returns its catalog section.
func bookshopCatalog(t *testing.T) string {
	t.Helper()
	opts, _, err := buildBookshop(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", opts.CatalogName, opts.CatalogURI, opts.Warehouse)
}

// TestRunAdoptState: with --adopt-state, another pipeline's state file
// is accepted with a warning, every table starts from its configured
// start, and the file is the pipeline's from then on.
func TestRunAdoptState(t *testing.T) {
	catalog := bookshopCatalog(t)
	path := filepath.Join(t.TempDir(), "state.db")
	saveCheckpoints(t, path, "old-name", "bookshop.orders")
	cfg := writeConfig(t, "shop-cdc", catalog, "{type: stdout}", path)

	d := startDaemon(t, "-c", cfg, "--adopt-state")
	d.waitFor(t, "the whole history", func() bool { return len(parseLines(t, d.out.String())) == len(bookshopEvents) })
	d.stop(t)
	warned := d.logLines("--adopt-state: the state file held no checkpoints of this pipeline and is now its own; every table starts from its configured start")
	if len(warned) != 1 || warned[0]["level"] != "WARN" || fmt.Sprint(warned[0]["checkpoints_of"]) != "[old-name]" {
		t.Fatalf("adoption logged as %v; logs:\n%s", warned, d.logs.String())
	}
	if got := storedTables(t, path, "shop-cdc"); len(got) != 1 || got[0] != "bookshop.orders" {
		t.Fatalf("stored tables of shop-cdc: %v", got)
	}
	if got := storedTables(t, path, "old-name"); len(got) != 1 {
		t.Fatalf("the old pipeline's checkpoints: %v", got)
	}
}

// TestRunWarnsStartWithOtherCheckpoints: a table without a checkpoint
// starts from its configured start. In a new state file that is routine
// (info); when the file holds the pipeline's other tables' checkpoints it
// is logged as a warning naming them.
func TestRunWarnsStartWithOtherCheckpoints(t *testing.T) {
	catalog := bookshopCatalog(t)
	for _, tc := range []struct {
		name, level string
		others      []string
	}{
		{"new state file", "INFO", nil},
		{"other tables checkpointed", "WARN", []string{"bookshop.books", "bookshop.returns"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if tc.others != nil {
				saveCheckpoints(t, path, "shop-cdc", tc.others...)
			}
			cfg := writeConfig(t, "shop-cdc", catalog, "{type: stdout}", path)
			args := []string{"-c", cfg}
			if tc.others != nil {
				// Checkpoints of tables the configuration does not list and
				// none of one it does: a rename or a damaged key, refused
				// unless the operator says to go on.
				wantFail(t, []string{"run", "-c", cfg}, "holds checkpoints of \"bookshop.books\", \"bookshop.returns\", which the configuration does not list, and none of bookshop.orders")
				args = append(args, "--adopt-state")
			}
			d := startDaemon(t, args...)
			d.waitFor(t, "the start to be logged", func() bool { return len(d.logLines("no checkpoint: starting")) > 0 })
			d.stop(t)
			l := d.logLines("no checkpoint: starting")[0]
			why, _ := l["why"].(string)
			named := tc.others == nil && why == "" || tc.others != nil && strings.Contains(why, "("+strings.Join(tc.others, ", ")+")")
			if l["level"] != tc.level || l["table"] != "bookshop.orders" || !named {
				t.Fatalf("start logged as %v; want level %s naming %v", l, tc.level, tc.others)
			}
		})
	}
}

func TestReset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	saveCheckpoints(t, path, "shop-cdc", "bookshop.orders", "bookshop.books")
	cfg := writeConfig(t, "shop-cdc", noCatalog, "{type: stdout}", path)

	wantFail(t, []string{"reset", "-c", cfg}, "give --table NAME or --all")
	wantFail(t, []string{"reset", "-c", cfg, "--all", "--table", "bookshop.orders"}, "give --table NAME or --all")
	wantFail(t, []string{"reset", "-c", cfg, "--table", "bookshop.nope"}, "reset shop-cdc/bookshop.nope: no stored state")

	out, errOut, code := runCmd("reset", "-c", cfg, "--table", "bookshop.orders")
	if code != 0 || out != "reset shop-cdc/bookshop.orders: its start position (earliest) applies at the next run\n" {
		t.Fatalf("reset --table: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if got := storedTables(t, path, "shop-cdc"); len(got) != 1 || got[0] != "bookshop.books" {
		t.Fatalf("after reset --table: %v", got)
	}
	saveCheckpoints(t, path, "shop-cdc", "bookshop.orders")
	out, errOut, code = runCmd("reset", "-c", cfg, "--all")
	if want := "reset shop-cdc/bookshop.books: forgotten (the table is not in the configuration)\n" +
		"reset shop-cdc/bookshop.orders: its start position (earliest) applies at the next run\n"; code != 0 || out != want {
		t.Fatalf("reset --all: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	if got := storedTables(t, path, "shop-cdc"); len(got) != 0 {
		t.Fatalf("after reset --all: %v", got)
	}
	wantFail(t, []string{"reset", "-c", cfg, "--all"}, "reset shop-cdc: no stored state")
	// The file is still the pipeline's: the daemon starts on it.
	s, err := state.Open(path, state.Options{Pipeline: "shop-cdc"})
	if err != nil {
		t.Fatalf("after reset --all: %v", err)
	}
	s.Close()

	// Reset refuses a state file that is not the pipeline's, and does
	// not create one.
	foreign := writeConfig(t, "new-name", noCatalog, "{type: stdout}", path)
	wantFail(t, []string{"reset", "-c", foreign, "--all"}, "state "+path+": was made for pipeline \"shop-cdc\", not \"new-name\"")
	missing := filepath.Join(t.TempDir(), "state.db")
	wantFail(t, []string{"reset", "-c", writeConfig(t, "shop-cdc", noCatalog, "{type: stdout}", missing), "--all"},
		"no stored state: state "+missing+" does not exist")
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("reset created a state file")
	}
}

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Under exactly-once, reset first deletes the Kafka checkpoint record;
// when Kafka cannot be reached it fails and leaves the state file alone.
func TestResetKafkaUnreachable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	saveCheckpoints(t, path, "shop-cdc", "bookshop.orders")
	sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], delivery: exactly-once}}", closedAddr(t))
	cfg := writeConfig(t, "shop-cdc", noCatalog, sink, path)
	wantFail(t, []string{"reset", "-c", cfg, "--table", "bookshop.orders", "--timeout", "3s"},
		"icecdc: reset shop-cdc: forget checkpoints in icecdc.checkpoints", "the state file was left as it is")
	if got := storedTables(t, path, "shop-cdc"); len(got) != 1 {
		t.Fatalf("a failed reset changed the state file: %v", got)
	}
}

// readCommitted reads every record of topic up to its end as a
// read_committed consumer; control records (transaction markers) count
// towards the end but are not returned.
func readCommitted(ctx context.Context, brokers []string, topic string) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	var out []*kgo.Record
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := fs.Err(); err != nil {
			return nil, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			if end, ok := remaining[r.Partition]; ok && r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out, nil
}

// TestResetExactlyOnce: under exactly-once the Kafka checkpoint record is
// the position of record, so a reset that cleared only the state file
// would change nothing. Reset deletes it too, and the restarted daemon
// starts the table from its configured start: the whole history again.
func TestResetExactlyOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	path := filepath.Join(t.TempDir(), "state.db")
	sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], delivery: exactly-once, topic_partitions: 1}}", brokers[0])
	cfg := writeConfig(t, "shop-cdc", bookshopCatalog(t), sink, path)
	const topic = "icecdc.bookshop.orders"
	events := func() int {
		recs, err := readCommitted(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range recs {
			if r.Value != nil { // not a tombstone
				n++
			}
		}
		return n
	}
	checkpoint := func() *kgo.Record {
		recs, err := readCommitted(ctx, brokers, kafka.DefaultCheckpointTopic)
		if err != nil {
			t.Fatal(err)
		}
		var last *kgo.Record
		for _, r := range recs {
			if string(r.Key) == "shop-cdc/bookshop.orders" {
				last = r
			}
		}
		return last
	}

	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "the whole history in kafka", func() bool { return events() == len(bookshopEvents) })
	d.stop(t)
	var cp cdc.Checkpoint
	if r := checkpoint(); r == nil || json.Unmarshal(r.Value, &cp) != nil || !cp.Done || cp.Seq != 6 {
		t.Fatalf("kafka checkpoint after the first run: %v", r)
	}

	out, errOut, code := runCmd("reset", "-c", cfg, "--table", "bookshop.orders")
	want := "reset shop-cdc/bookshop.orders: deleted its checkpoint record in kafka topic icecdc.checkpoints\n" +
		"reset shop-cdc/bookshop.orders: its start position (earliest) applies at the next run\n"
	if code != 0 || out != want {
		t.Fatalf("reset: exit %d, stdout %q, stderr %q; want %q", code, out, errOut, want)
	}
	if r := checkpoint(); r == nil || r.Value != nil {
		t.Fatalf("kafka checkpoint after reset: %v; want a tombstone", r)
	}
	if got := storedTables(t, path, "shop-cdc"); len(got) != 0 {
		t.Fatalf("state file after reset: %v", got)
	}

	d = startDaemon(t, "-c", cfg)
	d.waitFor(t, "the history again", func() bool { return events() == 2*len(bookshopEvents) })
	d.stop(t)
	if n := events(); n != 2*len(bookshopEvents) {
		t.Fatalf("%d events after the restart, want the history twice (%d)", n, 2*len(bookshopEvents))
	}
	if r := checkpoint(); r == nil || json.Unmarshal(r.Value, &cp) != nil || !cp.Done || cp.Seq != 6 {
		t.Fatalf("kafka checkpoint after the second run: %v", r)
	}
}

// TestRunTightensStateFile: a state file other users could read is made
// the owner's only at start, with one warning saying what it was.
func TestRunTightensStateFile(t *testing.T) {
	statePath := filepath.Join(t.TempDir(), "state.db")
	saveCheckpoints(t, statePath, "p")
	if err := os.Chmod(statePath, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "p", bookshopCatalog(t), "{type: stdout}", statePath)
	var out, logs bytes.Buffer
	if err := execute(context.Background(), []string{"run", "-c", cfg, "--once"}, &out, &logs); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(statePath); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	want := `"level":"WARN","msg":"the state file was readable by other users; it is now the owner's only","state":"` + statePath + `","mode":"0644","now":"0600"`
	if n := strings.Count(logs.String(), want); n != 1 {
		t.Fatalf("%d warnings %s, want 1; log:\n%s", n, want, logs.String())
	}
}
