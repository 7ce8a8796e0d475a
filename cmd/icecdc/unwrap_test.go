package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/internal/unwraptest"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestRunUnwrapKafka: `icecdc run` with transforms.unwrap writes to Kafka,
// for every delete mode, what ExtractNewRecordState's rules make of the
// envelope topic the same daemon writes without it: record by record,
// key, value, headers (the sink's and add.headers) and tombstones, in
// both delivery modes.
func TestRunUnwrapKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	brokers := newKafka(t)
	catalog := ordersChanged(ctx, t, 3)
	run := func(name, delivery, transforms string, want int) []unwraptest.Record {
		t.Helper()
		sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic: '%s.{table}', topic_partitions: 1, delivery: %s}}\n%s", brokers[0], name, delivery, transforms)
		return kafkaRecords(ctx, t, brokers, name, catalog, sink, name+".orders", want)
	}
	envelope := run("envelope", "at-least-once", "", 6) // 3 c, u, d, tombstone
	fields := []string{"op", "table", "source.ts_ms", "source.snapshot:snap", "transaction.id"}
	for _, mode := range []string{"tombstone", "drop", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"} {
		for _, delivery := range []string{"at-least-once", "exactly-once"} {
			t.Run(mode+"/"+delivery, func(t *testing.T) {
				want := applyOracle(t, unwraptest.Options{Mode: mode, AddFields: fields, AddHeaders: fields, Connect: true}, envelope)
				got := run("flat-"+mode+"-"+delivery, delivery, fmt.Sprintf("transforms: {unwrap: {type: io.debezium.transforms.ExtractNewRecordState, delete.tombstone.handling.mode: %s, add.fields: 'op,table,source.ts_ms,source.snapshot:snap,transaction.id', add.headers: 'op,table,source.ts_ms,source.snapshot:snap,transaction.id'}}", mode), len(want))
				if len(got) != len(want) {
					t.Fatalf("%d records, want %d", len(got), len(want))
				}
				for i := range got {
					if d := unwraptest.Diff(got[i], want[i]); d != "" {
						t.Fatalf("record %d: %s", i, d)
					}
				}
			})
		}
	}
}

// ordersChanged returns the catalog block of an orders table where n
// orders (at most 3) were created, then order 2 paid and order 1 deleted.
func ordersChanged(ctx context.Context, t *testing.T, n int) string {
	t.Helper()
	env, tbl := newOrders(ctx, t)
	rows := []map[string]any{scenario.Order(1, "ann", "new", 10), scenario.Order(2, "bob", "new", 20), scenario.Order(3, "cy", "new", 30)}
	changeOrders(ctx, t, tbl, rows[:n], 2, paid, 1)
	return fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
}

// applyOracle returns what ExtractNewRecordState's rules make of the
// envelope records.
func applyOracle(t *testing.T, o unwraptest.Options, envelope []unwraptest.Record) []unwraptest.Record {
	t.Helper()
	var want []unwraptest.Record
	for _, r := range envelope {
		out, err := unwraptest.Apply(o, r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, out...)
	}
	return want
}

