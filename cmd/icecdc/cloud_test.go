package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// The Azure and GCS tests run against emulators that the interop stage
// (interop/run.sh) starts: Azurite's blob service and fake-gcs-server.
// They are external processes, so the default `go test ./...` skips them.
const (
	envAzurite = "ICECDC_AZURITE"      // host:port of azurite-blob
	envGCS     = "ICECDC_GCS_EMULATOR" // host:port of fake-gcs-server (-scheme http)
)

// Azurite's development account: its name and key are public, and every
// Azurite accepts them.
const (
	azuriteAccount = "devstoreaccount1"
	azuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	// gcsToken is the OAuth2 token given to fake-gcs-server, which accepts
	// any: it is there to check that no output shows it.
	gcsToken = "ya29.icecdc-gcs-token-Vb7Qm2"
)

// cloudStore is an emulated object store holding the bookshop story in
// the bucket (or container) "lake".
type cloudStore struct {
	kind      string // azure or gcs
	endpoint  string // the emulator's host:port
	warehouse string
	// props are the catalog properties that reach the store at endpoint
	// (the emulator's, or a proxy's) with credentials.
	props func(endpoint string) map[string]string
	// anonymous are the properties that reach it with no credentials.
	anonymous func(endpoint string) map[string]string
	// where is how errors name the store "lake" at endpoint.
	where   func(bucket, endpoint string) string
	secrets []string
	// bucket replaces the bucket of a location by another.
	bucket func(location, bucket string) string
	create func(t *testing.T, bucket string)

	tbl     *table.Table // as written
	catArgs []string     // changes flags: the sql catalog and the properties
}

func cloudEndpoint(t *testing.T, env, what string) string {
	t.Helper()
	ep := os.Getenv(env)
	if ep == "" {
		t.Skipf("%s is not set: the %s tests run in the interop stage (interop/run.sh starts the emulator and sets it)", env, what)
	}
	return ep
}

// isolateCloud hides this machine's Google and Azure credentials, so that
// a test sees only the properties it gives.
func isolateCloud(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLOUDSDK_CONFIG", home)
	for _, k := range []string{"GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "AZURE_TENANT_ID", "AZURE_CLIENT_ID",
		"AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_USERNAME", "AZURE_TOKEN_CREDENTIALS", "IDENTITY_ENDPOINT", "MSI_ENDPOINT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func TestAzurite(t *testing.T) {
	ep := cloudEndpoint(t, envAzurite, "Azure (Azurite)")
	isolateCloud(t)
	t.Setenv("PATH", t.TempDir()) // no az or azd command to ask for credentials
	cs := &cloudStore{
		kind:      "azure",
		endpoint:  ep,
		warehouse: "abfs://lake@" + azuriteAccount + ".dfs.core.windows.net/wh",
		props: func(ep string) map[string]string {
			return map[string]string{
				"adls.auth.shared-key.account.name": azuriteAccount,
				"adls.auth.shared-key.account.key":  azuriteKey,
				"adls.endpoint":                     ep,
				"adls.protocol":                     "http",
			}
		},
		anonymous: func(ep string) map[string]string {
			return map[string]string{"adls.endpoint": ep, "adls.protocol": "http"}
		},
		where: func(bucket, ep string) string {
			return fmt.Sprintf("azure container %s of %s.dfs.core.windows.net at http://%s", bucket, azuriteAccount, ep)
		},
		secrets: []string{azuriteKey},
		bucket: func(loc, b string) string {
			return strings.Replace(loc, "abfs://lake@", "abfs://"+b+"@", 1)
		},
		create: func(t *testing.T, bucket string) {
			cred, err := azblob.NewSharedKeyCredential(azuriteAccount, azuriteKey)
			if err != nil {
				t.Fatal(err)
			}
			c, err := azblob.NewClientWithSharedKeyCredential("http://"+ep+"/"+azuriteAccount, cred, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.CreateContainer(context.Background(), bucket, nil); err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
				t.Fatalf("create container %s: %v", bucket, err)
			}
		},
	}
	testCloudStore(t, cs, func(t *testing.T) {
		// The same table through a connection string.
		conn := fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=http://%s/%s;",
			azuriteAccount, azuriteKey, cs.endpoint, azuriteAccount)
		cs.wantStory(t, cs.metadataArgs(map[string]string{"adls.connection-string." + azuriteAccount: conn}))
	}, func(t *testing.T, check badCheck) {
		wrong := cs.props(cs.endpoint)
		wrong["adls.auth.shared-key.account.key"] = "d3Jvbmcta2V5LWljZWNkYy1Lcjg="
		check(t, cs.metadataArgs(wrong), "load metadata "+cs.tbl.MetadataLocation(), cs.where("lake", cs.endpoint)+": access denied")
	})
}

