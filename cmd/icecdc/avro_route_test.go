package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/registry"
)

// TestRunAvroRoutesTablesToOneTopic: debezium-avro with a
// ByLogicalTableRouter writes what AvroConverter writes after Debezium's
// router. The schemas are derived from the routed Connect schemas and
// registered under the shared topic's subjects (TopicNameStrategy),
// never under the tables' own: the key record is <topic>.Key with
// __dbz__physicalTableIdentifier, the value <topic>.Envelope with
// <topic>.Value images. Two tables of equal columns then share one
// registered value schema (the same text, one version); a third whose
// columns differ registers a second version of the same subject, which
// the registry's compatibility rules decide on, as they decide on
// Debezium's.
func TestRunAvroRoutesTablesToOneTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := newKafka(t)
	reg := srfake.New()
	defer reg.Close()
	wider := iceberg.NewSchemaWithIdentifiers(0, []int{1}, append(scenario.OrdersSchema().Fields(),
		iceberg.NestedField{ID: 5, Name: "note", Type: iceberg.PrimitiveTypes.String})...)
	env := orderTables(ctx, t, []string{"orders_eu", "orders_us", "orders_mx"}, func(name string) *iceberg.Schema {
		if name == "orders_mx" {
			return wider
		}
		return scenario.OrdersSchema()
	})
	body := fmt.Sprintf(`name: shop-cdc
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: bookshop.orders_eu, start: earliest}, {name: bookshop.orders_us, start: earliest}, {name: bookshop.orders_mx, start: earliest}]
poll: {interval: 50ms}
format: debezium-avro
schema_registry: {url: '%s'}
sink: {type: kafka, kafka: {brokers: ['%s'], topic_partitions: 1}}
state: {path: '%s'}
transforms:
  Reroute:
    type: io.debezium.transforms.ByLogicalTableRouter
    topic.regex: 'icecdc\.bookshop\.orders_(eu|us|mx)'
    topic.replacement: 'icecdc.bookshop.orders'
`, scenario.CatalogName, env.CatalogURI, env.Warehouse, reg.URL(), brokers[0], filepath.Join(t.TempDir(), "state.db"))
	const shared = "icecdc.bookshop.orders"
	recs := routedRecords(ctx, t, brokers, body, shared, 3)
	cl, err := registry.New(registry.Config{URL: reg.URL()})
	if err != nil {
		t.Fatal(err)
	}
	var physical []string
	valueIDs := map[string]int{}
	for _, r := range recs {
		key, keyID := avroRecord(t, cl, r.Key)
		value, valueID := avroRecord(t, cl, r.Value)
		table := fmt.Sprint(key["__dbz__physicalTableIdentifier"])
		physical = append(physical, table)
		valueIDs[table] = valueID
		if key["order_id"] == nil {
			t.Errorf("key %v: no order_id", key)
		}
		for _, s := range []struct {
			id   int
			want string
		}{{keyID, shared + ".Key"}, {valueID, shared + ".Envelope"}} {
			text, err := cl.Schema(ctx, s.id)
			if err != nil {
				t.Fatal(err)
			}
			var root struct{ Name, Namespace string }
			if err := json.Unmarshal([]byte(text), &root); err != nil {
				t.Fatal(err)
			}
			if root.Namespace+"."+root.Name != s.want || strings.Contains(text, "orders_eu") || strings.Contains(text, "orders_us") || strings.Contains(text, "orders_mx") {
				t.Errorf("schema %d of %s: %s, want record %s naming no table", s.id, table, text, s.want)
			}
			if s.want == shared+".Envelope" && !strings.Contains(text, `"name":"Value","namespace":"`+shared+`"`) {
				t.Errorf("value schema of %s: the images are not %s.Value: %s", table, shared, text)
			}
		}
		if after, _ := value["after"].(map[string]any); after == nil {
			t.Errorf("value of %s: no after image: %v", table, value)
		}
	}
	sort.Strings(physical)
	if want := "icecdc.bookshop.orders_eu icecdc.bookshop.orders_mx icecdc.bookshop.orders_us"; strings.Join(physical, " ") != want {
		t.Errorf("key fields %v, want %s", physical, want)
	}
	if valueIDs["icecdc.bookshop.orders_eu"] != valueIDs["icecdc.bookshop.orders_us"] || valueIDs["icecdc.bookshop.orders_eu"] == valueIDs["icecdc.bookshop.orders_mx"] {
		t.Errorf("value schema ids %v: want eu and us to share one, mx its own", valueIDs)
	}
	versions := func(subject string) int {
		n := 0
		for reg.SubjectExists(subject) {
			if _, ok := reg.GetSchema(subject, n+1); !ok {
				break
			}
			n++
		}
		return n
	}
	for subject, want := range map[string]int{shared + "-key": 1, shared + "-value": 2,
		"icecdc.bookshop.orders_eu-key": 0, "icecdc.bookshop.orders_eu-value": 0, "icecdc.bookshop.orders_mx-value": 0} {
		if n := versions(subject); n != want {
			t.Errorf("subject %s: %d versions, want %d", subject, n, want)
		}
	}

	// icecdc changes --config prints the same routed records, registering
	// under the same subjects (a registry of its own here).
	reg2 := srfake.New()
	defer reg2.Close()
	cfg2 := filepath.Join(t.TempDir(), "icecdc.yaml")
	if err := os.WriteFile(cfg2, []byte(strings.Replace(body, reg.URL(), reg2.URL(), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCmd("changes", "--config", cfg2, "--table", "bookshop.orders_us", "--with-key")
	if code != 0 {
		t.Fatalf("changes: exit %d: %s", code, errOut)
	}
	if key, _, _ := strings.Cut(out, "\t"); key != `{"order_id":1,"__dbz__physicalTableIdentifier":"icecdc.bookshop.orders_us"}` {
		t.Errorf("changes printed the key %s", key)
	}
	if _, ok := reg2.GetSchema(shared+"-value", 1); !ok || reg2.SubjectExists("icecdc.bookshop.orders_us-value") {
		t.Errorf("changes registered under the table's subject, not the routed topic's")
	}
}