// TestConfigUnwrap: transforms.unwrap takes ExtractNewRecordState's
// options, and refuses with one line naming the key what cannot apply.
func TestConfigUnwrap(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	good := goodConfig + "transforms: {unwrap: {type: io.debezium.transforms.ExtractNewRecordState, delete.tombstone.handling.mode: rewrite, add.fields: 'op,table,source.ts_ms', add.fields.prefix: x_}}\n"
	c, err := parseConfig([]byte(good), secret)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := eventEncoder(c)
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := enc.(*debezium.Unwrap); !ok || u.Options().DeleteHandling != debezium.DeleteRewrite || u.Options().AddFieldsPrefix != "x_" {
		t.Fatalf("encoder %T %+v", enc, enc)
	}
	for _, tc := range []struct{ transforms, want string }{
		{"{flatten: {}}", "config: transforms.flatten: unknown transform; icecdc has unwrap"},
		{"{unwrap: {delete.handling.mode: rewrite}}", "config: transforms.unwrap.delete.handling.mode: unknown option; want one of type, delete.tombstone.handling.mode,"},
		{"{unwrap: {delete.tombstone.handling.mode: none}}", `config: transforms.unwrap.delete.tombstone.handling.mode "none": want tombstone, drop, rewrite, rewrite-with-tombstone or delete-to-tombstone`},
		{"{unwrap: {type: io.debezium.transforms.ByLogicalTableRouter}}", `config: transforms.unwrap.type "io.debezium.transforms.ByLogicalTableRouter": icecdc has only io.debezium.transforms.ExtractNewRecordState`},
		{"{unwrap: {drop.fields.header.name: unchanged}}", "config: transforms.unwrap.drop.fields.header.name: not supported: icecdc's records carry no header listing fields"},
		{"{unwrap: {route.by.field: name}}", "config: transforms.unwrap.route.by.field: not supported: topics come from sink.kafka.topic"},
		{"{unwrap: {add.fields: 'source.sequence'}}", `config: transforms.unwrap.add.fields: "source.sequence": debezium-json's envelope has no such field`},
		{"{unwrap: {add.fields: 'after'}}", `config: transforms.unwrap.add.fields: "after": debezium-json's envelope has no such field`},
		{"{unwrap: {add.fields: 'op,op'}}", `config: transforms.unwrap.add.fields: field "__op" is added twice`},
		{"{unwrap: {add.headers: op}}", "config: transforms.unwrap.add.headers: sink webhook has no record headers (only kafka has)"},
	} {
		_, err := parseConfig([]byte(goodConfig+"transforms: "+tc.transforms+"\n"), secret)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("transforms %s: error %v, want one line starting %q", tc.transforms, err, tc.want)
		}
	}
}

