package badinput

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Cosmetic lists the event fields that are copied from table metadata
// rather than computed from rows, and that a harmless mutation of that
// metadata may therefore change without the event being wrong. Canon drops
// them; everything else of an event is compared exactly.
var Cosmetic = []string{
	"ts_ms (processing time)",
	"source.ts_ms (the snapshot's timestamp-ms)",
	"source.operation (the snapshot summary's operation)",
	"column names and order in before/after (the schema's; images are compared keyed by field id)",
}

// Columns maps a column name to the key its values are compared under:
// "id:N" for a column of the schema in effect. Images are compared by
// field id, so that renaming a column (or giving two columns each other's
// ids, which renames them) is cosmetic while reading another column's
// data is not.
type Columns map[string]string

// SchemaColumns reads the current schema of a parsed metadata.json; nil
// when there is none to read.
func SchemaColumns(meta any) Columns {
	cur, _ := Get(meta, Path{"current-schema-id"})
	schemas, _ := Get(meta, Path{"schemas"})
	list, _ := schemas.([]any)
	cols := Columns{}
	seen := map[string]int{}
	for _, sc := range list {
		m, _ := sc.(map[string]any)
		if m == nil || (cur != nil && fmt.Sprint(m["schema-id"]) != fmt.Sprint(cur)) {
			continue
		}
		fields, _ := m["fields"].([]any)
		for _, f := range fields {
			fm, _ := f.(map[string]any)
			if fm == nil {
				continue
			}
			name := fmt.Sprint(fm["name"])
			seen[name]++
			cols[name] = "id:" + fmt.Sprint(fm["id"])
		}
	}
	for name, n := range seen {
		if n > 1 {
			delete(cols, name)
		}
	}
	return cols
}

func (c Columns) key(name string) string {
	if k, ok := c[name]; ok {
		return k
	}
	return "name:" + name
}

// Event is one debezium-json line in canonical form.
type Event struct {
	Canon   string // the line minus the Cosmetic fields, keys sorted
	Summary string // "seq op row_id", for messages
	Snap    int64  // source.snapshot_id
}

// ParseEvents parses JSON lines (lines starting with '#' and blank lines
// are skipped), keying image values by cols. A line that is not an event
// is an error.
func ParseEvents(out []byte, cols Columns) ([]Event, error) {
	var evs []Event
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		ev, err := canon(line, cols)
		if err != nil {
			return evs, fmt.Errorf("line %d: %w: %.200s", n, err, line)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		return evs, err
	}
	return evs, nil
}

func canon(line []byte, cols Columns) (Event, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil {
		return Event{}, err
	}
	out := map[string]any{}
	for k, raw := range top {
		switch k {
		case "ts_ms":
		case "before", "after":
			img, err := image(raw, cols)
			if err != nil {
				return Event{}, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = img
		default:
			v, err := decodeNumber(raw)
			if err != nil {
				return Event{}, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = v
		}
	}
	src, _ := out["source"].(map[string]any)
	if src == nil {
		return Event{}, fmt.Errorf("no source block")
	}
	delete(src, "ts_ms")
	delete(src, "operation")
	if cf, ok := out["changed_fields"].([]any); ok {
		keys := make([]string, len(cf))
		for i, n := range cf {
			keys[i] = cols.key(fmt.Sprint(n))
		}
		slices.Sort(keys)
		out["changed_fields"] = keys
	}
	b, err := json.Marshal(out)
	if err != nil {
		return Event{}, err
	}
	snap, _ := src["snapshot_id"].(json.Number).Int64()
	return Event{
		Canon:   string(b),
		Summary: fmt.Sprintf("seq %v %v row %v", src["sequence_number"], out["op"], src["row_id"]),
		Snap:    snap,
	}, nil
}

func decodeNumber(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// image decodes a row image keyed by cols; null stays null.
func image(raw []byte, cols Columns) (map[string]any, error) {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(m))
	for name, v := range m {
		x, err := decodeNumber(v)
		if err != nil {
			return nil, err
		}
		k := cols.key(name)
		if _, dup := out[k]; dup {
			k = "name:" + name
		}
		out[k] = x
	}
	return out, nil
}

// Compare checks got against want: on exit 0 (complete) they must be
// equal, otherwise got must be a prefix of want. It returns "" when they
// agree, else what differs first.
func Compare(got, want []Event, complete bool) string {
	for i := range got {
		if i >= len(want) {
			return fmt.Sprintf("%d events, want %d: extra event %d (%s)", len(got), len(want), i, got[i].Summary)
		}
		if got[i].Canon != want[i].Canon {
			return fmt.Sprintf("event %d is %s, want %s", i, diffHint(got[i], want[i]), want[i].Summary)
		}
	}
	if complete && len(got) != len(want) {
		return fmt.Sprintf("%d events, want %d: first missing %s", len(got), len(want), want[len(got)].Summary)
	}
	return ""
}

func diffHint(got, want Event) string {
	if got.Summary != want.Summary {
		return got.Summary
	}
	return got.Summary + " with other content: " + firstDiff(got.Canon, want.Canon)
}

func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-40)
	return fmt.Sprintf("…%s… vs …%s…", clip(a[lo:], 80), clip(b[lo:], 80))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// OnlySnapshots keeps the events of the given snapshots.
func OnlySnapshots(evs []Event, keep map[int64]bool) []Event {
	var out []Event
	for _, e := range evs {
		if keep[e.Snap] {
			out = append(out, e)
		}
	}
	return out
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
