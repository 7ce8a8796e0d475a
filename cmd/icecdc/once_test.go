package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runOnce runs icecdc run --once with args under ctx and returns its error
// and log lines; hang guards the test only (on main, a table that could
// not be read was retried for ever).
func runOnce(t *testing.T, ctx context.Context, args ...string) ([]map[string]any, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	var out, logs syncBuffer
	done := make(chan error, 1)
	go func() { done <- execute(ctx, append([]string{"run", "--once"}, args...), &out, &logs) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("run --once %v did not return; logs:\n%s", args, logs.String())
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil {
			lines = append(lines, l)
		}
	}
	return lines, out.String(), err
}

func withMsg(lines []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// TestRunOnceFailsOnUnreadableTable: under --once, a table that cannot
// be loaded ends the run with its error (exit 1, one line naming the
// table) instead of being retried for ever; so does a namespace pattern
// that matches no table.
func TestRunOnceFailsOnUnreadableTable(t *testing.T) {
	catalog := bookshopCatalog(t)
	for _, tc := range []struct{ table, want string }{
		{"bookshop.nope", "table bookshop.nope does not exist in sql catalog "},
		{"nowhere.*", "run --once: "},
	} {
		t.Run(tc.table, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "icecdc.yaml")
			writeTestFile(t, cfg, fmt.Sprintf("name: p\ncatalog: %s\ntables: [{name: '%s'}]\nsink: {type: stdout}\nstate: {path: %s}\n",
				catalog, tc.table, filepath.Join(t.TempDir(), "state.db")))
			_, _, err := runOnce(t, context.Background(), "-c", cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), strings.TrimSuffix(tc.table, ".*")) {
				t.Fatalf("run --once on %s: %v, want an error naming it", tc.table, err)
			}
		})
	}
}

// TestRunOnceInterrupted: a --once run stopped by a signal before every
// table reached its head did not do its job: exit 1, not 0.
func TestRunOnceInterrupted(t *testing.T) {
	cfg := writeConfig(t, "p", bookshopCatalog(t), "{type: stdout}", filepath.Join(t.TempDir(), "state.db"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, out, err := runOnce(t, ctx, "-c", cfg)
	if err == nil || !strings.Contains(err.Error(), "run --once: interrupted") || out != "" {
		t.Fatalf("interrupted run --once: %v (stdout %q), want the interruption as an error", err, out)
	}
	if code := run([]string{"run", "--once", "-c", cfg}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("run --once afterwards: exit %d", code)
	}
}

// TestRunLogsCommitsAndResume: the daemon logs one INFO line per delivered
// commit (table, snapshot, sequence number, events) and one when it
// resumes from a checkpoint (snapshot, sequence number, position).
func TestRunLogsCommitsAndResume(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := runCmd("demo", "--dir", dir); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	cfg := filepath.Join(dir, "icecdc.yaml")
	lines, _, err := runOnce(t, context.Background(), "-c", cfg)
	if err != nil {
		t.Fatal(err)
	}
	delivered := withMsg(lines, "commit delivered")
	events := 0
	for _, l := range delivered {
		if l["level"] != "INFO" || l["table"] != "bookshop.orders" || l["snapshot"] == nil || l["sequence_number"] == nil {
			t.Fatalf("commit line %v", l)
		}
		events += int(l["events"].(float64))
	}
	if len(delivered) != 6 || events != len(bookshopEvents) || len(withMsg(lines, "resuming from the checkpoint")) != 0 {
		t.Fatalf("%d commit lines with %d events, want 6 with %d, and no resume line:\n%v", len(delivered), events, len(bookshopEvents), lines)
	}
	last := delivered[len(delivered)-1]

	if _, errOut, code := runCmd("demo", "--dir", dir, "--commit", "update"); code != 0 {
		t.Fatalf("demo --commit update: %s", errOut)
	}
	lines, _, err = runOnce(t, context.Background(), "-c", cfg)
	if err != nil {
		t.Fatal(err)
	}
	resumed, delivered := withMsg(lines, "resuming from the checkpoint"), withMsg(lines, "commit delivered")
	if len(resumed) != 1 || resumed[0]["level"] != "INFO" || resumed[0]["snapshot"] != last["snapshot"] ||
		resumed[0]["sequence_number"] != last["sequence_number"] || resumed[0]["snapshot_done"] != true {
		t.Fatalf("resume lines %v, want one at snapshot %v", resumed, last["snapshot"])
	}
	if len(delivered) != 1 || delivered[0]["sequence_number"] != float64(7) || delivered[0]["events"] != float64(1) || delivered[0]["operation"] != "overwrite" {
		t.Fatalf("commit lines after the update %v, want one of sequence number 7 with 1 event", delivered)
	}
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
