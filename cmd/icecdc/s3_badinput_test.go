package main

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/internal/scenario"
)

// testS3BadInput reads the bookshop story on S3 through a proxy that
// breaks the store in the ways a user's network and bucket break: each
// failure is one line on stderr naming the object and the store, retried
// where a retry helps, never printing a credential, and the events printed
// before it are exactly the first events of the story (none skipped, none
// invented).
func testS3BadInput(t *testing.T, fx *s3Fixture) {
	srv, catArgs, tbl := fx.srv, fx.catArgs, fx.tbl
	proxy := moto.NewProxy(t, srv.Endpoint)
	viaProxy := withEndpoint(catArgs, proxy.URL)
	// Two attempts per request keep the backoff of failing cases short;
	// the default is 5 (AWS_MAX_ATTEMPTS overrides it).
	t.Setenv("AWS_MAX_ATTEMPTS", "2")

	want := bookshopEvents
	// check runs changes and wants success with every event, or failure
	// with one line holding parts and a prefix of the events.
	check := func(t *testing.T, args []string, fail bool, parts ...string) (events int) {
		t.Helper()
		start := time.Now()
		out, errOut, code := runCmd(append([]string{"changes"}, args...)...)
		t.Logf("%s: exit %d in %s: %s", t.Name(), code, time.Since(start).Round(time.Millisecond), strings.TrimSpace(errOut))
		for _, secret := range []string{moto.SecretKey, moto.AccessKey} {
			if strings.Contains(errOut, secret) || strings.Contains(out, secret) {
				t.Fatalf("output shows the credential %q:\n%s", secret, errOut)
			}
		}
		got := parseLines(t, out)
		if len(got) > len(want) {
			t.Fatalf("%d events, the story has %d", len(got), len(want))
		}
		for i, l := range got {
			if l.summary() != want[i] {
				t.Fatalf("event %d is %q, want %q: an event was skipped or invented", i, l.summary(), want[i])
			}
		}
		if !fail {
			if code != 0 || len(got) != len(want) {
				t.Fatalf("exit %d with %d of %d events: %s", code, len(got), len(want), errOut)
			}
			return len(got)
		}
		checkOneLineError(t, code, errOut, parts...)
		return len(got)
	}
	data := func(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, ".parquet") }

	t.Run("wrong endpoint", func(t *testing.T) {
		check(t, withEndpoint(catArgs, "http://127.0.0.1:1"), true,
			"load table bookshop.orders: read metadata s3://lake/wh/bookshop.db/orders/metadata/",
			"s3 bucket lake at http://127.0.0.1:1: cannot connect to 127.0.0.1:1", "connection refused", "(after 2 attempts)")
	})
	t.Run("missing credentials", func(t *testing.T) {
		var args []string
		for _, a := range viaProxy {
			if !strings.HasPrefix(a, "s3.access-key-id=") && !strings.HasPrefix(a, "s3.secret-access-key=") {
				args = append(args, a)
			}
		}
		args = dropEmptyProps(args)
		check(t, args, true, "s3://lake/wh/bookshop.db/orders/metadata/",
			"s3 bucket lake at "+proxy.URL+": no credentials: set s3.access-key-id and s3.secret-access-key")
	})
	t.Run("denied", func(t *testing.T) {
		proxy.Set(func(r *http.Request, _ int) moto.Fault {
			if data(r) {
				return moto.Denied
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		check(t, viaProxy, true, "data file s3://lake/wh/bookshop.db/orders/data/",
			"s3 bucket lake at "+proxy.URL+": access denied (AccessDenied)")
	})
	t.Run("no such bucket", func(t *testing.T) {
		meta := strings.Replace(tbl.MetadataLocation(), "s3://lake/", "s3://nolake/", 1)
		args := []string{"--metadata", meta}
		for _, a := range viaProxy {
			if strings.HasPrefix(a, "s3.") {
				args = append(args, "--catalog-prop", a)
			}
		}
		check(t, args, true, "load metadata "+meta, "s3 bucket nolake at "+proxy.URL+": no such bucket")
	})
	t.Run("throttled once per object is retried", func(t *testing.T) {
		var n atomic.Int32
		proxy.Set(func(r *http.Request, seen int) moto.Fault {
			// The first request of the first two objects (the backoff
			// between attempts is up to 2s each).
			if seen == 0 && n.Add(1) <= 2 {
				return moto.Unavailable
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		check(t, viaProxy, false)
	})
	t.Run("dropped once is retried", func(t *testing.T) {
		proxy.Set(func(r *http.Request, seen int) moto.Fault {
			if data(r) && seen == 0 {
				return moto.Drop
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		check(t, viaProxy, false)
	})
	t.Run("throttled always", func(t *testing.T) {
		proxy.Set(func(r *http.Request, _ int) moto.Fault {
			if data(r) {
				return moto.Unavailable
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		check(t, viaProxy, true, "data file s3://lake/wh/bookshop.db/orders/data/",
			"s3 bucket lake at "+proxy.URL+": the store is failing or throttling: HTTP 503 SlowDown (after 2 attempts)")
	})
	t.Run("dropped always", func(t *testing.T) {
		proxy.Set(func(r *http.Request, _ int) moto.Fault {
			if data(r) {
				return moto.Drop
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		check(t, viaProxy, true, "data file s3://lake/wh/bookshop.db/orders/data/",
			"s3 bucket lake at "+proxy.URL+": the connection was dropped (after 2 attempts)")
	})
	t.Run("stalled", func(t *testing.T) {
		proxy.Set(func(r *http.Request, _ int) moto.Fault {
			if data(r) {
				return moto.Stall
			}
			return moto.Pass
		})
		defer proxy.Set(nil)
		check(t, append(viaProxy, "--catalog-prop", "s3.request-timeout=500ms"), true,
			"data file s3://lake/wh/bookshop.db/orders/data/",
			"s3 bucket lake at "+proxy.URL+": no answer within 500ms (s3.request-timeout) (after 2 attempts)")
	})
	t.Run("missing object", func(t *testing.T) {
		// The data file the fourth snapshot (insert order 6) added: the
		// events of the snapshots before it are printed, then the error.
		ctx := context.Background()
		snaps := scenario.Snapshots(tbl)
		entries, err := scenario.OwnEntries(ctx, tbl, snaps[3])
		if err != nil {
			t.Fatal(err)
		}
		var path string
		for _, e := range entries {
			if strings.HasSuffix(e.Path, ".parquet") {
				path = e.Path
			}
		}
		removeObject(t, srv, path)
		n := check(t, viaProxy, true, "data file "+path, "s3 bucket lake at "+proxy.URL+": no such object")
		if n != 7 {
			t.Fatalf("%d events before the error, want the 7 of snapshots 1-3", n)
		}
	})
}

// dropEmptyProps removes --catalog-prop flags left without their value.
func dropEmptyProps(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--catalog-prop" && (i+1 == len(args) || strings.HasPrefix(args[i+1], "--")) {
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// removeObject deletes an object of the moto server behind the table.
func removeObject(t *testing.T, srv *moto.Server, path string) {
	t.Helper()
	fsys, err := iceio.LoadFS(context.Background(), moto.S3Props(srv.Endpoint), path)
	if err == nil {
		err = fsys.Remove(path)
	}
	if err != nil {
		t.Fatalf("remove %s: %v", path, err)
	}
}

// checkOneLineError fails t unless a command exited 1 with an error of one
// line holding every one of parts.
func checkOneLineError(t *testing.T, code int, errOut string, parts ...string) {
	t.Helper()
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	if n := strings.Count(strings.TrimRight(errOut, "\n"), "\n"); n != 0 {
		t.Fatalf("error spans %d lines:\n%s", n+1, errOut)
	}
	for _, p := range parts {
		if !strings.Contains(errOut, p) {
			t.Fatalf("error lacks %q:\n%s", p, errOut)
		}
	}
}