func TestFakeGCS(t *testing.T) {
	ep := cloudEndpoint(t, envGCS, "GCS (fake-gcs-server)")
	isolateCloud(t)
	cs := &cloudStore{
		kind:      "gcs",
		endpoint:  ep,
		warehouse: "gs://lake/wh",
		props: func(ep string) map[string]string {
			return map[string]string{"gcs.endpoint": "http://" + ep + "/storage/v1/", "gcs.oauth2.token": gcsToken}
		},
		anonymous: func(ep string) map[string]string {
			return map[string]string{"gcs.endpoint": "http://" + ep + "/storage/v1/"}
		},
		where: func(bucket, ep string) string {
			return fmt.Sprintf("gcs bucket %s at http://%s/storage/v1/", bucket, ep)
		},
		secrets: []string{gcsToken},
		bucket: func(loc, b string) string {
			return strings.Replace(loc, "gs://lake/", "gs://"+b+"/", 1)
		},
		create: func(t *testing.T, bucket string) {
			resp, err := http.Post("http://"+ep+"/storage/v1/b?project=icecdc", "application/json",
				strings.NewReader(fmt.Sprintf(`{"name": %q}`, bucket)))
			if err != nil {
				t.Fatalf("create bucket %s: %v", bucket, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
				t.Fatalf("create bucket %s: %s", bucket, resp.Status)
			}
		},
	}
	testCloudStore(t, cs, func(t *testing.T) {
		// A public bucket: gcs.no-auth, no token.
		p := cs.anonymous(cs.endpoint)
		p["gcs.no-auth"] = "true"
		cs.wantStory(t, cs.metadataArgs(p))
	}, nil)
}

// badCheck runs changes with args and wants a failure: one line on stderr
// holding every part.
type badCheck func(t *testing.T, args []string, parts ...string) int

// testCloudStore writes the bookshop story to the store and reads it with
// `icecdc changes` and `icecdc run`: every event exact, the replay contract
// holding for every snapshot; then breaks the store as users' stores
// break. more reads the table in ways only one store has; moreBad adds
// failures only one store can show.
func testCloudStore(t *testing.T, cs *cloudStore, more func(t *testing.T), moreBad func(t *testing.T, check badCheck)) {
	start := time.Now()
	cs.create(t, "lake")
	ctx := context.Background()
	env, err := scenario.NewEnvWith(ctx, t.TempDir(), scenario.EnvOptions{Warehouse: cs.warehouse, Props: cs.props(cs.endpoint)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"bookshop", "orders"}, scenario.OrdersSchema(), nil, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bookshopStory() {
		if tbl, err = s.do(ctx, tbl); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
	}
	cs.tbl = tbl
	cs.catArgs = append([]string{"--catalog-type", "sql", "--catalog-uri", env.CatalogURI, "--warehouse", env.Warehouse,
		"--table", "bookshop.orders"}, propArgs(cs.props(cs.endpoint))...)
	t.Logf("bookshop story written to %s in %s", tbl.MetadataLocation(), time.Since(start).Round(time.Millisecond))
	if !strings.HasPrefix(tbl.MetadataLocation(), cs.warehouse+"/") {
		t.Fatalf("metadata at %s, want it under %s", tbl.MetadataLocation(), cs.warehouse)
	}

	t.Run("changes", func(t *testing.T) {
		cs.wantStory(t, append([]string{"changes"}, cs.catArgs...))
		cs.wantStory(t, cs.metadataArgs(cs.props(cs.endpoint)))
		src, err := source.Open(ctx, source.Options{MetadataPath: tbl.MetadataLocation(), Props: cs.props(cs.endpoint), Table: "bookshop.orders"})
		if err != nil {
			t.Fatal(err)
		}
		n, err := replay.Check(ctx, src, tbl)
		if err != nil {
			t.Fatalf("replay from %s: %v", cs.kind, err)
		}
		t.Logf("replay: %d snapshots exact", len(n))
		if more != nil {
			more(t)
		}
	})
	t.Run("daemon", func(t *testing.T) { testCloudDaemon(t, cs, env) })
	t.Run("bad input", func(t *testing.T) { testCloudBadInput(t, cs, moreBad) })
}

// wantStory runs args and wants exactly the story's events, with no
// secret in the output.
func (cs *cloudStore) wantStory(t *testing.T, args []string) {
	t.Helper()
	out, errOut, code := runCmd(args...)
	cs.noSecrets(t, "changes output", out+errOut)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args[:3], " "), code, errOut)
	}
	if got, want := summaries(t, out), strings.Join(bookshopEvents, "\n"); got != want {
		t.Fatalf("%v:\n%s\nwant:\n%s", args[:3], got, want)
	}
}

