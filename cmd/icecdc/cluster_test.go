package main

import (
	"os"
	"testing"
)

// Every member parses the same configuration: the fingerprint that lets
// it into the group must come out the same each time (no pointer or map
// order in it), and differ when a shared setting differs.
func TestConfigFingerprintIsStable(t *testing.T) {
	conf := func(tombstones string) string {
		return `name: p
catalog: {name: local, type: sql, uri: "file:/x/catalog.db", warehouse: "file:///x/wh"}
tables: [{name: "shop.*", start: earliest}]
sink: {type: kafka, kafka: {brokers: ["127.0.0.1:9092"], delivery: exactly-once` + tombstones + `}}
cluster: {type: kafka, group: g}
`
	}
	fp := func(raw string) string {
		t.Helper()
		cfg, err := parseConfig([]byte(raw), os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		return configFingerprint(cfg)
	}
	a, b := fp(conf("")), fp(conf(""))
	if a != b {
		t.Fatalf("the same configuration gives fingerprints %s and %s", a, b)
	}
	if c := fp(conf(", tombstones: true")); c != a {
		t.Fatalf("tombstones: true (the default) gives fingerprint %s, the default %s", c, a)
	}
	if c := fp(conf(", tombstones: false")); c == a {
		t.Fatalf("tombstones: false gives the default's fingerprint %s", c)
	}
}

// The fingerprint travels in every member's client id and a member
// refuses a group whose members show another one: a new version that
// computed it differently from the same file would lock itself out of a
// rolling upgrade. Its value for a fixed configuration is pinned.
func TestConfigFingerprintKeepsItsBytes(t *testing.T) {
	raw := `name: p
catalog: {name: local, type: sql, uri: "file:/x/catalog.db", warehouse: "file:///x/wh"}
tables:
  - {name: shop.orders, start: earliest, key: [order_id], columns: [status], net: true, hold: true}
  - {name: shop.items, metadata: "/x/wh/shop/items/metadata/v1.metadata.json", start: latest}
net_max_rows: 5000
sink: {type: kafka, kafka: {brokers: ["127.0.0.1:9092"], delivery: exactly-once}}
cluster: {type: kafka, group: g}
`
	cfg, err := parseConfig([]byte(raw), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := configFingerprint(cfg), "89c1f190249d"; got != want {
		t.Fatalf("fingerprint %s, want %s (the value members of earlier versions compute)", got, want)
	}
	// A setting added later still tells configurations apart when set.
	json, err := parseConfig([]byte(raw+"debezium: {variant.handling.mode: json}\n"), os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if configFingerprint(json) == configFingerprint(cfg) {
		t.Error("variant.handling.mode: json leaves the fingerprint as it is")
	}
}

// route,unwrap and unwrap,route write different value schema names, so
// members listing the same transforms in another order are not the same
// pipeline.
func TestConfigFingerprintHasTheTransformOrder(t *testing.T) {
	const route = `route: {type: io.debezium.transforms.ByLogicalTableRouter, topic.regex: 'icecdc\.(orders)', topic.replacement: 'shop.routed'}`
	const unwrap = `unwrap: {delete.tombstone.handling.mode: rewrite}`
	fp := func(first, second string) string {
		t.Helper()
		raw := `name: p
catalog: {name: local, type: sql, uri: "file:/x/catalog.db", warehouse: "file:///x/wh"}
tables: [{name: "shop.*", start: earliest}]
sink: {type: kafka, kafka: {brokers: ["127.0.0.1:9092"], delivery: exactly-once, topic: 'icecdc.{table}'}}
cluster: {type: kafka, group: g}
transforms:
  ` + first + `
  ` + second + `
`
		cfg, err := parseConfig([]byte(raw), os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		return configFingerprint(cfg)
	}
	if a, b := fp(route, unwrap), fp(unwrap, route); a == b {
		t.Fatalf("route,unwrap and unwrap,route share the fingerprint %s", a)
	}
	if a, b := fp(route, unwrap), fp(route, unwrap); a != b {
		t.Fatalf("the same transforms give fingerprints %s and %s", a, b)
	}
}
