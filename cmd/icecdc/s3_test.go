package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/internal/scenario"
)

// s3Bookshop writes the demo's bookshop story to a warehouse in a bucket of
// a moto server at endpoint (the server's, or a proxy's) and returns the
// changes flags that read it through the sql catalog (a local SQLite file)
// and the table's metadata location on S3.
func s3Bookshop(t *testing.T, srv *moto.Server, bucket string) (catArgs []string, tbl *table.Table) {
	t.Helper()
	ctx := context.Background()
	srv.CreateBucket(t, bucket)
	dir := t.TempDir()
	env, err := scenario.NewEnvWith(ctx, dir, scenario.EnvOptions{
		Warehouse: "s3://" + bucket + "/wh",
		Props:     moto.S3Props(srv.Endpoint),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tbl, err = env.CreateTable(ctx, table.Identifier{"bookshop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bookshopStory() {
		if tbl, err = s.do(ctx, tbl); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
	}
	catArgs = []string{"--catalog-type", "sql", "--catalog-uri", env.CatalogURI, "--warehouse", env.Warehouse, "--table", "bookshop.orders"}
	for _, k := range sortedKeys(moto.S3Props(srv.Endpoint)) {
		catArgs = append(catArgs, "--catalog-prop", k+"="+moto.S3Props(srv.Endpoint)[k])
	}
	return catArgs, tbl
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// withEndpoint replaces the s3.endpoint property in changes flags.
func withEndpoint(args []string, endpoint string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if strings.HasPrefix(a, "s3.endpoint=") {
			out[i] = "s3.endpoint=" + endpoint
		}
	}
	return out
}

func summaries(t *testing.T, out string) string {
	var got []string
	for _, l := range parseLines(t, out) {
		got = append(got, l.summary())
	}
	return strings.Join(got, "\n")
}

// TestChangesOnS3 reads the bookshop story from a warehouse on a real S3
// API (moto's server): through the sql catalog and straight from the
// metadata file on S3, the events are those of the same story on local
// files.
func TestChangesOnS3(t *testing.T) {
	srv := moto.Start(t)
	start := time.Now()
	catArgs, tbl := s3Bookshop(t, srv, "lake")
	meta := tbl.MetadataLocation()
	t.Logf("bookshop written to s3 in %s", time.Since(start))
	if !strings.HasPrefix(meta, "s3://lake/wh/") {
		t.Fatalf("metadata at %s, want s3://lake/wh/...", meta)
	}
	want := strings.Join(bookshopEvents, "\n")
	out, errOut, code := runCmd(append([]string{"changes"}, catArgs...)...)
	if code != 0 {
		t.Fatalf("changes through the sql catalog: exit %d: %s", code, errOut)
	}
	if got := summaries(t, out); got != want {
		t.Fatalf("changes through the sql catalog:\n%s\nwant:\n%s", got, want)
	}
	args := []string{"changes", "--metadata", meta}
	for k, v := range moto.S3Props(srv.Endpoint) {
		args = append(args, "--catalog-prop", fmt.Sprintf("%s=%s", k, v))
	}
	out, errOut, code = runCmd(args...)
	if code != 0 {
		t.Fatalf("changes --metadata: exit %d: %s", code, errOut)
	}
	if got := summaries(t, out); got != want {
		t.Fatalf("changes --metadata:\n%s\nwant:\n%s", got, want)
	}
	// s3a:// (Hadoop's name, in Spark's configurations) is the same store.
	args[2] = strings.Replace(meta, "s3://", "s3a://", 1)
	out, errOut, code = runCmd(args...)
	if code != 0 {
		t.Fatalf("changes --metadata s3a://: exit %d: %s", code, errOut)
	}
	if got := summaries(t, out); got != want {
		t.Fatalf("changes --metadata s3a://:\n%s\nwant:\n%s", got, want)
	}
}
