package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
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

// s3Fixture is the bookshop story in a bucket of a moto server.
type s3Fixture struct {
	srv     *moto.Server
	catArgs []string     // changes flags: the sql catalog and the s3.* properties
	tbl     *table.Table // as written
}

// TestS3 runs icecdc against a real S3 API (moto's server) holding the
// bookshop story: one server and one table for every part, the bad input
// last since it removes an object.
func TestS3(t *testing.T) {
	start := time.Now()
	srv := moto.Start(t)
	catArgs, tbl := s3Bookshop(t, srv, "lake")
	t.Logf("moto started and the bookshop written to s3 in %s", time.Since(start).Round(time.Millisecond))
	fx := &s3Fixture{srv: srv, catArgs: catArgs, tbl: tbl}
	t.Run("changes", func(t *testing.T) { testS3Changes(t, fx) })
	t.Run("rest vended credentials", func(t *testing.T) { testS3RESTVended(t, fx) })
	t.Run("rest vended credentials hidden", func(t *testing.T) { testS3RESTVendedHidden(t, fx) })
	t.Run("daemon", func(t *testing.T) { testS3Daemon(t, fx) })
	t.Run("bad input", func(t *testing.T) { testS3BadInput(t, fx) })
}

// testS3Changes reads the story through the sql catalog and straight from
// the metadata file on S3: the events are those of the same story on
// local files.
func testS3Changes(t *testing.T, fx *s3Fixture) {
	meta := fx.tbl.MetadataLocation()
	if !strings.HasPrefix(meta, "s3://lake/wh/") {
		t.Fatalf("metadata at %s, want s3://lake/wh/...", meta)
	}
	want := strings.Join(bookshopEvents, "\n")
	out, errOut, code := runCmd(append([]string{"changes"}, fx.catArgs...)...)
	if code != 0 {
		t.Fatalf("changes through the sql catalog: exit %d: %s", code, errOut)
	}
	if got := summaries(t, out); got != want {
		t.Fatalf("changes through the sql catalog:\n%s\nwant:\n%s", got, want)
	}
	args := []string{"changes", "--metadata", meta}
	for k, v := range moto.S3Props(fx.srv.Endpoint) {
		args = append(args, "--catalog-prop", fmt.Sprintf("%s=%s", k, v))
	}
	out, errOut, code = runCmd(args...)
	if code != 0 {
		t.Fatalf("changes --metadata: exit %d: %s", code, errOut)
	}
	if got := summaries(t, out); got != want {
		t.Fatalf("changes --metadata:\n%s\nwant:\n%s", got, want)
	}
	// The replay contract holds for every snapshot, read from S3.
	src, err := source.Open(context.Background(), source.Options{
		MetadataPath: meta, Props: moto.S3Props(fx.srv.Endpoint), Table: "bookshop.orders",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replay.Check(context.Background(), src, fx.tbl); err != nil {
		t.Fatalf("replay from s3: %v", err)
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

// testS3RESTVended reads the bookshop story through a REST catalog that vends the S3 endpoint and credentials in loadTable's config
// (iceberg-go merges that config into the table's file IO properties):
// icecdc is given no s3.* property, and a proxy refuses any request not
// signed with the vended access key.
func testS3RESTVended(t *testing.T, fx *s3Fixture) {
	const vendedKey = "AKIAICECDCVENDED0001"
	proxy := moto.NewProxy(t, fx.srv.Endpoint)
	var signed atomic.Int64
	proxy.Set(func(r *http.Request, _ int) moto.Fault {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+vendedKey+"/") {
			return moto.Denied
		}
		signed.Add(1)
		return moto.Pass
	})
	meta := fx.tbl.MetadataLocation()
	rest := vendingREST(t, fx, func() vendedLoad {
		return vendedLoad{meta, map[string]string{
			"s3.endpoint": proxy.URL, "s3.region": moto.Region,
			"s3.access-key-id": vendedKey, "s3.secret-access-key": "vended-secret-Hq2",
			"s3.session-token": "vended-token-Rt5",
		}}
	}, meta)
	out, errOut, code := runCmd("changes", "--catalog-type", "rest", "--catalog-uri", rest, "--table", "bookshop.orders")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, want := summaries(t, out), strings.Join(bookshopEvents, "\n"); got != want {
		t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
	}
	if signed.Load() == 0 {
		t.Fatal("no request reached S3 with the vended credentials")
	}
}

// vendedLoad is what a REST catalog answers to one loadTable of the
// bookshop table: the metadata at meta (read from the bucket, sent inline)
// and config.
type vendedLoad struct {
	meta   string
	config map[string]string
}

// vendingREST starts a REST catalog that serves the bookshop table as a
// catalog vending credentials does, each load as answer says (its
// metadata one of metas); it returns its URI.
func vendingREST(t *testing.T, fx *s3Fixture, answer func() vendedLoad, metas ...string) string {
	t.Helper()
	inline := map[string][]byte{}
	for _, m := range metas {
		inline[m] = readObject(t, moto.S3Props(fx.srv.Endpoint), m)
	}
	rest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/v1/config"):
			io.WriteString(w, `{"defaults": {}, "overrides": {}}`)
		case strings.HasSuffix(r.URL.Path, "/v1/namespaces/bookshop/tables/orders"):
			l := answer()
			json.NewEncoder(w).Encode(map[string]any{
				"metadata-location": l.meta,
				"metadata":          json.RawMessage(inline[l.meta]),
				"config":            l.config,
			})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(rest.Close)
	return rest.URL
}

// testS3RESTVendedHidden reads the bookshop story through a REST catalog
// that vends S3 credentials (icecdc is given none), from a store that
// refuses the data files with a message quoting the credentials that
// signed the request, as a store may quote what it was sent: the vended
// access key id, secret key and session token appear nowhere, neither in
// the error of `icecdc changes` nor in the log, /status, /readyz or
// `icecdc status` of `icecdc run`, while the store's refusal does. The
// daemon's catalog vends other credentials with the table's next
// metadata: once the reloaded table reads with them, they are hidden too.
func testS3RESTVendedHidden(t *testing.T, fx *s3Fixture) {
	type creds struct{ key, secret, token string }
	first := creds{"AKIAICECDCVENDED0002", "vended-secret-Xe4Tq9Lm", "vended-token-Bn7Wc2Pk"}
	next := creds{"AKIAICECDCVENDED0003", "vended-secret-Rv8Hs1Jd", "vended-token-Qw3Zu6Ya"}
	upstream, err := url.Parse(fx.srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(upstream)
	var refused [2]atomic.Int64 // by first and next
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, ".parquet") {
			forward.ServeHTTP(w, r)
			return
		}
		c := first
		if strings.Contains(r.Header.Get("Authorization"), "Credential="+next.key+"/") {
			c = next
			refused[1].Add(1)
		} else {
			refused[0].Add(1)
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidSecurity</Code>`+
			`<Message>The credentials (%s, %s, %s) are not valid here.</Message></Error>`, c.key, c.secret, c.token)
	}))
	t.Cleanup(store.Close)
	vend := func(c creds) map[string]string {
		return map[string]string{
			"s3.endpoint": store.URL, "s3.region": moto.Region, "s3.path-style-access": "true",
			"s3.access-key-id": c.key, "s3.secret-access-key": c.secret, "s3.session-token": c.token,
		}
	}
	current := fx.tbl.MetadataLocation()
	var previous string // the metadata before the current one
	for e := range fx.tbl.Metadata().PreviousFiles() {
		previous = e.MetadataFile
	}
	if previous == "" {
		t.Fatal("the bookshop table has no previous metadata")
	}

	shown := map[string]string{}
	rest := vendingREST(t, fx, func() vendedLoad { return vendedLoad{current, vend(first)} }, current)
	_, errOut, code := runCmd("changes", "--catalog-type", "rest", "--catalog-uri", rest, "--table", "bookshop.orders")
	if refused[0].Load() == 0 {
		t.Fatalf("changes: no data file read reached the store (exit %d): %s", code, errOut)
	}
	checkOneLineError(t, code, errOut, "HTTP 403 InvalidSecurity: The credentials (")
	shown["icecdc changes"] = errOut

	// The daemon's catalog answers with the previous metadata and the
	// first credentials until a read with them was refused, then with the
	// current metadata and the next credentials.
	refusedFirst := refused[0].Load()
	rest = vendingREST(t, fx, func() vendedLoad {
		if refused[0].Load() > refusedFirst {
			return vendedLoad{current, vend(next)}
		}
		return vendedLoad{previous, vend(first)}
	}, previous, current)
	dir := t.TempDir()
	listen := freeAddr(t)
	cfg := dir + "/icecdc.yaml"
	body := fmt.Sprintf(`name: s3-vended
catalog: {type: rest, uri: '%s'}
tables: [{name: bookshop.orders, start: earliest}]
poll: {interval: 50ms}
sink: {type: file, file: {path: '%s'}}
state: {path: '%s'}
http: {listen: '%s'}
`, rest, dir+"/events.jsonl", dir+"/state.db", listen)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "-c", cfg)
	get := func(path string) string { return daemonPage(listen, path) }
	d.waitFor(t, "reads with the first and the next credentials refused", func() bool {
		return refused[0].Load() > refusedFirst && refused[1].Load() > 0 && strings.Contains(get("/status"), "InvalidSecurity")
	})
	shown["/status"], shown["/readyz"] = get("/status"), get("/readyz")
	statusOut, statusErr, _ := runCmd("status", "-c", cfg)
	shown["icecdc status"] = statusOut + statusErr
	d.stop(t)
	shown["log"] = d.logs.String()
	if !strings.Contains(shown["log"], "InvalidSecurity") {
		t.Errorf("the log lacks the refusal:\n%s", shown["log"])
	}
	for where, text := range shown {
		for _, secret := range []string{first.key, first.secret, first.token, next.key, next.secret, next.token} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows the vended credential %q:\n%s", where, secret, text)
			}
		}
	}
}

// readObject returns the content of an object on S3.
func readObject(t *testing.T, props map[string]string, path string) []byte {
	t.Helper()
	fsys, err := iceio.LoadFS(context.Background(), props, path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testS3Daemon runs `icecdc run` on the table on S3 behind a proxy that
// refuses the data files, then lets them through: while they are refused
// the failure shows in the log, /readyz, /status and `icecdc status`, and
// none of them shows a credential; once they pass, every event of the
// story is delivered, none skipped or invented.
func testS3Daemon(t *testing.T, fx *s3Fixture) {
	t.Setenv("AWS_MAX_ATTEMPTS", "2")
	proxy := moto.NewProxy(t, fx.srv.Endpoint)
	var denied atomic.Bool
	denied.Store(true)
	proxy.Set(func(r *http.Request, _ int) moto.Fault {
		if denied.Load() && strings.HasSuffix(r.URL.Path, ".parquet") {
			return moto.Denied
		}
		return moto.Pass
	})
	var uri string
	for i, a := range fx.catArgs {
		if a == "--catalog-uri" {
			uri = fx.catArgs[i+1]
		}
	}
	props := moto.S3Props(proxy.URL)
	var ps []string
	for _, k := range sortedKeys(props) {
		ps = append(ps, fmt.Sprintf("%s: '%s'", k, props[k]))
	}
	dir := t.TempDir()
	listen := freeAddr(t)
	events := dir + "/events.jsonl"
	cfg := dir + "/icecdc.yaml"
	body := fmt.Sprintf(`name: s3-cdc
catalog: {type: sql, uri: '%s', warehouse: 's3://lake/wh', properties: {%s}}
tables: [{name: bookshop.orders, start: earliest}]
poll: {interval: 50ms}
sink: {type: file, file: {path: '%s'}}
state: {path: '%s'}
http: {listen: '%s'}
`, uri, strings.Join(ps, ", "), events, dir+"/state.db", listen)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "-c", cfg)
	get := func(path string) string { return daemonPage(listen, path) }
	d.waitFor(t, "/readyz to show the denied bucket", func() bool { return strings.Contains(get("/readyz"), "access denied (AccessDenied)") })
	shown := map[string]string{"/status": get("/status"), "/readyz": get("/readyz")}
	statusOut, statusErr, code := runCmd("status", "-c", cfg)
	if code != exitTablesFailing {
		t.Fatalf("icecdc status while the bucket is denied: exit %d, want %d: %s", code, exitTablesFailing, statusErr)
	}
	shown["icecdc status"] = statusOut + statusErr
	if !strings.Contains(shown["/status"], "s3 bucket lake at "+proxy.URL+": access denied") {
		t.Fatalf("/status does not show the failure: %s", shown["/status"])
	}
	denied.Store(false)
	d.waitFor(t, "every event", func() bool {
		b, _ := os.ReadFile(events)
		return len(parseLines(t, string(b))) >= len(bookshopEvents)
	})
	d.stop(t)
	b, _ := os.ReadFile(events)
	if got, want := summaries(t, string(b)), strings.Join(bookshopEvents, "\n"); got != want {
		t.Fatalf("delivered:\n%s\nwant:\n%s", got, want)
	}
	shown["log"] = d.logs.String()
	if len(d.logLines("icecdc started")) != 1 || !strings.Contains(shown["log"], "access denied (AccessDenied)") {
		t.Fatalf("the log lacks the start or the failure:\n%s", shown["log"])
	}
	for where, text := range shown {
		for _, secret := range []string{moto.SecretKey, moto.AccessKey} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows the credential %q:\n%s", where, secret, text)
			}
		}
	}
}

// daemonPage returns the body of the daemon's HTTP page path, or "" while
// the daemon does not answer.
func daemonPage(listen, path string) string {
	resp, err := http.Get("http://" + listen + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