// metadataArgs are changes flags reading the table's metadata file with props.
func (cs *cloudStore) metadataArgs(props map[string]string) []string {
	return append([]string{"changes", "--metadata", cs.tbl.MetadataLocation()}, propArgs(props)...)
}

func (cs *cloudStore) noSecrets(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range cs.secrets {
		if strings.Contains(text, s) {
			t.Fatalf("%s shows the credential %q:\n%s", where, s, text)
		}
	}
}

// testCloudDaemon runs `icecdc run` with a file sink on the table: every
// event of the story is delivered, and the log shows no credential.
func testCloudDaemon(t *testing.T, cs *cloudStore, env *scenario.Env) {
	dir := t.TempDir()
	var ps []string
	props := cs.props(cs.endpoint)
	for _, k := range sortedKeys(props) {
		ps = append(ps, fmt.Sprintf("%s: '%s'", k, props[k]))
	}
	events := dir + "/events.jsonl"
	catalog := fmt.Sprintf("{type: sql, uri: '%s', warehouse: '%s', properties: {%s}}", env.CatalogURI, env.Warehouse, strings.Join(ps, ", "))
	cfg := writeConfig(t, cs.kind+"-cdc", catalog, fmt.Sprintf("{type: file, file: {path: '%s'}}", events), dir+"/state.db")
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "every event", func() bool {
		b, _ := os.ReadFile(events)
		return len(parseLines(t, string(b))) >= len(bookshopEvents)
	})
	d.stop(t)
	b, _ := os.ReadFile(events)
	if got, want := summaries(t, string(b)), strings.Join(bookshopEvents, "\n"); got != want {
		t.Fatalf("delivered:\n%s\nwant:\n%s", got, want)
	}
	cs.noSecrets(t, "the log", d.logs.String())
}

