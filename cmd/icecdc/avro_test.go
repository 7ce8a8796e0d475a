package main

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/registry"
)

// avroRecord decodes a record of Confluent's wire format with the schema
// the registry holds under its id; nil for a tombstone.
func avroRecord(t *testing.T, cl *registry.Client, b []byte) (map[string]any, int) {
	t.Helper()
	if b == nil {
		return nil, 0
	}
	if len(b) < 5 || b[0] != 0 {
		t.Fatalf("not the wire format: %q", b)
	}
	id := int(binary.BigEndian.Uint32(b[1:5]))
	text, err := cl.Schema(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := avro.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if _, err := sch.Decode(b[5:], &v); err != nil {
		t.Fatalf("decode with schema %d: %v", id, err)
	}
	return v, id
}

// TestRunAvro: format debezium-avro on the Kafka sink registers each
// table schema version under <topic>-key and <topic>-value before the
// first event that uses it, and writes every record (events, tombstones,
// transaction and schema-change records) in the wire format; a schema
// change mid-stream is a second registry version that the events after
// it carry. A registry that answers 503 keeps the table retrying (shown as
// failing) and loses nothing once it is back; a registry that refuses the
// next version stops the table with one line naming the subject and the
// table schema, and nothing after it is sent.
func TestRunAvro(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := newKafka(t)
	reg := srfake.New()
	defer reg.Close()
	var fault atomic.Value
	fault.Store("")
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		switch f := fault.Load().(string); {
		case f == "":
			return false
		case r.Method == http.MethodPost && f == "503":
			http.Error(w, `{"error_code":50003,"message":"registry restarting"}`, http.StatusServiceUnavailable)
		case r.Method == http.MethodPost && f == "409":
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte(`{"error_code":409,"message":"Schema being registered is incompatible with an earlier schema"}`))
		default:
			return false
		}
		return true
	})
	env, tbl := newOrders(ctx, t)
	step, evolve := tableSteps(ctx, t, &tbl)
	regURL := strings.Replace(reg.URL(), "http://", "http://icecdc:s3cret@", 1)
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	listen := freeAddr(t)
	sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1}}\nformat: debezium-avro\nschema_registry: {url: '%s'}\n"+
		"debezium: {include.schema.changes: true, provide.transaction.metadata: true}\nhttp: {listen: '%s'}", brokers[0], regURL, listen)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + listen + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cfg := writeConfig(t, "shop-cdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
	const topic = "icecdc.bookshop.orders"
	read := func(topic string) []*kgo.Record {
		recs, err := readCommitted(ctx, brokers, topic)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	versions := func(subject string) int {
		n := 0
		for v := 1; ; v++ {
			if _, ok := reg.GetSchema(subject, v); !ok {
				return n
			}
			n++
		}
	}

	step("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{scenario.Order(1, "ann", "new", 10), scenario.Order(2, "bob", "new", 20)})
	})
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "the first events", func() bool { return len(read(topic)) == 2 })

	// The registry is down when the next schema version comes.
	fault.Store("503")
	evolve("add note", func(us *table.UpdateSchema) {
		us.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "for the courier", false, nil)
	})
	step("append with note", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{{"order_id": int64(3), "customer": "cy", "status": "new", "amount": 30.0, "note": "gift"}})
	})
	d.waitFor(t, "the outage to be seen", func() bool { return len(d.logLines("sink failing; retrying")) > 0 })
	for _, path := range []string{"/readyz", "/status"} {
		code, body := get(path)
		if !strings.Contains(body, "register subject icecdc.bookshop.orders-value: HTTP 503") || strings.Contains(body, "s3cret") ||
			path == "/readyz" && (code != http.StatusServiceUnavailable || !strings.Contains(body, "bookshop.orders: sink failing since")) {
			t.Fatalf("%s during the outage: %d %s", path, code, body)
		}
	}
	if n := len(read(topic)); n != 2 {
		t.Fatalf("%d events during the outage, want the 2 before it", n)
	}
	fault.Store("")
	step("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, iceberg.EqualTo(iceberg.Reference("order_id"), int64(1)))
	})
	d.waitFor(t, "every event", func() bool { return len(read(topic)) == 5 }) // 3 c, d, tombstone
	if l := d.logLines("sink failing; retrying")[0]["err"].(string); !strings.Contains(l, "schema registry "+reg.URL()+": register subject icecdc.bookshop.orders-value: HTTP 503: registry restarting") ||
		strings.Contains(l, "s3cret") {
		t.Fatalf("outage logged as %q", l)
	}

	cl, err := registry.New(registry.Config{URL: reg.URL()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	ids := map[int]bool{}
	for _, r := range read(topic) {
		k, _ := avroRecord(t, cl, r.Key)
		v, id := avroRecord(t, cl, r.Value)
		if v == nil {
			got = append(got, fmt.Sprintf("tombstone %v", k["order_id"]))
			continue
		}
		ids[id] = true
		img, _ := v["after"].(map[string]any)
		if v["op"] == "d" {
			img = v["before"].(map[string]any)
		}
		got = append(got, fmt.Sprintf("%s %v %v note=%v", v["op"], k["order_id"], img["customer"], img["note"]))
	}
	want := "c 1 ann note=<nil>|c 2 bob note=<nil>|c 3 cy note=gift|d 1 ann note=<nil>|tombstone 1"
	if strings.Join(got, "|") != want {
		t.Fatalf("events %s\nwant %s", strings.Join(got, "|"), want)
	}
	if len(ids) != 2 || versions(topic+"-value") != 2 || versions(topic+"-key") != 1 {
		t.Fatalf("value ids %v, versions: value %d, key %d; want 2, 2, 1", ids, versions(topic+"-value"), versions(topic+"-key"))
	}
	for _, aux := range []string{"icecdc.transaction", "icecdc.schema-changes"} {
		recs := read(aux)
		if len(recs) == 0 {
			t.Fatalf("no records on %s", aux)
		}
		for _, r := range recs {
			avroRecord(t, cl, r.Key)
			if v, _ := avroRecord(t, cl, r.Value); v == nil {
				t.Fatalf("%s: a null value", aux)
			}
		}
		if versions(aux+"-value") != 1 {
			t.Fatalf("%s-value: %d versions", aux, versions(aux+"-value"))
		}
	}

	// A refused version stops the table; nothing after it is sent.
	fault.Store("409")
	evolve("add wrap", func(us *table.UpdateSchema) {
		us.AddColumn([]string{"wrap"}, iceberg.PrimitiveTypes.Bool, "", false, nil)
	})
	step("append after the change", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{scenario.Order(4, "dee", "new", 40)})
	})
	// The one table stopped, so the daemon ends, with the table's line.
	var exit error
	select {
	case exit = <-d.done:
		d.done <- nil
	case <-ctx.Done():
		t.Fatal("the daemon did not stop the table")
	}
	if exit == nil || len(d.logLines("table stopped")) != 1 {
		t.Fatalf("exit %v, logs:\n%s", exit, d.logs.String())
	}
	l := d.logLines("table stopped")[0]["err"].(string)
	if !strings.HasSuffix(exit.Error(), l) {
		t.Fatalf("exit line %q, stop line %q", exit, l)
	}
	for _, w := range []string{"schema registry " + reg.URL(), "subject icecdc.bookshop.orders-value", "table bookshop.orders schema 2",
		"refused (HTTP 409): Schema being registered is incompatible"} {
		if !strings.Contains(l, w) || strings.Contains(l, "s3cret") || strings.Contains(l, "\n") {
			t.Fatalf("stop line %q lacks %q", l, w)
		}
	}
	if n := len(read(topic)); n != 5 {
		t.Fatalf("%d events after the refusal, want 5", n)
	}
}

