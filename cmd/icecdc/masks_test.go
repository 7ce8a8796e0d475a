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
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/icecdc/icecdc/internal/scenario"
)

// debeziumHashes returns Debezium's own hashes of values under option,
// from cdc/testdata/debezium-masks.jsonl (MaskStrings' output, see
// interop/maven/masks).
func debeziumHashes(t *testing.T, option string) map[string]string {
	t.Helper()
	f, err := os.Open("../../cdc/testdata/debezium-masks.jsonl")
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
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	env, err := scenario.NewEnv(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"bookshop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
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
