package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
// the range was printed (DESIGN §4: history loss is never papered over).
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
