package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// debeziumHashes returns Debezium's own hashes of values under option,
// from shape/testdata/debezium-masks.jsonl (MaskStrings' output, see
// interop/maven/masks).
func debeziumHashes(t *testing.T, option string) map[string]string {
	t.Helper()
	f, err := os.Open("../../shape/testdata/debezium-masks.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v struct {
			Option        string
			Input, Output *string
			Repeat        int
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if v.Option == option && v.Input != nil && v.Repeat == 0 {
			out[*v.Input] = *v.Output
		}
	}
	return out
}

// TestRunShapesColumns runs the daemon into Kafka (Connect JSON, with
// schema-change records and /status) with a column excluded, one hashed
// as Debezium hashes it, one truncated (added later), a key chosen by
// message.key.columns and deletes skipped, through a rename of the hashed
// column. No byte of any record, log line or /status holds an excluded or
// masked value, the hashes are Debezium's, and the schemas and
// schema-change records describe the shaped columns.
func TestRunShapesColumns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := newKafka(t)
	env, tbl := newOrders(ctx, t)
	var err error
	step := func(what string, fn func(context.Context, *table.Table) (*table.Table, error)) {
		t.Helper()
		if tbl, err = fn(ctx, tbl); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	evolve := func(what string, fn func(*table.UpdateSchema)) {
		step(what, func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			tx := tb.NewTransaction()
			us := tx.UpdateSchema(true, false)
			fn(us)
			if err := us.Commit(); err != nil {
				return nil, err
			}
			return tx.Commit(ctx)
		})
	}
	const hashOpt = "column.mask.hash.SHA-256.with.salt.CzQMA0cB5K"
	hashes := debeziumHashes(t, hashOpt)
	customers := []string{"hello", "jane.doe@example.com", "Grüße, 東京"}
	for _, c := range customers {
		if hashes[c] == "" {
			t.Fatalf("no Debezium hash of %q in the vectors", c)
		}
	}
	addr := freeAddr(t)
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	sink := fmt.Sprintf(`{type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1}}
http: {listen: '%s'}
debezium:
  include.schema.changes: true
  topic.prefix: shop
  column.exclude.list: 'bookshop\.orders\.status'
  %s: 'bookshop\.orders\.customer'
  column.truncate.to.2.chars: 'bookshop\.orders\.(note)'
  message.key.columns: 'bookshop\.orders:amount,order_id'
  skipped.operations: d`, brokers[0], addr, hashOpt)
	cfg := writeConfig(t, "shop-cdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
	const topic, changes = "icecdc.bookshop.orders", "shop.schema-changes"
	read := func(topic string) int {
		recs, err := readCommitted(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	order := func(id int64, customer, status string, amount float64) map[string]any {
		return scenario.Order(id, customer, status, amount)
	}

	step("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{order(1, customers[0], "status-secret-1", 10), order(2, customers[1], "status-secret-2", 20)})
	})
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "the first events", func() bool { return read(topic) == 2 && read(changes) == 1 })
	step("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, iceberg.EqualTo(iceberg.Reference("order_id"), int64(1)), func(r map[string]any) map[string]any {
			r["customer"], r["status"] = customers[2], "status-secret-4"
			return r
		})
	})
	evolve("add note", func(us *table.UpdateSchema) {
		us.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
	})
	step("append with note", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{{"order_id": int64(3), "customer": customers[2], "status": "status-secret-3", "amount": 30.0, "note": "gift-wrap-secret"}})
	})
	evolve("rename", func(us *table.UpdateSchema) { us.RenameColumn([]string{"customer"}, "buyer") })
	step("append after the rename", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{{"order_id": int64(4), "buyer": customers[1], "status": "status-secret-5", "amount": 40.0, "note": "nb"}})
	})
	step("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, iceberg.EqualTo(iceberg.Reference("order_id"), int64(2)))
	})
	// 2 c, u, c, c; the delete and its tombstone skipped. Schema changes:
	// the first snapshot, the add (with the note's first append) and the
	// rename.
	d.waitFor(t, "every event", func() bool { return read(topic) == 5 && read(changes) == 3 })
	resp, err := http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	status, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	d.stop(t)

	var all strings.Builder
	all.WriteString(d.logs.String())
	all.Write(status)
	events, err := readCommitted(ctx, brokers, topic)
	if err != nil {
		t.Fatal(err)
	}
	schemaChanges, err := readCommitted(ctx, brokers, changes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range append(events, schemaChanges...) {
		all.Write(r.Key)
		all.Write(r.Value)
		for _, h := range r.Headers {
			all.WriteString(h.Key)
			all.Write(h.Value)
		}
	}
	for _, r := range events {
		k, v := splitConnect(t, string(r.Key)), splitConnect(t, string(r.Value))
		var p struct {
			Op            string
			After         map[string]any
			ChangedFields []string `json:"changed_fields"`
		}
		if err := json.Unmarshal(v.Payload, &p); err != nil {
			t.Fatal(err)
		}
		name := "customer"
		if _, ok := p.After["buyer"]; ok {
			name = "buyer"
		}
		got = append(got, fmt.Sprintf("%s key=%s %s=%v note=%v changed=%v", p.Op, k.Payload, name, p.After[name], p.After["note"], p.ChangedFields))
		if _, ok := p.After["status"]; ok || strings.Contains(string(v.Schema), `"field":"status"`) {
			t.Errorf("the excluded column in an event: %.400s", r.Value)
		}
	}
	// The update changes the hashed and the excluded column only: its
	// changed_fields names neither.
	want := []string{
		`c key={"amount":10,"order_id":1} customer=` + hashes[customers[0]] + ` note=<nil> changed=[]`,
		`c key={"amount":20,"order_id":2} customer=` + hashes[customers[1]] + ` note=<nil> changed=[]`,
		`u key={"amount":10,"order_id":1} customer=` + hashes[customers[2]] + ` note=<nil> changed=[]`,
		`c key={"amount":30,"order_id":3} customer=` + hashes[customers[2]] + ` note=gi changed=[]`,
		`c key={"amount":40,"order_id":4} buyer=` + hashes[customers[1]] + ` note=nb changed=[]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range schemaChanges {
		if strings.Contains(string(r.Value), `"status"`) {
			t.Errorf("the excluded column in a schema-change record: %.600s", r.Value)
		}
	}
	out := all.String()
	for _, secret := range []string{"status-secret", "gift-wrap", "hello", "jane.doe", "Grüße", `Gr\u00fc`, "東京", `\u6771`} {
		if strings.Contains(out, secret) {
			i := strings.Index(out, secret)
			t.Errorf("%q reached the output: …%s…", secret, out[max(0, i-200):min(len(out), i+100)])
		}
	}
}

// TestRunRoutesTablesToOneTopic: a ByLogicalTableRouter transform sends
// two tables' events to one topic, in both formats; each key carries the
// table's own topic in __dbz__physicalTableIdentifier and, in Connect
// JSON, the schemas take the shared topic's names, as Debezium's SMT
// writes them.
func TestRunRoutesTablesToOneTopic(t *testing.T) {
	for _, format := range []string{formatDebeziumConnect, formatDebeziumJSON} {
		t.Run(format, func(t *testing.T) { runRoutes(t, format) })
	}
}

func runRoutes(t *testing.T, format string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := newKafka(t)
	// Equal keys in both tables: only the key field keeps them apart.
	env := orderTables(ctx, t, []string{"orders_eu", "orders_us"}, nil)
	body := fmt.Sprintf(`name: shop-cdc
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: bookshop.orders_eu, start: earliest}, {name: bookshop.orders_us, start: earliest}]
poll: {interval: 50ms}
format: %s
sink: {type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1}}
state: {path: '%s'}
transforms:
  Reroute:
    type: io.debezium.transforms.ByLogicalTableRouter
    topic.regex: 'icecdc\.bookshop\.orders_(eu|us)'
    topic.replacement: 'icecdc.bookshop.orders'
