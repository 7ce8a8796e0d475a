package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/internal/scenario"
)

// TestChangesConfig: `icecdc changes --config FILE` prints what the
// daemon of that file delivers: its catalog and table, its format, the
// customer column hashed as Debezium hashes it (the vectors of
// shape/testdata/debezium-masks.jsonl), the status masked, the amount left
// out, the key chosen by message.key.columns, deletes skipped, and its
// transforms (router and unwrap, in the block's order). No line holds a
// masked or excluded value, in any format; options that cannot apply to
// changes are refused with one line.
func TestChangesConfig(t *testing.T) {
	ctx := context.Background()
	env, tbl := newOrders(ctx, t)
	const hashOpt = "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K"
	hashes := debeziumHashes(t, hashOpt)
	customers := []string{"hello", "Grüße, 東京"}
	changeOrders(ctx, t, tbl, []map[string]any{scenario.Order(1, customers[0], "new", 10.25), scenario.Order(2, customers[1], "new", 20.75)}, 2, paid, 1)
	write := func(extra string) string {
		body := fmt.Sprintf(`name: shop-cdc
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: bookshop.orders, start: earliest}]
format: debezium-connect-json
sink: {type: kafka, kafka: {brokers: ['localhost:9092']}}
state: {path: '%s'}
debezium:
  %s: 'bookshop\.orders\.customer'
  column.mask.with.5.chars: 'bookshop\.orders\.status'
  column.exclude.list: 'bookshop\.orders\.amount'
  message.key.columns: 'bookshop\.orders:order_id,customer'
  skipped.operations: d
%s`, scenario.CatalogName, env.CatalogURI, env.Warehouse, filepath.Join(t.TempDir(), "state.db"), hashOpt, extra)
		path := filepath.Join(t.TempDir(), "icecdc.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const route = `  route: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: 'icecdc\.bookshop\.(.*)', topic.replacement: 'shop.all'}`
	const unwrap = `  unwrap: {delete.tombstone.handling.mode: rewrite, add.fields: 'op,table'}`
	// No line may hold a value the file masks or leaves out.
	secrets := append([]string{`"new"`, `"paid"`, "10.25", "20.75", `"amount"`}, customers...)
	for _, tc := range []struct {
		name, transforms string
		args             []string
		check            func(t *testing.T, lines []string)
	}{
		{"envelope", "", []string{"--with-key"}, func(t *testing.T, lines []string) {
			// Two creates and an update: the delete is skipped.
			if len(lines) != 3 {
				t.Fatalf("%d lines, want 3:\n%s", len(lines), strings.Join(lines, "\n"))
			}
			for i, l := range lines {
				key, value, _ := strings.Cut(l, "\t")
				var k struct{ Payload map[string]any }
				var v struct {
					Payload struct {
						Op    string
						After map[string]any
					}
				}
				if err := json.Unmarshal([]byte(key), &k); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal([]byte(value), &v); err != nil {
					t.Fatal(err)
				}
				want := hashes[customers[0]]
				if k.Payload["order_id"] == float64(2) {
					want = hashes[customers[1]]
				}
				if k.Payload["customer"] != want || v.Payload.After["customer"] != want || v.Payload.After["status"] != "*****" {
					t.Errorf("line %d: key %v, after %v; want customer %s (Debezium's hash) and status *****", i, k.Payload, v.Payload.After, want)
				}
				if v.Payload.Op == "d" {
					t.Errorf("line %d: a delete, which skipped.operations leaves out", i)
				}
			}
		}},
		{"route,unwrap", route + "\n" + unwrap, []string{"--with-key"}, func(t *testing.T, lines []string) {
			if len(lines) != 3 {
				t.Fatalf("%d lines, want 3", len(lines))
			}
			for _, l := range lines {
				key, value, _ := strings.Cut(l, "\t")
				if !strings.Contains(key, `"name":"shop.all.Key"`) || !strings.Contains(key, `"__dbz__physicalTableIdentifier":"icecdc.bookshop.orders"`) {
					t.Errorf("key not routed: %s", key)
				}
				if !strings.Contains(value, `"name":"shop.all.Value"`) || !strings.Contains(value, `"__deleted":"false"`) || !strings.Contains(value, `"__table":"orders"`) {
					t.Errorf("value not routed and flattened: %s", value)
				}
			}
		}},
		{"unwrap,route", unwrap + "\n" + route, []string{"--with-key"}, func(t *testing.T, lines []string) {
			if len(lines) != 3 {
				t.Fatalf("%d lines, want 3", len(lines))
			}
			for _, l := range lines {
				key, value, _ := strings.Cut(l, "\t")
				if !strings.Contains(key, `"name":"shop.all.Key"`) || !strings.Contains(value, `"name":"icecdc.bookshop.orders.Value"`) {
					t.Errorf("want the routed key and the table's value schema: %s %s", key, value)
				}
			}
		}},
		{"debezium-json", unwrap, []string{"--format", "debezium-json"}, func(t *testing.T, lines []string) {
			if len(lines) != 3 || !strings.Contains(lines[0], `"customer":"`+hashes[customers[0]]+`"`) || strings.Contains(lines[0], `"schema"`) {
				t.Errorf("want flattened debezium-json with the hash:\n%s", strings.Join(lines, "\n"))
			}
		}},
		{"table", "", []string{"--format", "table"}, func(t *testing.T, lines []string) {
			if out := strings.Join(lines, "\n"); !strings.Contains(out, hashes[customers[1]]) || !strings.Contains(out, "*****") {
				t.Errorf("the table format shows no hash and mask:\n%s", out)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := write("transforms:\n" + tc.transforms + "\n")
			if tc.transforms == "" {
				cfg = write("")
			}
			out, errOut, code := runCmd(append([]string{"changes", "--config", cfg}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, s := range secrets {
				if strings.Contains(out, s) || strings.Contains(errOut, s) {
					t.Errorf("%q is printed:\n%s%s", s, out, errOut)
				}
			}
			tc.check(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"))
		})
	}
	for _, tc := range []struct {
		extra string
		args  []string
		want  string
	}{
		{"transforms:\n  unwrap: {add.headers: op}\n", nil, "transforms.unwrap.add.headers: changes prints keys and values, which have no headers"},
		{"", []string{"--unwrap"}, "changes: --unwrap: not with --config"},
		{"transforms:\n" + route + "\n", []string{"--format", "table"}, "its transforms write records of a format; --format table shows the rows"},
		{"", []string{"--columns", "amount"}, `changes: --columns "amount": a column debezium.column.include.list or column.exclude.list of --config leaves out`},
		{"", []string{"--table", "bookshop.nope"}, "bookshop.nope"},
	} {
		cfg := write(tc.extra)
		_, errOut, code := runCmd(append([]string{"changes", "--config", cfg}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%q %v: exit %d, stderr %q, want one line with %q", tc.extra, tc.args, code, errOut, tc.want)
		}
	}
	// A mask on a column the table does not have names the option and the table.
	body, _ := os.ReadFile(write(""))
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte(strings.Replace(string(body), `bookshop\.orders\.status`, `bookshop\.orders\.statsu`, 1)), 0o600)
	_, errOut, code := runCmd("changes", "--config", bad)
	if code == 0 || !strings.Contains(errOut, "debezium.column.mask.with.5.chars") || !strings.Contains(errOut, "bookshop.orders") {
		t.Errorf("a mask on no column: exit %d, %s", code, errOut)
	}
}

// TestChangesConfigTombstones: `changes -c` of a Kafka sink's file prints
// the tombstone Kafka gets after each delete (the delete's key, a null
// value); a flattened stream keeps it only in rewrite-with-tombstone, and
// sink.kafka.tombstones: false or a sink without tombstones prints none.
func TestChangesConfigTombstones(t *testing.T) {
	path, _ := demoDaemonConfig(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	write := func(sink, extra string) string {
		body := strings.Replace(string(raw), "sink:\n  type: stdout\n", sink, 1) + extra
		p := filepath.Join(t.TempDir(), "icecdc.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const kafkaSink = "sink:\n  type: kafka\n  kafka: {brokers: ['localhost:9092']}\n"
	deletes := 0
	for _, e := range bookshopEvents {
		if strings.Contains(e, " d ") {
			deletes++
		}
	}
	if deletes == 0 {
		t.Fatal("the demo story has no delete")
	}
	for _, tc := range []struct {
		name, sink, extra string
		tombstones        bool
	}{
		{"kafka", kafkaSink, "", true},
		{"kafka without tombstones", "sink:\n  type: kafka\n  kafka: {brokers: ['localhost:9092'], tombstones: false}\n", "", false},
		{"kafka unwrap", kafkaSink, "transforms:\n  unwrap: {}\n", false},
		{"kafka unwrap rewrite-with-tombstone", kafkaSink, "transforms:\n  unwrap: {delete.tombstone.handling.mode: rewrite-with-tombstone}\n", true},
		{"stdout", "sink:\n  type: stdout\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCmd("changes", "-c", write(tc.sink, tc.extra), "--with-key")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			want := len(bookshopEvents)
			if tc.tombstones {
				want += deletes
			}
			if len(lines) != want {
				t.Fatalf("%d lines, want %d (%d events, tombstones %v):\n%s", len(lines), want, len(bookshopEvents), tc.tombstones, out)
			}
			seen := 0
			for i, l := range lines {
				key, value, _ := strings.Cut(l, "\t")
				if value != "null" || strings.Contains(tc.extra, "unwrap") && !tc.tombstones {
					continue
				}
				seen++
				prevKey, prevValue, _ := strings.Cut(lines[max(i-1, 0)], "\t")
				if i == 0 || prevKey != key || !strings.Contains(prevValue, `"op":"d"`) && !strings.Contains(prevValue, `"__deleted":"true"`) {
					t.Fatalf("line %d, a tombstone %q, does not follow the delete of its key: %q", i+1, l, lines[max(i-1, 0)])
				}
			}
			if tc.tombstones && seen != deletes {
				t.Fatalf("%d tombstones, want %d:\n%s", seen, deletes, out)
			}
		})
	}
}

// TestRunSinkOverrideKeepsFormat: `run --sink stdout` on a Kafka sink's
// file prints the Connect records Kafka would get, and says so.
func TestRunSinkOverrideKeepsFormat(t *testing.T) {
	path, _ := demoDaemonConfig(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(string(raw), "sink:\n  type: stdout\n", "sink:\n  type: kafka\n  kafka: {brokers: ['localhost:9092']}\n", 1)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd("run", "--once", "-c", path, "--sink", "stdout", "--state", filepath.Join(t.TempDir(), "try.db"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(bookshopEvents) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(bookshopEvents), out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"schema":{`) {
			t.Fatalf("a line not in debezium-connect-json, the Kafka sink's default: %s", l)
		}
	}
	if !strings.Contains(errOut, `"sink":"stdout","format":"debezium-connect-json"`) {
		t.Fatalf("the start line does not name the sink and format:\n%s", errOut)
	}
}
