package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// The hive catalog's test runs against a Hive metastore that the interop
// stage (interop/run.sh, part hive) starts: Hive's standalone metastore
// 3.1.3 on embedded Derby. It is an external process, so the default
// `go test ./...` skips it.
const envHive = "ICECDC_HIVE_URI" // thrift://host:port of a Hive 3.x metastore

// hivePassword is given in the URI's user info, which the metastore
// ignores (its Thrift is plain): it is there to check that no output
// shows it.
const hivePassword = "hive-Pw-4Tz9"

// TestHiveMetastore writes the bookshop story through iceberg-go's hive
// catalog, every commit locking the table in the metastore, into a local
// warehouse, and reads it with `icecdc changes` and `icecdc run` (a file
// sink, following the namespace, with a retention hold committed through
// the metastore and removed by `icecdc reset`): every event exact, the
// replay contract holding at every snapshot. Then the metastore is given
// wrong: each failure one line naming it, or the table.
func TestHiveMetastore(t *testing.T) {
	uri := os.Getenv(envHive)
	if uri == "" {
		t.Skipf("%s is not set: the hive test runs in the interop stage (interop/run.sh starts a Hive metastore and sets it)", envHive)
	}
	start := time.Now()
	ctx := context.Background()
	wh := "file://" + t.TempDir()
	cat, err := catalog.Load(ctx, "hive", iceberg.Properties{"type": "hive", "uri": uri, "warehouse": wh})
	if err != nil {
		t.Fatalf("connect to the metastore at %s: %v", uri, err)
	}
	defer cat.(catalog.Closer).Close()
	// A database of its own: a metastore kept between runs keeps the
	// tables of the runs before.
	ns := fmt.Sprintf("icecdc_%d", time.Now().UnixNano())
	name := ns + ".orders"
	ident := table.Identifier{ns, "orders"}
	tbl, err := scenario.CreateTableIn(ctx, cat, ident, scenario.TableDef{Schema: scenario.OrdersSchema(), FormatVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bookshopStory() {
		if tbl, err = s.do(ctx, tbl); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
	}
	if v := tbl.Metadata().Version(); v != 3 {
		t.Fatalf("format version %d, want 3", v)
	}
	// The metastore keeps the database's location as Hadoop writes it,
	// file:/x for file:///x.
	if loc := tbl.MetadataLocation(); !strings.HasPrefix(strings.Replace(loc, "file:/", "file:///", 1), wh+"/") {
		t.Fatalf("metadata at %s, want it under the warehouse %s", loc, wh)
	}
	t.Logf("bookshop story written through the metastore at %s in %s: %d snapshots, metadata %s",
		uri, time.Since(start).Round(time.Millisecond), len(tbl.Metadata().Snapshots()), tbl.MetadataLocation())
	withPassword := strings.Replace(uri, "thrift://", "thrift://icecdc:"+hivePassword+"@", 1)
	catArgs := []string{"--catalog-type", "hive", "--catalog-uri", withPassword, "--warehouse", wh,
		"--catalog-prop", "iceberg.hive.lock-check-min-wait-ms=20", "--catalog-prop", "iceberg.hive.lock-check-max-wait-ms=1000"}

	t.Run("changes", func(t *testing.T) {
		out, errOut, code := runCmd(append([]string{"changes", "--table", name}, catArgs...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if strings.Contains(out+errOut, hivePassword) {
			t.Fatalf("output shows the URI's password:\n%s%s", out, errOut)
		}
		if got, want := summaries(t, out), strings.Join(bookshopEvents, "\n"); got != want {
			t.Fatalf("changes:\n%s\nwant:\n%s", got, want)
		}
		src, err := source.Open(ctx, source.Options{CatalogType: "hive", CatalogURI: uri, Warehouse: wh, Table: name})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		steps, err := replay.Check(ctx, src, tbl)
		if err != nil {
			t.Fatalf("replay through the hive catalog: %v", err)
		}
		t.Logf("replay: %d snapshots exact", len(steps))
	})
	t.Run("daemon", func(t *testing.T) { testHiveDaemon(t, cat, uri, wh, ident) })
	t.Run("bad input", func(t *testing.T) {
		closed := closedAddr(t)
		for _, tc := range []struct {
			name  string
			args  []string
			parts []string
		}{
			{"nothing listening", []string{"--catalog-uri", "thrift://icecdc:" + hivePassword + "@" + closed, "--table", name},
				[]string{"load table " + name + ": ", "hive metastore at thrift://icecdc:xxxxx@" + closed + ": cannot connect to " + closed + ": connect: connection refused"}},
			{"no such table", []string{"--table", ns + ".nothing"},
				[]string{"table " + ns + ".nothing does not exist in hive catalog", " at " + strings.Replace(withPassword, hivePassword, "xxxxx", 1), "; namespace " + ns + " holds "}},
			{"no such database", []string{"--table", ns + "_nodb.orders"},
				[]string{"table " + ns + "_nodb.orders does not exist in hive catalog", ": no namespace " + ns + "_nodb"}},
			{"not a metastore URI", []string{"--catalog-uri", "http://icecdc:" + hivePassword + "@" + strings.TrimPrefix(uri, "thrift://"), "--table", name},
				[]string{"changes: --catalog-uri http://icecdc:xxxxx@", "want thrift://host:port"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				args := append(append([]string{"changes"}, catArgs...), tc.args...) // the later flag wins
				start := time.Now()
				out, errOut, code := runCmd(args...)
				t.Logf("exit %d in %s: %s", code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(errOut))
				if out != "" {
					t.Fatalf("stdout %q", out)
				}
				checkOneLineError(t, code, errOut, tc.parts...)
				if strings.Contains(errOut, hivePassword) {
					t.Fatalf("the error shows the URI's password: %s", errOut)
				}
			})
		}
	})
}

// testHiveDaemon runs `icecdc run` on the namespace (the hive catalog
// lists its tables) with a file sink and a retention hold, commits once
// more while it runs, and wants every event of the table's snapshots, the
// hold branch committed through the metastore, and `icecdc reset`
// removing it.
func testHiveDaemon(t *testing.T, cat catalog.Catalog, uri, wh string, ident table.Identifier) {
	ctx := context.Background()
	dir := t.TempDir()
	events := dir + "/events.jsonl"
	withPassword := strings.Replace(uri, "thrift://", "thrift://icecdc:"+hivePassword+"@", 1)
	cfg := dir + "/icecdc.yaml"
	body := fmt.Sprintf(`name: hive-cdc
catalog: {type: hive, uri: '%s', warehouse: '%s', properties: {iceberg.hive.lock-check-min-wait-ms: '20', iceberg.hive.lock-check-max-wait-ms: '1000'}}
tables: [{name: '%s.*', start: earliest, hold: true}]
poll: {interval: 50ms}
hold_interval: 100ms
sink: {type: file, file: {path: '%s'}}
state: {path: '%s'}
`, withPassword, wh, ident[0], events, dir+"/state.db")
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := cdc.HoldRef("hive-cdc")
	d := startDaemon(t, "-c", cfg)
	d.waitFor(t, "the story's events", func() bool {
		b, _ := os.ReadFile(events)
		return len(parseLines(t, string(b))) >= len(bookshopEvents)
	})
	// One more commit while the daemon follows the table and moves its
	// hold: both lock the table in the metastore.
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if tbl, err = scenario.Append(ctx, tbl, []map[string]any{bookshopOrder(7, "gus", "new", 9.5)}); err != nil {
		t.Fatalf("append order 7 while the daemon runs: %v", err)
	}
	out, errOut, code := runCmd("changes", "--catalog-type", "hive", "--catalog-uri", uri, "--table", ident[0]+".orders")
	if code != 0 {
		t.Fatalf("changes: exit %d: %s", code, errOut)
	}
	want := summaries(t, out)
	if !strings.HasPrefix(want, strings.Join(bookshopEvents, "\n")+"\n7 c ") {
		t.Fatalf("changes after order 7:\n%s", want)
	}
	d.waitFor(t, "order 7 and the hold at the head", func() bool {
		b, _ := os.ReadFile(events)
		if summaries(t, string(b)) != want {
			return false
		}
		cur, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return false
		}
		id, ok := refSnapshot(cur.Metadata(), ref)
		return ok && id == cur.CurrentSnapshot().SnapshotID
	})
	d.stop(t)
	if n := len(d.logLines("retention hold placed")); n != 1 {
		t.Fatalf("%d 'retention hold placed' lines, want 1; logs:\n%s", n, d.logs.String())
	}
	if strings.Contains(d.logs.String(), hivePassword) {
		t.Fatalf("the log shows the URI's password:\n%s", d.logs.String())
	}
	cur, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	for n, r := range cur.Metadata().Refs() {
		if n == ref {
			t.Logf("hold %s: %s at snapshot %d, min-snapshots-to-keep %v (metadata %s)", n, r.SnapshotRefType, r.SnapshotID, deref(r.MinSnapshotsToKeep), cur.MetadataLocation())
			if r.SnapshotRefType != table.BranchRef || deref(r.MinSnapshotsToKeep) < 1 {
				t.Fatalf("hold ref %+v, want a branch keeping at least one snapshot", r)
			}
		}
	}

	out, errOut, code = runCmd("reset", "-c", cfg, "--all")
	if code != 0 {
		t.Fatalf("reset: exit %d: %s%s", code, out, errOut)
	}
	t.Logf("reset: %s", strings.TrimSpace(out))
	if cur, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if _, ok := refSnapshot(cur.Metadata(), ref); ok {
		t.Fatalf("reset left the hold %s on the table", ref)
	}
}

func refSnapshot(meta table.Metadata, name string) (int64, bool) {
	for n, r := range meta.Refs() {
		if n == name {
			return r.SnapshotID, true
		}
	}
	return 0, false
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}
