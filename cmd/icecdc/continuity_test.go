package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icecdc/icecdc/internal/scenario"
)

// editMetadata writes a copy of the metadata file beside it, changed by
// edit, and returns the copy's path. Snapshots are addressed by their
// sequence number.
func editMetadata(t *testing.T, meta string, edit func(m map[string]any, bySeq map[int64]map[string]any)) string {
	t.Helper()
	meta = strings.TrimPrefix(meta, "file://")
	raw, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // snapshot ids do not fit a float64
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	bySeq := map[int64]map[string]any{}
	for _, s := range m["snapshots"].([]any) {
		s := s.(map[string]any)
		seq, err := s["sequence-number"].(json.Number).Int64()
		if err != nil {
			t.Fatal(err)
		}
		bySeq[seq] = s
	}
	edit(m, bySeq)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(filepath.Dir(meta), "99999-edited.metadata.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// expire removes the snapshots with these sequence numbers, as
// expire_snapshots does: their children keep pointing at them.
func expire(seqs ...int64) func(map[string]any, map[int64]map[string]any) {
	return func(m map[string]any, bySeq map[int64]map[string]any) {
		gone := map[any]bool{}
		for _, q := range seqs {
			gone[bySeq[q]["snapshot-id"]] = true
		}
		var kept []any
		for _, s := range m["snapshots"].([]any) {
			if !gone[s.(map[string]any)["snapshot-id"]] {
				kept = append(kept, s)
			}
		}
		m["snapshots"] = kept
		var log []any
		for _, e := range m["snapshot-log"].([]any) {
			if !gone[e.(map[string]any)["snapshot-id"]] {
				log = append(log, e)
			}
		}
		m["snapshot-log"] = log
	}
}

// eventsAbove is the bookshop story's events with from < seq <= to.
func eventsAbove(from, to int64) []string {
	var out []string
	for _, e := range bookshopEvents {
		var seq int64
		fmt.Sscan(e, &seq)
		if seq > from && (to == 0 || seq <= to) {
			out = append(out, e)
		}
	}
	return out
}

// TestChangesContinuity: a range of changes is printed whole or not at all.
// Whatever the metadata's snapshot graph says, exit 0 means every commit of
// the range was printed (docs/delivery.md: history loss is never papered over).
func TestChangesContinuity(t *testing.T) {
	_, _, meta := bookshop(t)
	snapID := func(seq int64) string {
		var id string
		editMetadata(t, meta, func(_ map[string]any, bySeq map[int64]map[string]any) {
			id = bySeq[seq]["snapshot-id"].(json.Number).String()
		})
		return id
	}
	cases := []struct {
		name  string
		edit  func(map[string]any, map[int64]map[string]any)
		args  []string
		fails []string // parts of the one-line error; nil: exit 0 with eventsAbove(from, to)
		from  int64
		to    int64
	}{
		{name: "middle snapshot expired, range starts below it", edit: expire(3), args: []string{"--from-seq", "2"},
			fails: []string{"snapshot " + snapID(4), "was expired", "between sequence number 2 and 4"}},
		{name: "middle snapshot expired, range ends at it", edit: expire(3), args: []string{"--from-seq", "1", "--to-seq", "3"},
			fails: []string{"was expired"}},
		{name: "middle snapshot expired, whole history", edit: expire(3), fails: []string{"was expired"}},
		{name: "middle snapshot expired, range starts at it", edit: expire(3), args: []string{"--from-seq", "3"}, from: 3},
		{name: "oldest snapshots expired, whole history", edit: expire(1, 2), fails: []string{"snapshot " + snapID(3), "was expired", "--from-seq 2 prints the retained history"}},
		// The parent's deletes come from the child's own manifest list.
		{name: "oldest snapshot expired, retained history", edit: expire(1), args: []string{"--from-seq", "1"}, from: 1},
		{name: "update after an expired delete", edit: expire(1, 2), args: []string{"--from-seq", "2"}, from: 2},
		{name: "delete after an expired compaction", edit: expire(1, 2, 3, 4, 5), args: []string{"--from-seq", "5"}, from: 5},
		{name: "parent cycle", edit: func(_ map[string]any, s map[int64]map[string]any) { s[1]["parent-snapshot-id"] = s[4]["snapshot-id"] },
			fails: []string{"cycle", "parent-snapshot-id"}},
		{name: "self parent", edit: func(_ map[string]any, s map[int64]map[string]any) { s[3]["parent-snapshot-id"] = s[3]["snapshot-id"] },
			fails: []string{"cycle", snapID(3)}},
		{name: "repeated sequence number", edit: func(_ map[string]any, s map[int64]map[string]any) { s[4]["sequence-number"] = 3 },
			fails: []string{"snapshot " + snapID(4), "must increase"}},
		{name: "decreasing sequence number", edit: func(_ map[string]any, s map[int64]map[string]any) { s[5]["sequence-number"] = 2 },
			fails: []string{"snapshot " + snapID(5), "must increase"}},
		{name: "negative sequence number", edit: func(_ map[string]any, s map[int64]map[string]any) { s[2]["sequence-number"] = -1 },
			fails: []string{"snapshot " + snapID(2), "negative"}},
		{name: "range past the head", args: []string{"--from-seq", "99"}, fails: []string{"--from-seq 99", "past the branch head", "sequence number 6"}},
		{name: "range ends past the head", args: []string{"--from-seq", "2", "--to-seq", "99"}, fails: []string{"--to-seq 99", "past the branch head"}},
		{name: "untouched range", args: []string{"--from-seq", "2", "--to-seq", "4"}, from: 2, to: 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := strings.TrimPrefix(meta, "file://")
			if c.edit != nil {
				path = editMetadata(t, meta, c.edit)
			}
			args := append([]string{"--metadata", path}, c.args...)
			if c.fails != nil {
				failsWith(t, args, c.fails...)
				return
			}
			out, errOut, code := runCmd(append([]string{"changes"}, args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got []string
			for _, l := range parseLines(t, out) {
				got = append(got, l.summary())
			}
			if want := eventsAbove(c.from, c.to); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestRunAndStatusOnParentCycle: a parent-snapshot-id cycle made the
// snapshot walk loop without bound (`changes` reached 19 GB; `run` and
// `status` grew until killed). The daemon follows two tables, a healthy one
// and one whose metadata has a cycle: the cyclic table stops at once (not
// retried) with one log line naming the snapshot the chain loops back to,
// the healthy table delivers its whole history meanwhile, the daemon's
// exit error names the cyclic table in one line, and `icecdc status`, with
// the daemon running and without it, returns promptly showing the problem;
// all of it with a bounded heap.
func TestRunAndStatusOnParentCycle(t *testing.T) {
	_, catArgs, meta := bookshop(t)
	catalog := fmt.Sprintf("{type: sql, uri: '%s', warehouse: '%s'}", catArgs[3], catArgs[5])
	ids := map[int64]string{}
	editMetadata(t, meta, func(_ map[string]any, bySeq map[int64]map[string]any) {
		for q, s := range bySeq {
			ids[q] = s["snapshot-id"].(json.Number).String()
		}
	})
	for _, c := range []struct {
		name  string
		edit  func(map[string]any, map[int64]map[string]any)
		loops string // the snapshot the chain loops back to
	}{
		{"cycle 1->4->3->2->1", func(_ map[string]any, s map[int64]map[string]any) { s[1]["parent-snapshot-id"] = s[4]["snapshot-id"] }, ids[4]},
		{"self parent", func(_ map[string]any, s map[int64]map[string]any) { s[3]["parent-snapshot-id"] = s[3]["snapshot-id"] }, ids[3]},
	} {
		t.Run(c.name, func(t *testing.T) {
			edited := editMetadata(t, meta, c.edit)
			tmp := t.TempDir()
			sink, listen := filepath.Join(tmp, "events.jsonl"), freeAddr(t)
			cfg := filepath.Join(tmp, "icecdc.yaml")
			body := fmt.Sprintf(`name: p
catalog: %s
tables:
  - {name: bookshop.orders, start: earliest}
  - {name: cyclic.orders, metadata: '%s', start: earliest}
poll: {interval: 50ms}
sink: {type: file, file: {path: '%s'}}
state: {path: '%s'}
http: {listen: '%s'}
`, catalog, edited, sink, filepath.Join(tmp, "state.db"), listen)
			if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			heap := scenario.HeapPeak()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logs syncBuffer
			done := make(chan error, 1)
			go func() { done <- execute(ctx, []string{"run", "-c", cfg}, io.Discard, &logs) }()
			stopped := func() []map[string]any {
				var out []map[string]any
				for _, l := range strings.Split(logs.String(), "\n") {
					var m map[string]any
					if json.Unmarshal([]byte(l), &m) == nil && m["table"] == "cyclic.orders" && m["level"] != "INFO" {
						out = append(out, m)
					}
				}
				return out
			}
			deadline := time.Now().Add(60 * time.Second)
			for len(stopped()) == 0 || countLines(sink) < len(bookshopEvents) {
				select {
				case err := <-done:
					t.Fatalf("the daemon ended (%v); logs:\n%s", err, logs.String())
				case <-time.After(20 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatalf("no stop of the cyclic table, or not the healthy table's %d events, within 60s; logs:\n%s", len(bookshopEvents), logs.String())
				}
			}
			time.Sleep(200 * time.Millisecond) // room for a retry or a repeated line, which must not come
			lines := stopped()
			if len(lines) != 1 || lines[0]["msg"] != "table stopped" || lines[0]["level"] != "ERROR" {
				t.Fatalf("the cyclic table's warnings and errors: %v, want one ERROR \"table stopped\"", lines)
			}
			msg := fmt.Sprint(lines[0]["err"])
			for _, want := range []string{"loops back to snapshot " + c.loops, "a cycle in parent-snapshot-id"} {
				if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
					t.Fatalf("stop line %q: want one line with %q", msg, want)
				}
			}
			if n := countLines(sink); n != len(bookshopEvents) {
				t.Fatalf("%d events in the sink, want the healthy table's %d", n, len(bookshopEvents))
			}

			// status asks the running daemon: the table's row says what is
			// wrong, and so does the daemon's health below the table.
			statusOK := func(daemon bool) {
				t.Helper()
				start := time.Now()
				sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer scancel()
				var out bytes.Buffer
				err := execute(sctx, []string{"status", "-c", cfg}, &out, io.Discard)
				if ee := (*exitError)(nil); !errors.As(err, &ee) || ee.code != exitTablesFailing || !strings.Contains(err.Error(), "cyclic.orders") {
					t.Fatalf("status (daemon running %v): %v, want exit %d naming cyclic.orders", daemon, err, exitTablesFailing)
				}
				if el := time.Since(start); el > 10*time.Second {
					t.Fatalf("status (daemon running %v) took %s", daemon, el)
				}
				var row string
				for _, l := range strings.Split(out.String(), "\n") {
					if strings.HasPrefix(l, "cyclic.orders ") {
						row = l
					}
				}
				if !strings.Contains(row, "loops back to snapshot "+c.loops) {
					t.Fatalf("status (daemon running %v): the cyclic table's row %q does not name snapshot %s:\n%s", daemon, row, c.loops, out.String())
				}
				if daemon && !strings.Contains(out.String(), "\n\ncyclic.orders: source stopped since ") {
					t.Fatalf("status with the daemon running shows no stopped table:\n%s", out.String())
				}
			}
			statusOK(true)
			cancel()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "table cyclic.orders: ") || !strings.Contains(err.Error(), c.loops) {
					t.Fatalf("the daemon's exit error %v: want the cyclic table's", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the daemon did not stop within 30s of the signal")
			}
			statusOK(false)
			if peak, _ := heap(); peak > 128<<20 {
				t.Fatalf("heap peak %d MiB", peak>>20)
			}
		})
	}
}

// countLines is the number of lines of the file at path (0 if none).
func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}