// TestConfigAvro: debezium-avro wants the kafka sink and a registry; a
// registry without the format, a bad strategy or adjustment mode, and a
// URL whose password url.Parse refuses are each one error naming the key,
// never showing the password.
func TestConfigAvro(t *testing.T) {
	const kafkaSink = "sink:\n  type: kafka\n  kafka: {brokers: ['localhost:9092']}\n"
	base := strings.Replace(goodConfig, "format: debezium-json\n", "", 1)
	base = base[:strings.Index(base, "sink:")] + kafkaSink + "state: {path: /var/lib/icecdc/state.db}\n"
	getenv := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	ok := base + "format: debezium-avro\nschema_registry: {url: 'http://reg:8081', username: u, password: Pw-Qr4, subject_name_strategy: topic_record}\n" +
		"debezium: {schema.name.adjustment.mode: avro, field.name.adjustment.mode: avro_unicode}\n"
	if _, err := parseConfig([]byte(ok), getenv); err != nil {
		t.Fatalf("a good avro configuration: %v", err)
	}
	for _, tc := range []struct{ cfg, want string }{
		{base + "format: debezium-avro\n", "schema_registry.url: required"},
		{base + "schema_registry: {url: 'http://reg:8081'}\n", "schema_registry: set, but format is debezium-connect-json"},
		{goodConfig + "schema_registry: {url: 'http://reg:8081'}\n", "schema_registry: set, but format is debezium-json"},
		{strings.Replace(goodConfig, "format: debezium-json", "format: debezium-avro", 1) + "schema_registry: {url: 'http://reg:8081'}\n", "debezium-avro writes Kafka records"},
		{base + "format: debezium-avro\nschema_registry: {url: 'http://reg:8081', subject_name_strategy: name}\n", `schema_registry.subject_name_strategy: "name": want topic, record or topic_record`},
		{base + "format: debezium-avro\nschema_registry: {url: 'http://reg:8081', username: u, bearer_token: Pw-Qr4}\n", "schema_registry.bearer_token: set with username"},
		{base + "format: debezium-avro\nschema_registry: {url: 'http://u:Pw-%zz-Qr4@reg:8081'}\n", "schema_registry.url"},
		{base + "format: debezium-avro\nschema_registry: {url: 'ftp://u:Pw-Qr4@reg:8081'}\n", "schema_registry.url"},
		{base + "format: debezium-avro\nschema_registry: {url: 'http://reg:8081', ca_file: /nonexistent/ca.pem}\n", "schema_registry.ca_file"},
		{base + "format: debezium-avro\nschema_registry: {url: 'http://reg:8081'}\ndebezium: {field.name.adjustment.mode: avro2}\n", `debezium.field.name.adjustment.mode "avro2": want none, avro or avro_unicode`},
	} {
		_, err := parseConfig([]byte(tc.cfg), getenv)
		if err == nil {
			t.Fatalf("accepted:\n%s", tc.cfg)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "Pw-") {
			t.Errorf("want %q, without the password: %s", tc.want, msg)
		}
	}
}