// TestChangesUnwrap: `icecdc changes --unwrap` prints, for every delete
// mode and in both formats, one line per record ExtractNewRecordState's
// rules make of the envelope lines of the same events (a tombstone as
// null), and refuses what it cannot print.
func TestChangesUnwrap(t *testing.T) {
	_, catArgs, _ := bookshop(t)
	for _, format := range []string{formatDebeziumJSON, formatDebeziumConnect} {
		base := append([]string{"changes", "--format", format, "--with-key"}, catArgs...)
		out, errOut, code := runCmd(base...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var envelope []unwraptest.Record
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			k, v, _ := strings.Cut(l, "\t")
			if format == formatDebeziumJSON {
				v = withoutEventID(t, v) // the SMT sees the record's value, which has none
			}
			envelope = append(envelope, unwraptest.Record{Key: []byte(k), Value: []byte(v)})
			if strings.Contains(v, `"op":"d"`) {
				envelope = append(envelope, unwraptest.Record{Key: []byte(k)}) // as Debezium's tombstones.on.delete
			}
		}
		for _, mode := range []string{"tombstone", "drop", "rewrite", "rewrite-with-tombstone", "delete-to-tombstone"} {
			o := unwraptest.Options{Mode: mode, AddFields: []string{"op", "source.sequence_number", "name:pipeline"}, Connect: format == formatDebeziumConnect}
			var want []string
			for _, r := range envelope {
				recs, err := unwraptest.Apply(o, r)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					if r.Value == nil && mode == "rewrite-with-tombstone" {
						continue // changes prints no tombstone after a delete: its envelope has none
					}
					v := string(r.Value)
					if r.Value == nil {
						v = "null"
					}
					want = append(want, v)
				}
			}
			out, errOut, code := runCmd(append(base[:len(base):len(base)], "--unwrap", "--unwrap-option", "delete.tombstone.handling.mode="+mode,
				"--unwrap-option", "add.fields=op,source.sequence_number,name:pipeline")...)
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", format, mode, code, errOut)
			}
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d lines, want %d:\n%s", format, mode, len(got), len(want), out)
			}
			for i := range got {
				k, v, _ := strings.Cut(got[i], "\t")
				if v == "null" && want[i] == "null" {
					continue
				}
				if format == formatDebeziumJSON {
					v = withoutEventID(t, v)
				}
				if d := unwraptest.Diff(unwraptest.Record{Key: []byte(k), Value: []byte(v)}, unwraptest.Record{Key: []byte(k), Value: []byte(want[i])}); d != "" {
					t.Fatalf("%s %s line %d: %s", format, mode, i, d)
				}
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--unwrap-option", "add.fields=op"}, "changes: --unwrap-option: only with --unwrap"},
		{[]string{"--unwrap", "--format", "table"}, "changes: --unwrap: format table has no flattened form"},
		{[]string{"--unwrap", "--unwrap-option", "add.headers=op"}, "changes: --unwrap-option add.headers: changes prints values, which have no headers"},
		{[]string{"--unwrap", "--unwrap-option", "nope=1"}, "changes: --unwrap-option nope: unknown option"},
		{[]string{"--unwrap", "--unwrap-option", "add.fields=source.nope"}, `changes: --unwrap-option add.fields: "source.nope": debezium-json's envelope has no such field`},
	} {
		_, errOut, code := runCmd(append(append([]string{"changes"}, catArgs...), tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestRunUnwrapFile: `icecdc run` with transforms.unwrap to a file writes
// the lines `icecdc changes --unwrap` prints for the same events and
// options: a dropped delete is no line, a tombstone the line null.
func TestRunUnwrapFile(t *testing.T) {
	_, catArgs, _ := bookshop(t)
	catalog := fmt.Sprintf("{name: local, type: sql, uri: '%s', warehouse: '%s'}", catArgs[3], catArgs[5])
	for _, mode := range []string{"drop", "delete-to-tombstone", "tombstone", "rewrite"} {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		sink := fmt.Sprintf("{type: file, file: {path: '%s'}}\ntransforms: {unwrap: {delete.tombstone.handling.mode: %s, add.fields: 'op,source.sequence_number'}}", path, mode)
		cfg := writeConfig(t, "icecdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
		if _, errOut, code := runCmd("run", "--once", "-c", cfg); code != 0 {
			t.Fatalf("%s: run exit %d: %s", mode, code, errOut)
		}
		out, errOut, code := runCmd(append(append([]string{"changes"}, catArgs...), "--unwrap",
			"--unwrap-option", "delete.tombstone.handling.mode="+mode, "--unwrap-option", "add.fields=op,source.sequence_number")...)
		if code != 0 {
			t.Fatalf("%s: changes exit %d: %s", mode, code, errOut)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != out {
			t.Fatalf("%s: the file holds\n%s\nchanges --unwrap prints\n%s", mode, b, out)
		}
		if want := map[string]int{"drop": 7, "delete-to-tombstone": 9, "tombstone": 9, "rewrite": 9}[mode]; strings.Count(out, "\n") != want {
			t.Fatalf("%s: %d lines, want %d:\n%s", mode, strings.Count(out, "\n"), want, out)
		}
	}
}

// kafkaRecords runs the daemon as pipeline name with the sink (and what
// follows it in the file) until topic holds want records, and returns
// them.
func kafkaRecords(ctx context.Context, t *testing.T, brokers []string, name, catalog, sink, topic string, want int) []unwraptest.Record {
	t.Helper()
	// A pipeline of its own: under exactly-once the checkpoint topic,
	// shared by the runs, keeps each pipeline's position.
	cfg := writeConfig(t, name, catalog, sink, filepath.Join(t.TempDir(), "state.db"))
	var recs []*kgo.Record
	var err error
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, name+"'s records", func() bool {
		if recs, err = readCommitted(ctx, brokers, topic); err != nil {
			t.Fatal(err)
		}
		return len(recs) >= want
	})
	d.stop(t)
	if recs, err = readCommitted(ctx, brokers, topic); err != nil {
		t.Fatal(err)
	}
	out := make([]unwraptest.Record, len(recs))
	for i, r := range recs {
		out[i] = unwraptest.Record{Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			out[i].Headers = append(out[i].Headers, unwraptest.Header{Key: h.Key, Value: h.Value})
		}
	}
	return out
}

// withoutEventID returns the line v of changes without the event id it
// carries, failing the test when it carries none or a malformed one.
func withoutEventID(t *testing.T, v string) string {
	t.Helper()
	id, rest, err := sinktest.SplitEventID([]byte(v))
	if err != nil || strings.Count(id, ":") != 3 {
		t.Fatalf("event id %q of %s: %v", id, v, err)
	}
	return string(rest)
}
