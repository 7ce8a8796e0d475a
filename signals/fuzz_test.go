package signals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// fuzzSecret is a literal placed in the fuzzed filters: a masked value
// that must never show in an error, a log line or a notification.
const fuzzSecret = "Zq9SECRETVAL@example.com"

// fuzzBudget bounds what decoding one record may allocate.
const fuzzBudget = 64 << 20

// FuzzSignalRecord decodes signal records as the channel does: the
// fuzzed record value as is, and a record whose filters hold
// fuzzSecret as a string literal between fuzzed text. Invariants: no
// panic; at most fuzzBudget allocated; a refusal is one line of at most
// 4 KiB; fuzzSecret is in no refusal, log line or notification; an
// accepted signal names only followed tables, and its filters are the
// record's.
func FuzzSignalRecord(f *testing.F) {
	for _, s := range []string{
		`{"id": "1", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"]}}`,
		`{"id": "2", "type": "execute-snapshot", "data": {"type": "blocking", "data-collections": ["shop\\..*"], "additional-conditions": [{"data-collection": "shop.orders", "filter": "id > 3"}]}}`,
		`{"id": "3", "type": "execute-snapshot", "data": "{\"data-collections\": [\"shop.items\"], \"additional-condition\": \"status = 'x'\"}"}`,
		`{"id": "4", "type": "stop-snapshot", "data": {"data-collections": ["shop.items"]}}`,
		`{"id": "5", "type": "pause-snapshot"}`,
		`{"id": "6", "type": "resume-snapshot", "data": null}`,
		`{"id": "7", "type": "log", "data": {"message": "x"}}`,
		`{"type": "execute-snapshot"}`,
		`{"id": "8", "type": "execute-snapshot", "data": {"data-collections": ["(a|b"]}}`,
		`{"id": 9}`, `null`, ``, `[`, `{"id": "1"} {"id": "2"}`,
	} {
		f.Add([]byte(s), "id = ", "")
	}
	f.Add([]byte(nil), "", " = customer")
	f.Add([]byte(nil), "(((", ")))")
	f.Add([]byte(nil), "email IN (", ", 'b')")
	f.Add([]byte(nil), "NOT NOT id BETWEEN 1 AND ", "")
	f.Fuzz(func(t *testing.T, value []byte, prefix, suffix string) {
		tables := []string{"shop.orders", "shop.items"}
		var log bytes.Buffer
		logger := slog.New(slog.NewJSONHandler(&log, nil))
		rt := &router{topic: "sig", key: "k", tables: tables, log: logger,
			notify: &Notifier{Connector: "c", Log: logger}}
		check := func(v []byte, secret bool) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			d := rt.decode(&kgo.Record{Key: []byte("k"), Value: v, Offset: 7})
			runtime.ReadMemStats(&after)
			if a := after.TotalAlloc - before.TotalAlloc; a > fuzzBudget {
				t.Fatalf("decoding %d bytes allocated %d MiB", len(v), a>>20)
			}
			switch {
			case d.err != nil:
				msg := d.err.Error()
				if strings.ContainsAny(msg, "\n\r") || len(msg) > 4096 {
					t.Fatalf("refusal of %d bytes, or of several lines: %.300q", len(msg), msg)
				}
				rt.reject(d.a, msg)
			case d.none == "":
				for _, tb := range d.a.Tables {
					if tb != "shop.orders" && tb != "shop.items" {
						t.Fatalf("accepted a signal for %q, not followed", tb)
					}
				}
				strs := recordStrings(v)
				for tb, flt := range d.a.Filters {
					if !strs[flt] {
						t.Fatalf("table %s got filter %q, not one of the record's strings", tb, flt)
					}
				}
				if d.a.Signal.Type == TypeExecuteSnapshot {
					rt.logExecute(d.a, d.a.Tables)
				}
			}
			if secret && strings.Contains(log.String(), fuzzSecret) {
				t.Fatalf("the filter's literal is in the output: %s", log.String())
			}
		}
		check(value, false)
		// The group's metadata and a partition's mark are read back from
		// Kafka, where anyone with access to the group may write them.
		if sk, err := parseSkip(7, string(value)); err == nil && sk != nil {
			for o := int64(0); o < 64; o++ {
				sk.done(o)
			}
		}
		if _, sk, err := parseMark(string(value)); err == nil && sk != nil {
			sk.done(3)
		}
		if strings.ContainsAny(prefix+suffix, `'"`+"`\\") || strings.Contains(prefix+suffix, "Zq9") {
			return // the literal might not be one: quotes around it could change
		}
		filter := prefix + "'" + fuzzSecret + "'" + suffix
		rec := fmt.Sprintf(`{"id": "f", "type": "execute-snapshot", "data": {"data-collections": ["shop.orders"], "additional-conditions": [{"data-collection": "shop.orders", "filter": %s}]}}`, jsonString(filter))
		check([]byte(rec), true)
		rec = fmt.Sprintf(`{"id": "g", "type": "execute-snapshot", "data": {"data-collections": ["shop.items"], "additional-condition": %s}}`, jsonString(filter))
		check([]byte(rec), true)
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// recordStrings are the strings a JSON record holds, also inside a
// string that is JSON itself (data as Debezium's signal table has it).
func recordStrings(v []byte) map[string]bool {
	out := map[string]bool{}
	var walk func(x any, depth int)
	walk = func(x any, depth int) {
		switch x := x.(type) {
		case string:
			out[x] = true
			var inner any
			if depth < 2 && json.Unmarshal([]byte(x), &inner) == nil {
				walk(inner, depth+1)
			}
		case []any:
			for _, e := range x {
				walk(e, depth)
			}
		case map[string]any:
			for _, e := range x {
				walk(e, depth)
			}
		}
	}
	d := json.NewDecoder(bytes.NewReader(v))
	for {
		var x any
		if d.Decode(&x) != nil {
			break
		}
		walk(x, 0)
	}
	return out
}
