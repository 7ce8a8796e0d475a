package debezium

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// TableFormat prints events for a person reading them: one line per
// event with the sequence number, the snapshot, the op, the key, and for
// an update its changed fields as before → after, for an insert or a read
// the row's values, for a delete the values it had. Values are those of
// the debezium-json encoding; a changes column longer than MaxWidth is cut
// with "…". Lines are printed as events come, so a column is as wide as
// the widest value seen so far (never narrower than its header).
type TableFormat struct {
	w        io.Writer
	MaxWidth int // of the changes column; default 120
	header   bool
	widths   [4]int
	enc      JSON
	buf      []byte
}

// NewTableFormat returns a TableFormat writing to w.
func NewTableFormat(w io.Writer) *TableFormat {
	// Snapshot ids are random positive longs, most of 19 digits: the
	// column starts that wide so that a shorter first id does not
	// misalign the lines after it.
	return &TableFormat{w: w, MaxWidth: 120, widths: [4]int{3, 19, 2, 3}}
}

// Write prints the events evs of c.
func (t *TableFormat) Write(c *cdc.Commit, evs []cdc.Event) error {
	lines := make([][5]string, 0, len(evs)+1)
	if !t.header {
		lines = append(lines, [5]string{"SEQ", "SNAPSHOT", "OP", "KEY", "CHANGES"})
		t.header = true
	}
	for i := range evs {
		e := &evs[i]
		key, err := t.enc.AppendKey(nil, c, e)
		if err != nil {
			return err
		}
		changes, err := t.changes(c, e)
		if err != nil {
			return err
		}
		lines = append(lines, [5]string{strconv.FormatInt(c.Snapshot.SequenceNumber, 10), strconv.FormatInt(c.Snapshot.ID, 10),
			e.Op.String(), cut(flatObject(key), 60), cut(changes, t.MaxWidth)})
	}
	for _, l := range lines {
		for k := range t.widths {
			t.widths[k] = max(t.widths[k], utf8.RuneCountInString(l[k]))
		}
	}
	t.buf = t.buf[:0]
	for _, l := range lines {
		for k, w := range t.widths {
			t.buf = append(t.buf, l[k]...)
			t.buf = append(t.buf, strings.Repeat(" ", w-utf8.RuneCountInString(l[k])+2)...)
		}
		t.buf = append(t.buf, l[4]...)
		t.buf = append(t.buf, '\n')
	}
	_, err := t.w.Write(t.buf)
	return err
}

func (t *TableFormat) changes(c *cdc.Commit, e *cdc.Event) (string, error) {
	beforeRow, err := e.BeforeRow()
	if err != nil {
		return "", err
	}
	afterRow, err := e.AfterRow()
	if err != nil {
		return "", err
	}
	switch e.Op {
	case cdc.OpUpdate:
		before, err := t.imageMap(c, beforeRow)
		if err != nil {
			return "", err
		}
		after, err := t.imageMap(c, afterRow)
		if err != nil {
			return "", err
		}
		var parts []string
		for _, p := range c.Table.ChangedFields(beforeRow, afterRow) {
			parts = append(parts, fmt.Sprintf("%s: %s → %s", p, valueText(pathValue(before, p)), valueText(pathValue(after, p))))
		}
		if len(parts) == 0 {
			return "(no field changed)", nil
		}
		return strings.Join(parts, ", "), nil
	case cdc.OpDelete:
		b, err := t.enc.AppendRow(nil, c.Table.Schema, beforeRow)
		if err != nil {
			return "", err
		}
		return "was " + flatObject(b), nil
	default:
		b, err := t.enc.AppendRow(nil, c.Table.Schema, afterRow)
		if err != nil {
			return "", err
		}
		return flatObject(b), nil
	}
}

func (t *TableFormat) imageMap(c *cdc.Commit, r values.Row) (map[string]any, error) {
	b, err := t.enc.AppendRow(nil, c.Table.Schema, r)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return m, d.Decode(&m)
}

func pathValue(m map[string]any, path string) any {
	var v any = m
	for part := range strings.SplitSeq(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = o[part]
	}
	return v
}

func valueText(v any) string {
	if v == nil {
		return "null"
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// flatObject prints a JSON object's members as name=value, space separated.
func flatObject(b []byte) string {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if _, err := d.Token(); err != nil { // {
		return string(b)
	}
	var parts []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return string(b)
		}
		var v any
		if err := d.Decode(&v); err != nil {
			return string(b)
		}
		parts = append(parts, fmt.Sprintf("%v=%s", k, valueText(v)))
	}
	return strings.Join(parts, " ")
}

// cut shortens s to at most n runes, ending it with "…"; tabs and line
// breaks become spaces so the columns stay aligned.
func cut(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s)
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