// avroChanges returns the arguments of icecdc changes --format
// debezium-avro on an orders table of one insert, and a registry that
// closes when the test ends.
func avroChanges(t *testing.T) ([]string, *srfake.Registry) {
	ctx := context.Background()
	env, tbl := newOrders(ctx, t)
	if _, err := scenario.Append(ctx, tbl, []map[string]any{scenario.Order(1, "ann", "new", 10.5)}); err != nil {
		t.Fatal(err)
	}
	reg := srfake.New()
	t.Cleanup(reg.Close)
	return []string{"changes", "--catalog-uri", env.CatalogURI, "--warehouse", env.Warehouse, "--catalog-name", scenario.CatalogName,
		"--table", "bookshop.orders", "--format", "debezium-avro"}, reg
}

// TestChangesAvro: icecdc changes --format debezium-avro registers the
// schemas and prints each record as the JSON of the Avro value read back
// from the registry; without --schema-registry-url it says what it needs.
func TestChangesAvro(t *testing.T) {
	args, reg := avroChanges(t)
	args = append(args, "--with-key")
	out, errOut, code := runCmd(args...)
	if code == 0 || !strings.Contains(errOut, "needs --schema-registry-url") {
		t.Fatalf("without a registry: exit %d, %s", code, errOut)
	}
	out, errOut, code = runCmd(append(args, "--schema-registry-url", reg.URL())...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	key, value, ok := strings.Cut(strings.TrimSpace(out), "\t")
	if !ok || key != `{"order_id":1}` || !strings.Contains(value, `"after":{"order_id":1,"customer":"ann","status":"new","amount":10.5}`) ||
		!strings.Contains(value, `"op":"r"`) && !strings.Contains(value, `"op":"c"`) {
		t.Fatalf("printed %q", out)
	}
	if _, ok := reg.GetSchema("icecdc.bookshop.orders-value", 1); !ok {
		t.Fatal("the value schema is not registered")
	}
}

// TestRunAvroRegistryFlag: icecdc run --schema-registry-url gives
// debezium-avro its registry when the file names none, and overrides the
// one the file names; without either the check names both.
func TestRunAvroRegistryFlag(t *testing.T) {
	ctx := context.Background()
	brokers := newKafka(t)
	env, tbl := newOrders(ctx, t)
	if _, err := scenario.Append(ctx, tbl, []map[string]any{scenario.Order(1, "ann", "new", 10)}); err != nil {
		t.Fatal(err)
	}
	reg := srfake.New()
	defer reg.Close()
	cl, err := registry.New(registry.Config{URL: reg.URL()})
	if err != nil {
		t.Fatal(err)
	}
	catalog := fmt.Sprintf("{name: %s, type: sql, uri: '%s', warehouse: '%s'}", scenario.CatalogName, env.CatalogURI, env.Warehouse)
	sink := fmt.Sprintf("{type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1}}\nformat: debezium-avro", brokers[0])
	bare := writeConfig(t, "shop-cdc", catalog, sink, filepath.Join(t.TempDir(), "state.db"))
	if _, _, err := runOnce(t, ctx, "-c", bare); err == nil ||
		!strings.Contains(err.Error(), "schema_registry.url: required with format debezium-avro (or --schema-registry-url on icecdc run)") {
		t.Fatalf("no registry anywhere: %v", err)
	}
	// The file's registry is a closed port: only the flag's can serve.
	dead := writeConfig(t, "shop-cdc", catalog, sink+"\nschema_registry: {url: 'http://"+freeAddr(t)+"'}", filepath.Join(t.TempDir(), "state.db"))
	for _, cfg := range []string{bare, dead} {
		if _, logs, err := runOnce(t, ctx, "-c", cfg, "--schema-registry-url", reg.URL()); err != nil {
			t.Fatalf("%v\n%s", err, logs)
		}
	}
	recs, err := readCommitted(ctx, brokers, "icecdc.bookshop.orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want the insert once per run", len(recs))
	}
	for _, r := range recs {
		v, id := avroRecord(t, cl, r.Value)
		if _, ok := reg.GetSchema("icecdc.bookshop.orders-value", 1); !ok || id == 0 || v["after"] == nil {
			t.Fatalf("record %v (schema %d) not of the registered value schema", v, id)
		}
	}
}

