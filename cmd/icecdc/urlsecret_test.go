package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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

// TestCatalogMaxResponseBytes: catalog.max_response_bytes bounds the
// answers of the REST catalog the configuration names: listing a
// namespace whose answer does not end fails naming the bound, at the
// configured size.
func TestCatalogMaxResponseBytes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/v1/config") {
			io.WriteString(w, `{"defaults": {}, "overrides": {}}`)
			return
		}
		io.WriteString(w, `{"identifiers": [`)
		one := []byte(strings.Repeat(`{"namespace": ["audit"], "name": "t"}, `, 1000))
		for i := 0; i < 2000; i++ { // 76 MB, past the default too
			if _, err := w.Write(one); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	cfg := strings.Replace(goodConfig, "type: sql\n  uri: file:/var/lib/icecdc/catalog.db",
		"type: rest\n  uri: '"+srv.URL+"'\n  max_response_bytes: 2MiB", 1)
	c, err := parseConfig([]byte(cfg), env(map[string]string{"ICECDC_WEBHOOK_SECRET": testSecret}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	_, err = listTableSources(ctx, c, nil)
	if err == nil || !strings.Contains(err.Error(), "longer than 2 MiB") || !strings.Contains(err.Error(), srv.URL+"/v1/namespaces/audit/tables") {
		t.Fatalf("want the 2 MiB bound named: %v", err)
	}
}
