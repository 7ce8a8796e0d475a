package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// TestDemoCommits: a demo directory is reused by a second demo, and
// --commit update and --commit delete add one commit each to its table,
// printing exactly that commit's events; changes over the table then
// shows exactly those new events, the replay of every snapshot matches
// the table's live rows (the commits keep row lineage), and the demo
// writes nothing outside its directory.
func TestDemoCommits(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := filepath.Join(t.TempDir(), "demo")
	out, errOut, code := runCmd("demo", "--dir", dir)
	if code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"icecdc run -c " + filepath.Join(dir, "icecdc.yaml"), "icecdc changes --catalog-uri file:" + filepath.Join(dir, "catalog.db"),
		"icecdc demo --dir " + dir + " --commit update"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo does not suggest %q:\n%s", want, out)
		}
	}

	out, errOut, code = runCmd("demo", "--dir", dir)
	if code != 0 || !strings.Contains(out, "exists") || len(parseLines(t, out)) != len(bookshopEvents) {
		t.Fatalf("second demo on %s: exit %d, stderr %q:\n%s", dir, code, errOut, out)
	}

	commit := func(kind string, want ...string) {
		t.Helper()
		out, errOut, code := runCmd("demo", "--dir", dir, "--commit", kind)
		if code != 0 {
			t.Fatalf("demo --commit %s: exit %d: %s", kind, code, errOut)
		}
		var got []string
		for _, l := range parseLines(t, out) {
			got = append(got, l.summary())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("demo --commit %s printed\n%s\nwant\n%s", kind, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// The story left orders 1 (shipped), 4, 5, 6; an update moves the
	// oldest order not delivered one step on, a delete removes the oldest.
	commit("update", "7 u 0 order=1 shipped->delivered")
	commit("delete", "8 d 0 order=1 delivered")

	env, err := scenario.NewEnv(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	opts := demoOptions(env)
	out, errOut, code = runCmd("changes", "--catalog-uri", opts.CatalogURI, "--warehouse", opts.Warehouse, "--table", opts.Table, "--from-seq", "6")
	var got []string
	for _, l := range parseLines(t, out) {
		got = append(got, l.summary())
	}
	if want := []string{"7 u 0 order=1 shipped->delivered", "8 d 0 order=1 delivered"}; code != 0 || !slices.Equal(got, want) {
		t.Fatalf("changes after the story: exit %d, stderr %q, events\n%s\nwant\n%s", code, errOut, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	checkDemoReplay(t, env, opts)

	entries, err := os.ReadDir(tmp)
	if err != nil || len(entries) > 0 {
		t.Errorf("the demo wrote into the temporary directory %s: %v %v", tmp, entries, err)
	}
	var outside []string
	filepath.Walk(filepath.Dir(dir), func(p string, _ os.FileInfo, _ error) error {
		if p != filepath.Dir(dir) && p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			outside = append(outside, p)
		}
		return nil
	})
	if len(outside) > 0 {
		t.Errorf("the demo wrote beside its directory: %v", outside)
	}
}

// TestDemoCommitMergeAndInsert: a merge commit updates one order and
// inserts one in a single snapshot, an insert adds the next order; both
// keep row lineage (the replay matches the live rows at every snapshot).
func TestDemoCommitMergeAndInsert(t *testing.T) {
	dir := t.TempDir()
	for _, kind := range []string{"merge", "insert"} {
		// The first --commit on an empty directory writes the story first.
		if _, errOut, code := runCmd("demo", "--dir", dir, "--commit", kind); code != 0 {
			t.Fatalf("demo --commit %s: exit %d: %s", kind, code, errOut)
		}
	}
	env, err := scenario.NewEnv(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	steps := checkDemoReplay(t, env, demoOptions(env))
	var got []string
	for _, st := range steps[len(steps)-2:] {
		for _, ev := range st.Events {
			got = append(got, ev.Op)
		}
	}
	if want := []string{"u", "c", "c"}; !slices.Equal(got, want) {
		t.Fatalf("merge and insert commits gave ops %v, want %v", got, want)
	}
	wantFail(t, []string{"demo", "--commit", "update"}, "demo: --commit needs --dir")
	wantFail(t, []string{"demo", "--dir", dir, "--commit", "upsert"}, `demo: --commit "upsert": want insert, update, delete, merge`)
}

func checkDemoReplay(t *testing.T, env *scenario.Env, opts source.Options) []replay.Step {
	t.Helper()
	ctx := context.Background()
	src, err := source.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tbl, err := env.LoadTable(ctx, demoTable)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := replay.Check(ctx, src, tbl)
	if err != nil {
		t.Fatalf("replay of the demo table: %v", err)
	}
	return steps
}

// TestDemoConfigServesStatus: the config demo --dir writes listens on
// loopback, so while a daemon runs it, icecdc status -c on the same file
// asks that daemon (its state file is locked) and /metrics, /healthz,
// /readyz and /status answer; it sets allowed_locations, so the daemon
// warns of nothing. The test moves the listener to a free port
// so it does not depend on 9464 being free on the machine.
func TestDemoConfigServesStatus(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	if out, errOut, code := runCmd("demo", "--dir", dir); code != 0 || !strings.Contains(out, "curl -s http://"+demoListen+"/status") {
		t.Fatalf("demo: exit %d, stderr %q:\n%s", code, errOut, out)
	}
	path := filepath.Join(dir, "icecdc.yaml")
	cfg, err := loadConfig(path)
	if err != nil {
		t.Fatalf("the demo's config: %v", err)
	}
	if cfg.HTTP.Listen != demoListen {
		t.Fatalf("the demo's config listens on %q, want %q", cfg.HTTP.Listen, demoListen)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	listen := freeAddr(t)
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), demoListen, listen, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "-c", path)
	d.waitFor(t, "ready", func() bool { return daemonPage(listen, "/readyz") == "ready\n" })
	for _, p := range []string{"/metrics", "/healthz", "/status"} {
		if page := daemonPage(listen, p); page == "" {
			t.Errorf("GET %s on the demo daemon: nothing", p)
		}
	}
	out, errOut, code := runCmd("status", "-c", path)
	if code != 0 || !strings.Contains(out, "bookshop.orders") {
		t.Errorf("icecdc status -c %s while the daemon runs: exit %d, stderr %q:\n%s", path, code, errOut, out)
	}
	d.stop(t)
	if strings.Contains(d.logs.String(), `"level":"WARN"`) {
		t.Errorf("the demo's config warns:\n%s", d.logs.String())
	}
}

// TestExampleConfigFirstRun: examples/icecdc.yaml, run as the README
// says (from the directory holding ./demo), delivers the demo's events
// with no warning: its warehouse is a path a location check reads and
// allowed_locations is set. The listener moves to a free port so the
// test does not depend on 9464 being free.
func TestExampleConfigFirstRun(t *testing.T) {
	raw, err := os.ReadFile("../../examples/icecdc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Chdir(tmp)
	if _, errOut, code := runCmd("demo", "--dir", "./demo"); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	cfg := strings.Replace(string(raw), "127.0.0.1:9464", freeAddr(t), 1)
	if cfg == string(raw) {
		t.Fatal("examples/icecdc.yaml no longer listens on 127.0.0.1:9464, which the README names")
	}
	if err := os.WriteFile("icecdc.yaml", []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logs, _, err := runOnce(t, context.Background(), "-c", "icecdc.yaml")
	if err != nil {
		t.Fatalf("run --once -c examples/icecdc.yaml: %v", err)
	}
	for _, l := range logs {
		if l["level"] != "INFO" {
			t.Errorf("the example's first run logs %v", l)
		}
	}
	events, err := os.ReadFile(filepath.Join(tmp, "events.jsonl"))
	if n := strings.Count(string(events), "\n"); err != nil || n != len(bookshopEvents) {
		t.Errorf("events.jsonl: %d lines (%v), want %d", n, err, len(bookshopEvents))
	}
}
