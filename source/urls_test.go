package source_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/icecdc/icecdc/source"
)

// TestURLCredentialsHidden: the userinfo of every URL icecdc is given for
// a service (a REST catalog's uri, s3.endpoint, s3.proxy-uri,
// glue.endpoint) appears in no error: neither when the URL does not parse
// (a % in the password, which url.Parse's error quotes whole) nor when
// the service cannot be reached (the error names the endpoint). Each
// error is one line naming the URL without its password.
func TestURLCredentialsHidden(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "1") // a refused connection is the answer
	const pw = "Pw-%zz-Qr4"
	s3 := func(props map[string]string) source.Options {
		p := map[string]string{"s3.region": "us-east-1", "s3.access-key-id": "AKIAICECDCTEST00001",
			"s3.secret-access-key": "not-the-password", "s3.request-timeout": "2s"}
		for k, v := range props {
			p[k] = v
		}
		return source.Options{MetadataPath: "s3://bucket/t/metadata/v1.metadata.json", Props: p}
	}
	for _, tc := range []struct {
		name string
		o    source.Options
		want string
	}{
		{"rest uri with a %", source.Options{CatalogType: "rest", CatalogURI: "http://icecdc:" + pw + "@127.0.0.1:1", Table: "shop.orders"},
			"http://icecdc:xxxxx@127.0.0.1:1"},
		{"s3.endpoint", s3(map[string]string{"s3.endpoint": "http://minio:Pw-Qr4-Ss@127.0.0.1:1"}),
			"http://minio:xxxxx@127.0.0.1:1"},
		{"s3.endpoint with a %", s3(map[string]string{"s3.endpoint": "http://minio:" + pw + "@127.0.0.1:1"}),
			"s3.endpoint http://minio:xxxxx@127.0.0.1:1"},
		{"s3.proxy-uri with a %", s3(map[string]string{"s3.proxy-uri": "http://proxy:" + pw + "@127.0.0.1:1"}),
			"s3.proxy-uri http://proxy:xxxxx@127.0.0.1:1"},
		{"glue.endpoint", source.Options{CatalogType: "glue", Table: "shop.orders", Props: map[string]string{
			"glue.endpoint": "http://glue:Pw-Qr4-Gg@127.0.0.1:1", "glue.region": "us-east-1", "glue.max-retries": "1",
			"glue.access-key-id": "AKIAICECDCTEST00001", "glue.secret-access-key": "not-the-password"}},
			"glue catalog at http://glue:xxxxx@127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
			defer cancel()
			_, err := source.Open(ctx, tc.o)
			if err == nil {
				t.Fatal("opened")
			}
			msg := err.Error()
			t.Logf("%s", msg)
			for _, secret := range []string{pw, "%zz", "Pw-Qr4"} {
				if strings.Contains(msg, secret) {
					t.Fatalf("the error shows the password (%q): %s", secret, msg)
				}
			}
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Fatalf("want one line naming %s: %s", tc.want, msg)
			}
		})
	}
}

// TestCheckURLs: configuration checks refuse a URL that does not parse
// naming it without its password.
func TestCheckURLs(t *testing.T) {
	const pw = "Pw-%zz-Qr4"
	for _, err := range []error{
		source.CheckCatalogURI("rest", "https://icecdc:"+pw+"@catalog.example"),
		source.CheckCatalogURI("hive", "thrift://icecdc:"+pw+"@metastore:9083"),
		source.CheckProps(map[string]string{"s3.proxy-uri": "http://proxy:" + pw + "@proxy:3128"}),
		source.CheckProps(map[string]string{"s3.endpoint": "http://minio:" + pw + "@minio:9000"}),
		source.CheckProps(map[string]string{"glue.endpoint": "http://glue:" + pw + "@glue:4566"}),
	} {
		if err == nil {
			t.Fatal("a URL that does not parse was accepted")
		}
		if msg := err.Error(); strings.Contains(msg, "Pw-") || strings.Contains(msg, "zz") || !strings.Contains(msg, ":xxxxx@") {
			t.Errorf("want the URL without its password: %s", msg)
		}
	}
}
