package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// demoDaemonConfig makes the demo in a temporary directory and returns
// its config, moved to a free port, and that port.
func demoDaemonConfig(t *testing.T) (path, listen string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "demo")
	if _, errOut, code := runCmd("demo", "--dir", dir); code != 0 {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	path = filepath.Join(dir, "icecdc.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	listen = freeAddr(t)
	if err := os.WriteFile(path, []byte(strings.Replace(string(raw), demoListen, listen, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, listen
}

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// checkStatusJSON checks that every key of a /status answer is
// snake_case and that no time is Go's zero time.
func checkStatusJSON(t *testing.T, where, body string) []map[string]any {
	t.Helper()
	var rows []map[string]any
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		t.Fatalf("%s: %v: %s", where, err, body)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if !snakeCase.MatchString(k) {
					t.Errorf("%s: key %s%s is not snake_case: %s", where, path, k, body)
				}
				walk(path+k+".", x)
			}
		case []any:
			for _, x := range v {
				walk(path, x)
			}
		}
	}
	walk("", rows)
	if strings.Contains(body, "0001-01-01") {
		t.Errorf("%s shows Go's zero time: %s", where, body)
	}
	return rows
}

func num(m map[string]any, path ...string) float64 {
	var v any = m
	for _, p := range path {
		mm, _ := v.(map[string]any)
		v = mm[p]
	}
	f, _ := v.(float64)
	return f
}

// TestStatusShape: /status and `icecdc status -o json` give the same
// snake_case shape with the head and the lag; a table without a
// checkpoint has none (no zero time); the lag counts the commits not
// delivered.
func TestStatusShape(t *testing.T) {
	path, listen := demoDaemonConfig(t)

	// Never run: no checkpoint, the head and every snapshot behind.
	out, errOut, code := runCmd("status", "-c", path, "-o", "json")
	if code != 0 {
		t.Fatalf("status -o json before the first run: exit %d: %s", code, errOut)
	}
	rows := checkStatusJSON(t, "status -o json", out)
	if len(rows) != 1 || rows[0]["table"] != "bookshop.orders" || rows[0]["checkpoint"] != nil || rows[0]["saved_at"] != nil {
		t.Fatalf("status -o json before the first run: want one table without a checkpoint: %s", out)
	}
	headSeq := num(rows[0], "head", "sequence_number")
	if headSeq < 1 || num(rows[0], "lag", "snapshots_behind") != headSeq {
		t.Fatalf("status -o json before the first run: want the head and %v snapshots behind: %s", headSeq, out)
	}

	d := startDaemon(t, "-c", path)
	caughtUp := func(body string) bool {
		var rows []map[string]any
		return json.Unmarshal([]byte(body), &rows) == nil && len(rows) == 1 &&
			num(rows[0], "checkpoint", "sequence_number") == headSeq && rows[0]["lag"] != nil
	}
	d.waitFor(t, "the checkpoint at the head", func() bool { return caughtUp(daemonPage(listen, "/status")) })
	body := daemonPage(listen, "/status")
	rows = checkStatusJSON(t, "/status", body)
	r := rows[0]
	if num(r, "head", "sequence_number") != headSeq || num(r, "lag", "snapshots_behind") != 0 || num(r, "lag", "seconds_behind") != 0 ||
		r["saved_at"] == nil {
		t.Fatalf("/status caught up: want the head at %v, nothing behind, saved_at: %s", headSeq, body)
	}
	if h, _ := r["health"].(map[string]any); h["state"] != "ok" {
		t.Fatalf("/status: health %v, want ok: %s", r["health"], body)
	}
	out, errOut, code = runCmd("status", "-c", path, "-o", "json")
	if code != 0 {
		t.Fatalf("status -o json with the daemon: exit %d: %s", code, errOut)
	}
	rows = checkStatusJSON(t, "status -o json", out)
	if len(rows) != 1 || num(rows[0], "checkpoint", "sequence_number") != headSeq || rows[0]["health"] == nil {
		t.Fatalf("status -o json with the daemon: want the daemon's checkpoint and health: %s", out)
	}
	d.stop(t)

	// A commit the daemon did not see: one snapshot behind.
	if _, errOut, code := runCmd("demo", "--dir", filepath.Dir(path), "--commit", "insert"); code != 0 {
		t.Fatalf("demo --commit: exit %d: %s", code, errOut)
	}
	out, errOut, code = runCmd("status", "-c", path, "-o", "json")
	rows = checkStatusJSON(t, "status -o json", out)
	if code != 0 || num(rows[0], "lag", "snapshots_behind") != 1 || num(rows[0], "head", "sequence_number") != headSeq+1 {
		t.Fatalf("status -o json after a commit: exit %d %s, want one snapshot behind: %s", code, errOut, out)
	}
	out, _, code = runCmd("status", "-c", path)
	if code != 0 || !strings.HasPrefix(out, "TABLE ") || !strings.Contains(out, "bookshop.orders") {
		t.Fatalf("status: exit %d:\n%s", code, out)
	}
	if _, errOut, code := runCmd("status", "-c", path, "-o", "yaml"); code != 2 || !strings.Contains(errOut, "want table or json") {
		t.Fatalf("status -o yaml: exit %d %q, want 2 naming the forms", code, errOut)
	}
}
