package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const goodConfig = `
name: shop-cdc
catalog:
  name: local
  type: sql
  uri: file:/var/lib/icecdc/catalog.db
  warehouse: file:///var/lib/icecdc/warehouse
  properties: {}
tables:
  - name: shop.orders
    branch: main
    start: earliest
    key: [order_id]
    columns: [status, address.city]
    net: true
  - name: audit.*
    start: latest
poll: {interval: 2s}
net_max_rows: 5000
format: debezium-json
sink:
  type: webhook
  webhook: {url: "https://hooks.example/icecdc", secret: "${ICECDC_WEBHOOK_SECRET}", timeout: 15s,
            batch: {max_events: 500, max_bytes: 1048576}}
state: {path: /var/lib/icecdc/state.db}
http: {listen: 127.0.0.1:9464}
`

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// testSecret is a Standard Webhooks secret: the base64 of 24 bytes.
const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]byte(goodConfig), env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Sink.Webhook.Secret != testSecret || c.Poll.Interval != 2*time.Second || c.Sink.Webhook.Timeout != 15*time.Second {
		t.Fatalf("parsed %+v", c)
	}
	if len(c.Tables) != 2 || c.Tables[0].Key[0] != "order_id" || c.Tables[1].Branch != "main" {
		t.Fatalf("tables %+v", c.Tables)
	}
	if !c.Tables[0].Net || c.Tables[1].Net || strings.Join(c.Tables[0].Columns, ",") != "status,address.city" || c.NetMaxRows != 5000 {
		t.Fatalf("net and columns: %+v, net_max_rows %d", c.Tables, c.NetMaxRows)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	tests := []struct {
		name, edit, want string
	}{
		{"missing env", "", "ICECDC_WEBHOOK_SECRET is not set"},
		{"unknown field", "sinc: {}\n", `unknown key "sinc" (did you mean "sink"? valid keys: name, catalog, tables,`},
		{"bad start", "start: earliest", "tables[0].start"},
		{"bad sink", "type: webhook", "sink.type"},
		{"bad url", `url: "https://hooks.example/icecdc"`, "sink.webhook.url"},
		{"bad catalog", "type: sql", "catalog.type"},
		{"no name", "name: shop-cdc", "name: required"},
		{"short poll", "interval: 2s", "poll.interval"},
		{"bad table name", "name: shop.orders", "tables[0].name"},
		{"bad duration", "timeout: 15s", "15 parsecs"},
		{"short secret", "", "sink.webhook.secret"},
		{"short whsec secret", "", "sink.webhook.secret"},
	}
	repl := map[string]string{
		"bad start":      "start: yesterday",
		"bad sink":       "type: carrier-pigeon",
		"bad url":        `url: "ftp://x"`,
		"bad catalog":    "type: oracle",
		"no name":        "name: ''",
		"short poll":     "interval: 1ms",
		"bad table name": "name: orders",
		"bad duration":   "timeout: 15 parsecs",
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := goodConfig
			getenv := secret
			switch tc.name {
			case "missing env":
				getenv = env(nil)
			case "short secret":
				getenv = env(map[string]string{"ICECDC_WEBHOOK_SECRET": "tiny-s3cret"})
			case "short whsec secret":
				getenv = env(map[string]string{"ICECDC_WEBHOOK_SECRET": "whsec_YWJj"})
			case "unknown field":
				cfg += tc.edit
			default:
				cfg = strings.Replace(cfg, tc.edit, repl[tc.name], 1)
			}
			_, err := parseConfig([]byte(cfg), getenv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if v := getenv("ICECDC_WEBHOOK_SECRET"); v != "" && strings.Contains(err.Error(), v) {
				t.Fatalf("error %v quotes the secret", err)
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte("name: x\ntables: [{name: a.b}]\n"))
	f.Add([]byte("{"))
	f.Add([]byte("name: ${"))
	f.Add([]byte("name: 'a # ${X}' # ${Y}\ntables: [{name: \"a.b\"}]\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := parseConfig(raw, env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret}))
		if err == nil && (c.Name == "" || len(c.Tables) == 0) {
			t.Fatalf("accepted an invalid config: %+v", c)
		}
	})
}

// The shipped example configs must stay valid.
func TestExampleConfigs(t *testing.T) {
	for _, p := range []string{"../../examples/icecdc.yaml", "../../examples/icecdc.compose.yaml"} {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parseConfig(raw, env(map[string]string{
			"ICECDC_CATALOG_URI": "http://rest:8181", "ICECDC_S3_ENDPOINT": "http://s3:5000",
			"ICECDC_S3_REGION": "us-east-1", "ICECDC_KAFKA_BROKERS": "kafka:9092",
		})); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// A config without a sink section is refused, naming sink.type; it once
// meant stdout. --sink still fills it in.
func TestConfigSinkRequired(t *testing.T) {
	noSink := "name: p\ntables: [{name: a.b}]\n"
	_, err := parseConfig([]byte(noSink), env(nil))
	if err == nil || !strings.Contains(err.Error(), "sink.type: required") {
		t.Fatalf("no sink section: %v, want an error naming sink.type", err)
	}
	path := filepath.Join(t.TempDir(), "icecdc.yaml")
	if err := os.WriteFile(path, []byte(noSink), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&configFlags{path: path}).load(); err == nil || !strings.Contains(err.Error(), "sink.type") {
		t.Fatalf("no sink, no flag: %v", err)
	}
	c, err := (&configFlags{path: path, sinkType: "stdout"}).load()
	if err != nil || c.Sink.Type != "stdout" {
		t.Fatalf("--sink stdout: %v %+v", err, c)
	}
	if _, err := (&configFlags{path: path, sinkType: "pigeon"}).load(); err == nil || !strings.Contains(err.Error(), `sink.type: "pigeon"`) {
		t.Fatalf("--sink pigeon: %v", err)
	}
}

// TestConfigCatalogs accepts every linked and tested catalog and refuses
// others at load time, naming the ones there are; a hive catalog needs the
// thrift:// URI of one metastore, and its lock settings must be numbers
// iceberg-go reads; object-store properties icecdc would misread are
// refused naming them.
func TestConfigCatalogs(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	const section = "catalog:\n  name: local\n  type: sql\n  uri: file:/var/lib/icecdc/catalog.db\n" +
		"  warehouse: file:///var/lib/icecdc/warehouse\n  properties: {}\n"
	if !strings.Contains(goodConfig, section) {
		t.Fatal("goodConfig's catalog section changed")
	}
	withCatalog := func(cat string) []byte { return []byte(strings.Replace(goodConfig, section, "catalog: "+cat+"\n", 1)) }
	for _, cat := range []string{
		"{type: sql, uri: 'file:/c.db'}", "{type: rest, uri: 'http://rest:8181'}", "{type: glue}", "{type: hadoop, warehouse: 'file:///wh'}",
		"{type: hive, uri: 'thrift://metastore.internal:9083', warehouse: 'file:///wh'}",
		"{type: hive, uri: 'thrift://metastore.internal'}",
		"{type: hive, properties: {uri: 'thrift://10.0.0.7:9083', iceberg.hive.lock-check-min-wait-ms: '100', iceberg.hive.lock-check-max-wait-ms: '2000', lock-check-retries: '8'}}",
	} {
		if _, err := parseConfig(withCatalog(cat), secret); err != nil {
			t.Errorf("catalog %s: %v", cat, err)
		}
	}
	tests := []struct{ cat, want string }{
		{"{type: nessie, uri: 'http://nessie:19120'}", `config: catalog.type: "nessie": want sql, rest, glue, hadoop, hive`},
		{"{type: hive}", `config: catalog.uri: required for catalog type hive: the metastore's thrift://host:port`},
		{"{type: hive, uri: 'file:/c.db'}", `config: catalog.uri: file:/c.db: want thrift://host:port (the metastore's Thrift address)`},
		{"{type: hive, uri: 'thrift://a:9083,thrift://b:9083'}", `config: catalog.uri: a list of metastores is not supported: give one thrift://host:port`},
		{"{type: hive, uri: 'thrift://icecdc:Pw-9Kq3@hms:90830'}", `config: catalog.uri: thrift://icecdc:xxxxx@hms:90830: port "90830": want 1 to 65535`},
		{"{properties: {s3.path-style-access: yes please}}", `config: catalog.properties: s3.path-style-access: "yes please": want true or false`},
		{"{properties: {s3.request-timeout: soon}}", `config: catalog.properties: s3.request-timeout: "soon": want seconds (60) or a duration (1m)`},
		{"{type: hive, uri: 'thrift://hms:9083', properties: {iceberg.hive.lock-check-max-wait-ms: 5s}}",
			`config: catalog.properties: iceberg.hive.lock-check-max-wait-ms: "5s": want a positive whole number of milliseconds`},
		{"{type: hive, uri: 'thrift://hms:9083', properties: {lock-check-retries: '0'}}", `config: catalog.properties: lock-check-retries: "0": want a positive whole number`},
		{"{type: hive, uri: 'thrift://hms:9083', properties: {iceberg.hive.lock-check-min-wait-ms: '6000'}}",
			`config: catalog.properties: iceberg.hive.lock-check-min-wait-ms (6000) must be less than iceberg.hive.lock-check-max-wait-ms (5000, default 5000)`},
	}
	for _, tc := range tests {
		_, err := parseConfig(withCatalog(tc.cat), secret)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("catalog %s: got %v, want %q", tc.cat, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "Pw-9Kq3") {
			t.Errorf("catalog %s: the error shows the URI's password: %v", tc.cat, err)
		}
	}
	good := strings.Replace(goodConfig, "properties: {}", "properties: {s3.path-style-access: 'false', s3.request-timeout: '30', s3.connect-timeout: 5s}", 1)
	if _, err := parseConfig([]byte(good), secret); err != nil {
		t.Errorf("valid s3 properties: %v", err)
	}
}

// TestChangesCatalogChecks: a catalog type icecdc does not read, and a hive
// catalog without a usable metastore URI, are refused before anything is
// opened, in one line that never shows the URI's password.
func TestChangesCatalogChecks(t *testing.T) {
	failsWith(t, []string{"--catalog-type", "nessie", "--catalog-uri", "http://localhost:19120", "--table", "shop.orders"},
		`changes: --catalog-type "nessie": want sql, rest, glue, hadoop, hive`)
	failsWith(t, []string{"--catalog-type", "hive", "--table", "shop.orders"},
		"changes: --catalog-uri required for catalog type hive: the metastore's thrift://host:port")
	out, errOut, code := runCmd("changes", "--catalog-type", "hive", "--catalog-uri", "http://icecdc:Pw-9Kq3@localhost:9083", "--table", "shop.orders")
	checkOneLineError(t, code, errOut, "changes: --catalog-uri http://icecdc:xxxxx@localhost:9083: want thrift://host:port")
	if out != "" || strings.Contains(errOut, "Pw-9Kq3") {
		t.Fatalf("stdout %q, stderr %q", out, errOut)
	}
}

func TestConfigIOConcurrency(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	c, err := parseConfig([]byte(goodConfig), secret)
	if err != nil {
		t.Fatal(err)
	}
	if c.IO.Concurrency != 16 {
		t.Fatalf("io.concurrency %d, want the default 16", c.IO.Concurrency)
	}
	if c, err = parseConfig([]byte(goodConfig+"io: {concurrency: 4}\n"), secret); err != nil || c.IO.Concurrency != 4 {
		t.Fatalf("io.concurrency 4: %v, %v", c, err)
	}
	if _, err := parseConfig([]byte(goodConfig+"io: {concurrency: -1}\n"), secret); err == nil || !strings.Contains(err.Error(), "io.concurrency") {
		t.Fatalf("io.concurrency -1: error %v, want one naming the field", err)
	}
}

func TestClusterConfig(t *testing.T) {
	base := "name: p\ntables: [{name: shop.orders}]\n"
	kafkaSink := "sink: {type: kafka, kafka: {brokers: [\"k:9092\"], checkpoint_topic: cps}}\n"
	c, err := parseConfig([]byte(base+kafkaSink+"cluster: {type: kafka, group: g}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Cluster.Enabled() || c.Cluster.Topic != "icecdc.cluster.g" || c.Cluster.Partitions != 64 ||
		c.Cluster.Kafka.Brokers[0] != "k:9092" || c.Cluster.Kafka.CheckpointTopic != "cps" {
		t.Fatalf("defaults: %+v", c.Cluster)
	}
	// Every process that reads the same file computes the same
	// fingerprint (no pointer or map order in it), and a setting that
	// changes the events changes it.
	c2, err := parseConfig([]byte(base+kafkaSink+"cluster: {type: kafka, group: g}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := configFingerprint(c), configFingerprint(c2); a != b {
		t.Fatalf("one config, two fingerprints: %s and %s", a, b)
	}
	c3, err := parseConfig([]byte(base+kafkaSink+"cluster: {type: kafka, group: g}\ndebezium: {time.precision.mode: connect}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if configFingerprint(c) == configFingerprint(c3) {
		t.Fatal("a different time.precision.mode left the fingerprint unchanged")
	}
	if c, err := parseConfig([]byte(base+kafkaSink), env(nil)); err != nil || c.Cluster.Enabled() {
		t.Fatalf("no cluster section: enabled %v, %v", c != nil && c.Cluster.Enabled(), err)
	}
	for cfg, want := range map[string]string{
		base + kafkaSink + "cluster: {type: kafka}\n":                                    "cluster.group: required",
		base + kafkaSink + "cluster: {type: zookeeper, group: g}\n":                      `cluster.type: "zookeeper"`,
		base + "sink: {type: file, file: {path: x}}\ncluster: {type: kafka, group: g}\n": "cluster.kafka.brokers: required",
		base + kafkaSink + "cluster: {type: kafka, group: g, session_timeout: 10ms}\n":   "cluster.session_timeout",
		base + kafkaSink + "cluster: {type: kafka, group: g, partitions: -1}\n":          "cluster.partitions",
	} {
		_, err := parseConfig([]byte(cfg), env(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", cfg, err, want)
		}
	}
}

func TestConfigMaxMemory(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	c, err := parseConfig([]byte(goodConfig), secret)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxMemory != 512<<20 || c.Tables[0].MaxMemory != 512<<20 {
		t.Fatalf("max_memory %d (table %d), want the default 512MiB", c.MaxMemory, c.Tables[0].MaxMemory)
	}
	cfg := strings.Replace(goodConfig+"max_memory: 1GiB\n", "key: [order_id]", "key: [order_id]\n    max_memory: 64MB", 1)
	if c, err = parseConfig([]byte(cfg), secret); err != nil {
		t.Fatal(err)
	}
	if c.MaxMemory != 1<<30 || c.Tables[0].MaxMemory != 64_000_000 || c.Tables[1].MaxMemory != 1<<30 {
		t.Fatalf("max_memory %d, tables %d and %d", c.MaxMemory, c.Tables[0].MaxMemory, c.Tables[1].MaxMemory)
	}
	if c, err = parseConfig([]byte(goodConfig+"max_memory: 1048576\n"), secret); err != nil || c.MaxMemory != 1<<20 {
		t.Fatalf("max_memory in bytes: %v, %v", c, err)
	}
	for _, bad := range []string{"lots", "-1MiB", "12 parsecs"} {
		_, err := parseConfig([]byte(goodConfig+"max_memory: "+bad+"\n"), secret)
		if err == nil || !strings.Contains(err.Error(), "max_memory") {
			t.Fatalf("max_memory %s: error %v, want one naming the field", bad, err)
		}
	}
}

// TestConfigBounds: sizes and counts out of range, and settings that do
// not go together, are refused with one line naming the setting.
func TestConfigBounds(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	for _, tc := range []struct{ add, want string }{
		{"chunk: 5000000\n", "chunk: 5000000: want 1 to 1000000 events"},
		{"chunk: -1\n", "chunk: -1: want 1 to 1000000 events"},
		{"chunk_bytes: 1GiB\n", "chunk_bytes: 1.0 GiB: want at most 256 MiB"},
		{"chunk_bytes: 1Mx\n", `chunk_bytes: "1Mx" is not a size`},
		{"io: {concurrency: 5000}\n", "io.concurrency: 5000: want 1 to 1024"},
		{"hold_interval: soon\n", "hold_interval"},
	} {
		_, err := parseConfig([]byte(goodConfig+tc.add), secret)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line with %q", tc.add, err, tc.want)
		}
	}
	for _, tc := range []struct{ from, to, want string }{
		{"timeout: 15s,", "timeout: 15s, cloudevents_mode: bin,", `sink.webhook.cloudevents_mode: "bin": want structured or binary`},
		{"timeout: 15s,", "timeout: 15s, cloudevents_mode: binary,", "sink.webhook.cloudevents_mode: binary needs sink.webhook.cloudevents: true"},
		{"format: debezium-json\n", "format: debezium-json\ndebezium: {provide.transaction.metadata: true}\n",
			"debezium.provide.transaction.metadata: only the kafka sink writes transaction records (and 1 more error)"},
	} {
		_, err := parseConfig([]byte(strings.Replace(goodConfig, tc.from, tc.to, 1)), secret)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.to, err, tc.want)
		}
	}
	kafkaSink := "name: p\ntables: [{name: shop.orders, net: true}]\nsink: {type: kafka, kafka: {brokers: [k:9092]}}\n"
	_, err := parseConfig([]byte(kafkaSink+"debezium: {provide.transaction.metadata: true}\n"), secret)
	if err == nil || !strings.Contains(err.Error(), "table shop.orders: not with columns or net") {
		t.Errorf("transaction metadata with a net table: error %v", err)
	}
}

// TestConfigErrorsSpeakYAML: the errors of a mistyped key, a value of the
// wrong type, a tab and several mistakes at once are one line each, in
// the configuration's terms, never Go's (a struct dump, !!int).
func TestConfigErrorsSpeakYAML(t *testing.T) {
	secret := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	for _, tc := range []struct{ doc, want string }{
		{goodConfig + "poll2: {}\n", `config: line 27: unknown key "poll2" (did you mean "poll"? valid keys: name, catalog, tables, poll, format,`},
		{strings.Replace(goodConfig, "poll: {interval: 2s}", "poll: {intervall: 2s}", 1),
			`config: line 18: poll: unknown key "intervall" (did you mean "interval"? valid keys: interval, max_interval)`},
		{strings.Replace(goodConfig, "    branch: main", "    brnch: main", 1),
			`config: line 11: tables[0]: unknown key "brnch" (did you mean "branch"? valid keys: name, metadata, branch, start, key, max_memory, columns, net, hold)`},
		{strings.Replace(goodConfig, "timeout: 15s,", "timeout: 15s, batch_size: 3,", 1),
			`config: line 23: sink.webhook: unknown key "batch_size" (valid keys: url, secret, timeout, cloudevents, cloudevents_mode, batch)`},
		{goodConfig + "cluster: {kafka: {sasl: {mechanizm: plain}}}\n", `cluster.kafka.sasl: unknown key "mechanizm" (did you mean "mechanism"? valid keys: mechanism, user, password)`},
		{strings.Replace(goodConfig, "poll: {interval: 2s}", "poll: {interval: 1}", 1), "config: line 18: poll.interval: 1 is not a duration (e.g. 1s)"},
		{strings.Replace(goodConfig, "poll: {interval: 2s}", "poll: 2s", 1), "config: line 18: poll: want a section with keys (interval, max_interval), not 2s"},
		{strings.Replace(goodConfig, "    net: true", "    net: maybe", 1), "config: line 15: tables[0].net: maybe is not true or false"},
		{strings.Replace(goodConfig, "key: [order_id]", "key: order_id", 1), "config: line 13: tables[0].key: want a list ([a, b] or lines starting with -), not order_id"},
		{goodConfig + "chunk: many\n", "config: line 27: chunk: many is not a whole number"},
		{goodConfig + "chunk: 1.5\n", "config: line 27: chunk: 1.5 is not a whole number"},
		{goodConfig + "cluster: {partitions: 99999999999}\n", "config: line 27: cluster.partitions: 99999999999 is not a whole number from -2147483648 to 2147483647"},
		{goodConfig + "max_memory: lots\n", `config: line 27: max_memory: "lots" is not a size`},
		{goodConfig + "name: again\n", `config: line 27: mapping key "name" already defined at line 2`},
		{"name: p\npoll:\n\tinterval: 2s\n", "config: line 3: a tab indents the line: YAML indents with spaces only"},
		{"name: p\ntables:\n  - name: a.b\n \t start: earliest\n", "config: line 4: a tab indents the line: YAML indents with spaces only"},
		{"- name: p\n", "config: line 1: want a section with keys (name, catalog,"},
		{"name: ''\ntables: [{name: a.b}]\nsink: {type: pigeon}\n", `config: name: required (the pipeline name) (and 1 more error)`},
		{"poll: {intervall: 1s, max: 2}\nchunk: x\n", `config: line 1: poll: unknown key "intervall" (did you mean "interval"? valid keys: interval, max_interval) (and 2 more errors)`},
	} {
		_, err := parseConfig([]byte(tc.doc), secret)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v\nwant it to contain %q", err, tc.want)
			continue
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\n") || strings.Contains(msg, "struct") || strings.Contains(msg, "!!") || strings.Contains(msg, "time.Duration") {
			t.Errorf("error in Go's terms, or on more than one line: %q", msg)
		}
	}
}