// testCloudBadInput breaks the store as a user's network and bucket break
// it: each failure is one line naming the object and the store, retried
// where a retry helps, never showing a credential, and the events printed
// before it are exactly the first of the story.
func testCloudBadInput(t *testing.T, cs *cloudStore, moreBad func(t *testing.T, check badCheck)) {
	want := bookshopEvents
	run := func(t *testing.T, args []string) (out, errOut string, code int, events int) {
		t.Helper()
		start := time.Now()
		out, errOut, code = runCmd(args...)
		t.Logf("exit %d in %s: %s", code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(errOut))
		cs.noSecrets(t, "output", out+errOut)
		got := parseLines(t, out)
		if len(got) > len(want) {
			t.Fatalf("%d events, the story has %d", len(got), len(want))
		}
		for i, l := range got {
			if l.summary() != want[i] {
				t.Fatalf("event %d is %q, want %q: an event was skipped or invented", i, l.summary(), want[i])
			}
		}
		return out, errOut, code, len(got)
	}
	var check badCheck = func(t *testing.T, args []string, parts ...string) int {
		t.Helper()
		_, errOut, code, n := run(t, args)
		checkOneLineError(t, code, errOut, parts...)
		return n
	}
	succeeds := func(t *testing.T, args []string) {
		t.Helper()
		_, errOut, code, n := run(t, args)
		if code != 0 || n != len(want) {
			t.Fatalf("exit %d with %d of %d events: %s", code, n, len(want), errOut)
		}
	}
	meta := cs.tbl.MetadataLocation()
	proxy := moto.NewProxy(t, "http://"+cs.endpoint)
	proxyEP := strings.TrimPrefix(proxy.URL, "http://")
	proxyProps := cs.props(proxyEP)
	if cs.kind == "gcs" {
		// fake-gcs-server serves the XML API only at its public host,
		// which a proxy is not: read through the JSON API.
		proxyProps["gcs.usejsonapi"] = "true"
	}
	viaProxy := append([]string{"changes"}, withProps(cs.catArgs, proxyProps)...)
	data := func(r *http.Request) bool { return strings.Contains(r.URL.Path, ".parquet") }

	t.Run("wrong endpoint", func(t *testing.T) {
		check(t, cs.metadataArgs(cs.props("127.0.0.1:1")), "load metadata "+meta,
			cs.where("lake", "127.0.0.1:1")+": cannot connect to 127.0.0.1:1", "connection refused")
		if cs.kind == "gcs" {
			// The sql catalog reads the metadata file with a GCS client
			// of its own, which retries a refused connection until the
			// load's deadline (two minutes): too long to wait for here.
			return
		}
		check(t, append([]string{"changes"}, withProps(cs.catArgs, cs.props("127.0.0.1:1"))...),
			"load table bookshop.orders: read metadata "+meta, cs.where("lake", "127.0.0.1:1")+": cannot connect to 127.0.0.1:1")
	})
	t.Run("missing credentials", func(t *testing.T) {
		check(t, cs.metadataArgs(cs.anonymous(cs.endpoint)), "load metadata "+meta, cs.where("lake", cs.endpoint)+": no credentials: set ")
	})
	t.Run("no such bucket", func(t *testing.T) {
		other := cs.bucket(meta, "nolake")
		check(t, append([]string{"changes", "--metadata", other}, propArgs(cs.props(cs.endpoint))...),
			"load metadata "+other, cs.where("nolake", cs.endpoint)+": no such "+map[string]string{"azure": "container", "gcs": "bucket"}[cs.kind])
	})
	t.Run("unavailable once per data file is retried", func(t *testing.T) {
		var n atomic.Int32
		proxy.Set(func(r *http.Request, seen int) moto.Fault {
			if data(r) && seen == 0 {
				n.Add(1)
				return moto.Unavailable
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		succeeds(t, viaProxy)
		if n.Load() == 0 {
			t.Fatal("no request was refused")
		}
	})
	t.Run("dropped once per data file is retried", func(t *testing.T) {
		proxy.Set(func(r *http.Request, seen int) moto.Fault {
			if data(r) && seen == 0 {
				return moto.Drop
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		succeeds(t, viaProxy)
	})
	t.Run("unavailable always", func(t *testing.T) {
		proxy.Set(func(r *http.Request, _ int) moto.Fault {
			if data(r) {
				return moto.Unavailable
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		check(t, viaProxy, "data file "+cs.warehouse+"/bookshop.db/orders/data/", cs.where("lake", proxyEP)+": the service is failing: HTTP 503")
	})
	if moreBad != nil {
		moreBad(t, check)
	}
	t.Run("missing object", func(t *testing.T) {
		// The data file the fourth snapshot (insert order 6) added: the
		// events of the snapshots before it are printed, then the error.
		ctx := context.Background()
		entries, err := scenario.OwnEntries(ctx, cs.tbl, scenario.Snapshots(cs.tbl)[3])
		if err != nil {
			t.Fatal(err)
		}
		var path string
		for _, e := range entries {
			if strings.HasSuffix(e.Path, ".parquet") {
				path = e.Path
			}
		}
		fsys, err := iceio.LoadFS(ctx, cs.props(cs.endpoint), path)
		if err == nil {
			err = fsys.Remove(path)
		}
		if err != nil {
			t.Fatalf("remove %s: %v", path, err)
		}
		if n := check(t, append([]string{"changes"}, cs.catArgs...), "data file "+path, cs.where("lake", cs.endpoint)+": no such object"); n != 7 {
			t.Fatalf("%d events before the error, want the 7 of snapshots 1-3", n)
		}
	})
}

// withProps replaces the --catalog-prop flags of args by props.
func withProps(args []string, props map[string]string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--catalog-prop" {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return append(out, propArgs(props)...)
}