// TestChangesAvroBadRegistry: icecdc changes --format debezium-avro reads
// each record back by its schema id; a registry that then does not know
// the id, answers a schema that is not Avro, answers another Avro schema
// than the one registered, or sends an answer without end fails the
// command with one line naming the registry (without credentials), the
// id and the subject, and prints no record.
func TestChangesAvroBadRegistry(t *testing.T) {
	args, reg := avroChanges(t)
	var mode atomic.Value
	mode.Store("")
	reg.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, "/schemas/ids/") {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		switch mode.Load().(string) {
		case "unknown":
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error_code":40403,"message":"Schema not found"}`))
		case "protobuf":
			w.Write([]byte(`{"schema":"syntax = \"proto3\"; message Order { int64 order_id = 1; }","schemaType":"PROTOBUF"}`))
		case "other":
			w.Write([]byte(`{"schema":"{\"type\":\"record\",\"name\":\"Envelope\",\"namespace\":\"icecdc.bookshop.orders\",\"fields\":[{\"name\":\"op\",\"type\":\"string\"}]}"}`))
		case "endless":
			io.Copy(w, io.MultiReader(strings.NewReader(`{"schema":"`), endless{}))
		default:
			return false
		}
		return true
	})
	u := strings.Replace(reg.URL(), "http://", "http://icecdc:Pw-Qr4@", 1)
	args = append(args, "--schema-registry-url", u)
	for _, tc := range []struct{ mode, want string }{
		{"unknown", "HTTP 404: Schema not found (subject icecdc.bookshop.orders-value)"},
		{"protobuf", "not an Avro schema (type PROTOBUF) (subject icecdc.bookshop.orders-value)"},
		{"other", "(subject icecdc.bookshop.orders-value): the registry answers another schema than the one registered under that id"},
		{"endless", "answer longer than"},
	} {
		mode.Store(tc.mode)
		out, errOut, code := runCmd(args...)
		msg := strings.TrimSpace(errOut)
		if code == 0 || out != "" || strings.Count(msg, "\n") > 0 || strings.Contains(msg, "Pw-") {
			t.Fatalf("%s: exit %d, printed %q, said %q", tc.mode, code, out, msg)
		}
		if !strings.Contains(msg, "schema registry "+reg.URL()+": schema id ") || !strings.Contains(msg, tc.want) {
			t.Fatalf("%s: %q lacks the registry, the id or %q", tc.mode, msg, tc.want)
		}
		t.Logf("%s: %s", tc.mode, msg)
	}
	mode.Store("")
	if out, errOut, code := runCmd(args...); code != 0 || !strings.Contains(out, `"op"`) {
		t.Fatalf("a registry that answers: exit %d, %s%s", code, out, errOut)
	}
}

