package main

import (
	"strings"
	"testing"
)

// TestConfigURLPasswordsHidden: a URL of the configuration whose
// password holds a % (which url.Parse refuses, quoting the URL whole), or
// that has the wrong scheme, is refused naming the field and showing the
// URL without its password.
func TestConfigURLPasswordsHidden(t *testing.T) {
	const pw = "Pw-%zz-Qr4"
	getenv := env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret})
	for _, tc := range []struct{ old, new, field string }{
		{`url: "https://hooks.example/icecdc"`, `url: "https://hook:` + pw + `@hooks.example/icecdc"`, "sink.webhook.url"},
		{`url: "https://hooks.example/icecdc"`, `url: "ftp://hook:Pw-Qr4@hooks.example/icecdc"`, "sink.webhook.url"},
		{"type: sql\n  uri: file:/var/lib/icecdc/catalog.db", "type: rest\n  uri: 'http://icecdc:" + pw + "@catalog:8181'", "catalog.uri"},
		{"properties: {}", "properties: {s3.proxy-uri: 'http://proxy:" + pw + "@proxy:3128'}", "catalog.properties"},
		{"properties: {}", "properties: {s3.endpoint: 'http://minio:" + pw + "@minio:9000'}", "catalog.properties"},
	} {
		cfg := strings.Replace(goodConfig, tc.old, tc.new, 1)
		_, err := parseConfig([]byte(cfg), getenv)
		if err == nil {
			t.Fatalf("%s accepted", tc.new)
		}
		msg := err.Error()
		if strings.Contains(msg, "Pw-") || strings.Contains(msg, "zz") || !strings.Contains(msg, tc.field) || !strings.Contains(msg, ":xxxxx@") {
			t.Errorf("want %s named and the URL without its password: %s", tc.field, msg)
		}
	}
}
