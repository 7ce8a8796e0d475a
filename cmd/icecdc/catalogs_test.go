package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/internal/scenario"
)

// writeBookshopIn writes the demo's bookshop story as shop.orders through
// cat, whichever catalog it is.
func writeBookshopIn(t *testing.T, cat catalog.Catalog) *table.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := scenario.CreateTableIn(ctx, cat, table.Identifier{"shop", "orders"}, scenario.TableDef{Schema: scenario.OrdersSchema(), FormatVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bookshopStory() {
		if tbl, err = s.do(ctx, tbl); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
	}
	return tbl
}

func propArgs(p iceberg.Properties) []string {
	var args []string
	for _, k := range sortedKeys(p) {
		args = append(args, "--catalog-prop", k+"="+p[k])
	}
	return args
}

// TestCatalogsOnMoto writes the bookshop story through iceberg-go's Glue
// catalog on moto's Glue API and through its Hadoop catalog, both with the
// warehouse on moto's S3, and reads them back with changes.
func TestCatalogsOnMoto(t *testing.T) {
	srv := moto.Start(t)
	t.Run("glue", func(t *testing.T) { testGlue(t, srv) })
	t.Run("hadoop on s3", func(t *testing.T) { testHadoopS3(t, srv) })
}

func testGlue(t *testing.T, srv *moto.Server) {
	srv.CreateBucket(t, "glue-lake")
	props := srv.GlueProps()
	props["warehouse"] = "s3://glue-lake/wh"
	props["type"] = "glue"
	cat, err := catalog.Load(context.Background(), "glue", props)
	if err != nil {
		t.Fatal(err)
	}
	writeBookshopIn(t, cat)
	// The glue catalog's credentials and region serve S3 too: give only
	// glue.* properties and the S3 endpoint.
	p := iceberg.Properties{}
	for k, v := range props {
		if strings.HasPrefix(k, "glue.") {
			p[k] = v
		}
	}
	p["s3.endpoint"] = srv.Endpoint
	args := append([]string{"changes", "--catalog-type", "glue", "--warehouse", "s3://glue-lake/wh", "--table", "shop.orders"}, propArgs(p)...)
	out, errOut, code := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, want := summaries(t, out), strings.Join(bookshopEvents, "\n"); got != want {
		t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
	}
	t.Setenv("AWS_MAX_ATTEMPTS", "2")
	for _, tc := range []struct {
		name  string
		edit  func(iceberg.Properties)
		parts []string
	}{
		{"wrong endpoint", func(p iceberg.Properties) { p["glue.endpoint"] = "http://127.0.0.1:1" },
			[]string{"load table shop.orders: glue catalog at http://127.0.0.1:1: cannot connect to 127.0.0.1:1", "(after 2 attempts)"}},
		{"no credentials", func(p iceberg.Properties) { delete(p, "glue.access-key-id"); delete(p, "glue.secret-access-key") },
			[]string{"load table shop.orders: glue catalog at " + srv.Endpoint + ": no credentials: set glue.access-key-id and glue.secret-access-key"}},
		{"no region", func(p iceberg.Properties) { delete(p, "glue.region") },
			[]string{`open glue catalog "local": no region: set glue.region (catalog property), AWS_REGION, or a region in the AWS profile`}},
		{"no such table", func(iceberg.Properties) {},
			[]string{"table shop.nothing does not exist in glue catalog", "; namespace shop holds shop.orders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := iceberg.Properties{}
			for k, v := range p {
				q[k] = v
			}
			tc.edit(q)
			table := "shop.orders"
			if tc.name == "no such table" {
				table = "shop.nothing"
			}
			args := append([]string{"changes", "--catalog-type", "glue", "--warehouse", "s3://glue-lake/wh", "--table", table}, propArgs(q)...)
			out, errOut, code := runCmd(args...)
			t.Logf("exit %d: %s", code, strings.TrimSpace(errOut))
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			if strings.Count(errOut, "\n") != 1 {
				t.Fatalf("error not on one line: %q", errOut)
			}
			for _, part := range tc.parts {
				if !strings.Contains(errOut, part) {
					t.Fatalf("error lacks %q: %s", part, errOut)
				}
			}
			if strings.Contains(errOut, moto.SecretKey) || strings.Contains(errOut, moto.AccessKey) {
				t.Fatalf("error shows a credential: %s", errOut)
			}
		})
	}
}

// testHadoopS3 writes the story through the Hadoop catalog into a
// warehouse on S3 (iceberg-go writes there only with allow-unsafe-commits:
// its commits are not atomic on object stores) and reads it back; icecdc
// reads only, and needs no such property.
func testHadoopS3(t *testing.T, srv *moto.Server) {
	srv.CreateBucket(t, "hadoop-lake")
	props := moto.S3Props(srv.Endpoint)
	w := iceberg.Properties{"type": "hadoop", "warehouse": "s3://hadoop-lake/wh", "allow-unsafe-commits": "true"}
	for k, v := range props {
		w[k] = v
	}
	cat, err := catalog.Load(context.Background(), "hadoop", w)
	if err != nil {
		t.Fatal(err)
	}
	writeBookshopIn(t, cat)
	args := append([]string{"changes", "--catalog-type", "hadoop", "--warehouse", "s3://hadoop-lake/wh", "--table", "shop.orders"}, propArgs(props)...)
	out, errOut, code := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, want := summaries(t, out), strings.Join(bookshopEvents, "\n"); got != want {
		t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
	}
}

// TestHadoopCatalog writes the bookshop story through iceberg-go's Hadoop
// catalog into a warehouse directory and reads it back with changes
// --catalog-type hadoop.
func TestHadoopCatalog(t *testing.T) {
	wh := t.TempDir()
	cat, err := catalog.Load(context.Background(), "hadoop", iceberg.Properties{"type": "hadoop", "warehouse": "file://" + wh})
	if err != nil {
		t.Fatal(err)
	}
	writeBookshopIn(t, cat)
	out, errOut, code := runCmd("changes", "--catalog-type", "hadoop", "--warehouse", "file://"+wh, "--table", "shop.orders")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, want := summaries(t, out), strings.Join(bookshopEvents, "\n"); got != want {
		t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
	}
}

// TestRESTCatalogErrorsHideSecrets: a REST catalog that cannot be reached,
// or refuses the client, gives one line naming the catalog, without the
// credential or the URI's password.
func TestRESTCatalogErrorsHideSecrets(t *testing.T) {
	const secret, password = "client-secret-Xr7Tq", "uri-password-Lp2Vm"
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error": {"message": "bad credentials", "type": "NotAuthorizedException", "code": 401}}`)
	}))
	defer refusing.Close()
	for _, tc := range []struct{ uri, part string }{
		{"http://icecdc:" + password + "@127.0.0.1:1",
			"rest catalog at http://icecdc:xxxxx@127.0.0.1:1: cannot connect to 127.0.0.1:1: connect: connection refused"},
		{strings.Replace(refusing.URL, "http://", "http://icecdc:"+password+"@", 1),
			"@127.0.0.1:" + strings.Split(refusing.URL, ":")[2] + ": the OAuth token request failed: check the credential"},
	} {
		out, errOut, code := runCmd("changes", "--catalog-type", "rest", "--catalog-uri", tc.uri, "--table", "shop.orders",
			"--catalog-prop", "credential=client-id:"+secret)
		t.Logf("exit %d: %s", code, strings.TrimSpace(errOut))
		if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.part) {
			t.Fatalf("exit %d, stdout %q, stderr %q; want one line with %q", code, out, errOut, tc.part)
		}
		if strings.Contains(errOut, secret) || strings.Contains(errOut, password) {
			t.Fatalf("stderr shows a secret: %s", errOut)
		}
	}
}