// endless reads x for ever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestRegistryFlagEnv: --schema-registry-url expands ${NAME}, so that the
// registry's password can stay out of the process list (written in
// single quotes, the shell leaves the reference alone); an unset
// variable is one line naming it.
func TestRegistryFlagEnv(t *testing.T) {
	args, _ := avroChanges(t)
	reg := srfake.New(srfake.WithAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("icecdc:Pw-Qr4"))))
	defer reg.Close()
	u := strings.Replace(reg.URL(), "http://", "http://icecdc:${ICECDC_TEST_REGISTRY_PASSWORD}@", 1)
	t.Setenv("ICECDC_TEST_REGISTRY_PASSWORD", "Pw-Qr4")
	if out, errOut, code := runCmd(append(args, "--schema-registry-url", u)...); code != 0 || !strings.Contains(out, `"op"`) {
		t.Fatalf("changes with ${ICECDC_TEST_REGISTRY_PASSWORD}: exit %d, %s%s", code, out, errOut)
	}
	sink := "{type: kafka, kafka: {brokers: ['" + freeAddr(t) + "']}}\nformat: debezium-avro"
	f := configFlags{path: writeConfig(t, "p", bookshopCatalog(t), sink, filepath.Join(t.TempDir(), "state.db")), registryURL: u}
	if cfg, err := f.load(); err != nil || cfg.SchemaRegistry.URL != strings.Replace(reg.URL(), "http://", "http://icecdc:Pw-Qr4@", 1) {
		t.Fatalf("run's --schema-registry-url: %v", err)
	}
	t.Setenv("ICECDC_TEST_REGISTRY_PASSWORD", "")
	_, errOut, code := runCmd(append(args, "--schema-registry-url", u)...)
	if want := "changes: --schema-registry-url: environment variable ICECDC_TEST_REGISTRY_PASSWORD is not set"; code == 0 || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Fatalf("changes with the variable unset: exit %d, %q", code, errOut)
	}
	if _, err := f.load(); err == nil || err.Error() != "--schema-registry-url: environment variable ICECDC_TEST_REGISTRY_PASSWORD is not set" {
		t.Fatalf("run with the variable unset: %v", err)
	}
}