`, scenario.CatalogName, env.CatalogURI, env.Warehouse, format, brokers[0], filepath.Join(t.TempDir(), "state.db"))
	const shared = "icecdc.bookshop.orders"
	recs := routedRecords(ctx, t, brokers, body, shared, 2)
	var keys []string
	for _, r := range recs {
		key, value := string(r.Key), string(r.Value)
		if format == formatDebeziumConnect {
			k, v := splitConnect(t, key), splitConnect(t, value)
			key = string(k.Payload)
			var ks struct {
				Name   string
				Fields []struct {
					Field, Type string
					Optional    bool
				}
			}
			if err := json.Unmarshal(k.Schema, &ks); err != nil {
				t.Fatal(err)
			}
			last := ks.Fields[len(ks.Fields)-1]
			if ks.Name != shared+".Key" || last.Field != "__dbz__physicalTableIdentifier" || last.Type != "string" || last.Optional {
				t.Errorf("key schema: %s", k.Schema)
			}
			var vs struct {
				Name   string
				Fields []struct{ Field, Name string }
			}
			if err := json.Unmarshal(v.Schema, &vs); err != nil {
				t.Fatal(err)
			}
			if vs.Name != shared+".Envelope" || vs.Fields[0].Name != shared+".Value" || vs.Fields[1].Name != shared+".Value" {
				t.Errorf("value schema names: %s %+v", vs.Name, vs.Fields[:2])
			}
		}
		keys = append(keys, key)
	}
	sort.Strings(keys)
	want := `{"order_id":1,"__dbz__physicalTableIdentifier":"icecdc.bookshop.orders_eu"} {"order_id":1,"__dbz__physicalTableIdentifier":"icecdc.bookshop.orders_us"}`
	if strings.Join(keys, " ") != want {
		t.Errorf("keys %s, want %s", strings.Join(keys, " "), want)
	}
}

// TestShapingConfigRefusals: options that cannot apply are refused when
// the configuration loads, with one line naming the option.
func TestShapingConfigRefusals(t *testing.T) {
	base := "name: p\ntables: [{name: shop.orders}]\nsink: %s\n%s\n"
	kafkaSink := "{type: kafka, kafka: {brokers: ['localhost:9092']}}"
	for _, tc := range []struct{ sink, extra, want string }{
		{kafkaSink, "debezium: {column.mask.hash.SHA-256.with.salt.: 'shop\\.orders\\.email'}", "config: debezium.column.mask.hash.SHA-256.with.salt.…: empty salt"},
		{kafkaSink, "debezium: {column.mask.hash.WHIRLPOOL.with.salt.s3cr3t: 'shop\\.orders\\.email'}", `config: debezium.column.mask.hash.WHIRLPOOL.with.salt.…: unknown hash algorithm "WHIRLPOOL"`},
		{kafkaSink, "debezium: {column.frobnicate: x}", `config: line 4: debezium: unknown key "column.frobnicate"`},
		{kafkaSink, "debezium: {column.include.list: a.b.c, column.exclude.list: a.b.d}", "config: debezium.column.include.list and column.exclude.list: set one of them, not both"},
		{kafkaSink, "debezium: {skipped.operations: 'd,x'}", `config: debezium.skipped.operations: "x": want`},
		{kafkaSink, "debezium: {skipped.operations: d, provide.transaction.metadata: true}", "config: debezium.skipped.operations: not with debezium.provide.transaction.metadata"},
		{kafkaSink, "debezium: {message.key.columns: 'shop.orders'}", `config: debezium.message.key.columns: "shop.orders": want <table>:<column>`},
		{"{type: stdout}", "transforms: {Reroute: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: x, topic.replacement: y}}", "config: transforms.Reroute: ByLogicalTableRouter routes Kafka topics, and sink type stdout has none"},
		{kafkaSink, "transforms: {Reroute: {type: io.debezium.transforms.Filter}}", `config: transforms.Reroute.type: "io.debezium.transforms.Filter": want io.debezium.transforms.ByLogicalTableRouter`},
		{kafkaSink, "transforms: {Reroute: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: '(x', topic.replacement: y}}", `config: transforms.Reroute.topic.regex "(x": missing closing )`},
		{kafkaSink, "transforms: {Reroute: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: 'x', topic.replacement: '$2'}}", `config: transforms.Reroute.topic.replacement "$2": no group 2`},
		{kafkaSink, "transforms: {Reroute: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: 'x', topic.replacment: 'y'}}", `config: transforms.Reroute: unknown option "topic.replacment"`},
	} {
		_, err := parseConfig([]byte(fmt.Sprintf(base, tc.sink, tc.extra)), env(nil))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line starting %q", tc.extra, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the error repeats the salt: %v", err)
		}
	}
	// message.key.columns and tables[].key for one table.
	c, err := parseConfig([]byte(fmt.Sprintf(base, kafkaSink, "debezium: {message.key.columns: 'shop\\.orders:customer'}")), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	c.Tables[0].Key = []string{"order_id"}
	if _, err := listTableSources(context.Background(), c, nil); err == nil || err.Error() != "config: debezium.message.key.columns: table shop.orders: its key is set by tables[].key too; set one of them" {
		t.Errorf("message.key.columns with tables[].key: %v", err)
	}
}

// TestRunRefusesMasksThatCannotApply: a mask naming a column the table
// does not have, a hash of a non-string column and an excluded key column
// each stop the table before any event is written, with one line naming
// the option and the table.
func TestRunRefusesMasksThatCannotApply(t *testing.T) {
	catalog := bookshopCatalog(t)
	for _, tc := range []struct{ debezium, want string }{
		{`{column.mask.with.8.chars: 'bookshop\.orders\.custmer'}`, `table bookshop.orders: column.mask.with.8.chars: no column "custmer" (the table's columns: order_id, customer, status, amount)`},
		{`{column.mask.hash.v2.SHA-256.with.salt.pepper: 'bookshop\.orders\.amount'}`, "table bookshop.orders: column.mask.hash.v2.SHA-256.with.salt.…: column amount is double, and this option applies to string columns only"},
		{`{column.exclude.list: 'bookshop\.orders\.order_id'}`, `table bookshop.orders: column.exclude.list: "order_id" is the table's key and cannot be left out`},
	} {
		out := filepath.Join(t.TempDir(), "events.jsonl")
		cfg := writeConfig(t, "shop-cdc", catalog, fmt.Sprintf("{type: file, file: {path: '%s'}}\ndebezium: %s", out, tc.debezium), filepath.Join(t.TempDir(), "state.db"))
		lines, _, err := runOnce(t, context.Background(), "-c", cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "pepper") {
			t.Errorf("%s: got %v, want one line starting %q", tc.debezium, err, tc.want)
		}
		if len(withMsg(lines, "table stopped")) != 1 {
			t.Errorf("%s: no table stopped line: %v", tc.debezium, lines)
		}
		if b, _ := os.ReadFile(out); len(b) > 0 {
			t.Errorf("%s: events were written: %.300s", tc.debezium, b)
		}
	}
}
