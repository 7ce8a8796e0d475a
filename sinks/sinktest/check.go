package sinktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/icecdc/icecdc/cdc"
)

// maxProblems keeps a failure report readable.
const maxProblems = 12

// Compare checks what a destination holds (got) against the messages sent,
// in the order they were sent, and returns what is wrong, for a sink's own
// tests to report. Every message must
// be there, with its value, and its key and op where the destination
// keeps them; nothing else may be. With repeats, an id may arrive more
// than once (at-least-once after a failed Write); order is then judged on
// first arrivals, which is what a consumer that drops repeated ids sees.
// Order must hold per key, and with total for all messages.
func Compare(sent []cdc.Message, got []Received, repeats, total bool) []string {
	var out []string
	add := func(format string, args ...any) {
		if len(out) < maxProblems {
			out = append(out, fmt.Sprintf(format, args...))
		} else if len(out) == maxProblems {
			out = append(out, "(more problems left out)")
		}
	}
	index := make(map[string]int, len(sent))
	for i, m := range sent {
		if _, dup := index[m.ID]; dup {
			add("test bug: id %s sent twice", m.ID)
		}
		index[m.ID] = i
	}

	seen := make([]bool, len(sent))
	var firsts []int // indexes into sent, in arrival order of first copies
	for pos, r := range got {
		i, ok := index[r.ID]
		if !ok {
			add("received #%d has id %q, which was not sent", pos, r.ID)
			continue
		}
		m := sent[i]
		if seen[i] {
			if !repeats {
				add("received %s twice (again at #%d)", r.ID, pos)
			}
		} else {
			seen[i] = true
			firsts = append(firsts, i)
		}
		if r.Deleted {
			if m.Op != cdc.OpDelete || r.Value != nil {
				add("received %s as a deleted document, sent as op %q", r.ID, m.Op)
			}
		} else if !sameValue(r.Value, m.Value) {
			add("received %s with value %.80q, sent %.80q", r.ID, r.Value, m.Value)
		}
		if r.Key != nil && !bytes.Equal(r.Key, m.Key) {
			add("received %s with key %q, sent %q", r.ID, r.Key, m.Key)
		}
		if r.Op != 0 && r.Op != m.Op {
			add("received %s with op %q, sent %q", r.ID, r.Op, m.Op)
		}
	}
	missing := 0
	for i, ok := range seen {
		if !ok {
			if missing == 0 {
				add("missing %s (sent #%d)", sent[i].ID, i)
			}
			missing++
		}
	}
	if missing > 1 {
		add("missing %d messages in all", missing)
	}

	lastOfKey := map[string]int{}
	last := -1
	for _, i := range firsts {
		k := string(sent[i].Key)
		if j, ok := lastOfKey[k]; ok && j > i {
			add("key %s: %s (sent #%d) arrived after %s (sent #%d)", k, sent[i].ID, i, sent[j].ID, j)
		}
		lastOfKey[k] = max(lastOfKey[k], i)
		if total && last > i {
			add("%s (sent #%d) arrived after %s (sent #%d)", sent[i].ID, i, sent[last].ID, last)
		}
		last = max(last, i)
	}
	return out
}

// sameValue compares values as bytes, or as JSON documents where a
// destination re-encodes them (a webhook body that embeds each value in an
// array may change spacing or the order of object members).
func sameValue(got, want []byte) bool {
	if bytes.Equal(got, want) {
		return true
	}
	a, errA := decodeJSON(got)
	b, errB := decodeJSON(want)
	return errA == nil && errB == nil && reflect.DeepEqual(a, b)
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber() // keep 64-bit ids exact
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}
