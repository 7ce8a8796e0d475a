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
