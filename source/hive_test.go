package source_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/icecdc/icecdc/source"
)

// fakeMetastore listens on loopback and serves each connection with
// serve; it returns the thrift:// URI and the count of connections.
func fakeMetastore(t *testing.T, serve func(net.Conn)) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				serve(c)
				<-done
			}()
		}
	}()
	return "thrift://" + ln.Addr().String(), &n
}

// unknownMethods answers every call as a Hive 4.0.1 metastore answers
// get_table: Thrift's "Invalid method name".
func unknownMethods(c net.Conn) {
	ctx := context.Background()
	p := thrift.NewTBinaryProtocolConf(thrift.NewStreamTransportRW(c), nil)
	for {
		name, _, seq, err := p.ReadMessageBegin(ctx)
		if err != nil {
			return
		}
		p.Skip(ctx, thrift.STRUCT)
		p.ReadMessageEnd(ctx)
		p.WriteMessageBegin(ctx, name, thrift.EXCEPTION, seq)
		thrift.NewTApplicationException(thrift.UNKNOWN_METHOD, "Invalid method name: '"+name+"'").Write(ctx, p)
		p.WriteMessageEnd(ctx)
		if p.Flush(ctx) != nil {
			return
		}
	}
}

// TestHiveErrors: each way a metastore fails is one line naming it (its
// URI without the password) and the table, and a metastore that never
// answers holds a load no longer than the call's bound; every failed call
// drops the connection, so that the next load connects again.
func TestHiveErrors(t *testing.T) {
	defer source.SetHiveTimeouts(time.Second, time.Second)()
	const password = "Pw-hive-7Rq"
	withPassword := func(uri string) string { return strings.Replace(uri, "thrift://", "thrift://icecdc:"+password+"@", 1) }
	redacted := func(uri string) string { return strings.Replace(uri, "thrift://", "thrift://icecdc:xxxxx@", 1) }

	refused := "thrift://" + closedAddr(t)
	silent, silentConns := fakeMetastore(t, func(c net.Conn) { c.Read(make([]byte, 1<<16)) })
	dropping, _ := fakeMetastore(t, func(c net.Conn) { c.Close() })
	hive4, _ := fakeMetastore(t, unknownMethods)
	for _, tc := range []struct {
		name, uri string
		parts     []string
	}{
		{"nothing listening", refused, []string{"load table shop.orders: ", "hive metastore at " + redacted(refused) + ": cannot connect to " + strings.TrimPrefix(refused, "thrift://") + ": connect: connection refused"}},
		{"no answer", silent, []string{"load table shop.orders: hive metastore at " + redacted(silent) + ": no answer within 1s"}},
		{"connection dropped", dropping, []string{"load table shop.orders: hive metastore at " + redacted(dropping) + ": the connection was dropped", "without SASL, Kerberos or framing"}},
		{"hive 4.0.1", hive4, []string{"load table shop.orders: hive metastore at " + redacted(hive4) + ": the metastore does not know the Thrift call get_table", "use a Hive 3.x metastore"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := source.New(source.Options{CatalogType: "hive", CatalogURI: withPassword(tc.uri), Table: "shop.orders"})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			start := time.Now()
			_, err = src.Refresh(context.Background())
			if err == nil {
				t.Fatal("Refresh succeeded")
			}
			msg := err.Error()
			t.Logf("%s in %s", msg, time.Since(start).Round(time.Millisecond))
			if strings.Contains(msg, "\n") || strings.Contains(msg, password) {
				t.Fatalf("not one line, or shows the password: %q", msg)
			}
			for _, p := range tc.parts {
				if !strings.Contains(msg, p) {
					t.Fatalf("error lacks %q: %s", p, msg)
				}
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("took %s", time.Since(start))
			}
		})
	}
	// The silent metastore was connected to once per load: the connection
	// that timed out was dropped, not reused.
	src, err := source.New(source.Options{CatalogType: "hive", CatalogURI: silent, Table: "shop.orders"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	before := silentConns.Load()
	for range 2 {
		var na interface{ Timeout() bool }
		if _, err := src.Refresh(context.Background()); !errors.As(err, &na) || !na.Timeout() {
			t.Fatalf("Refresh: %v, want a timeout", err)
		}
	}
	if n := silentConns.Load() - before; n != 2 {
		t.Fatalf("%d connections for two loads, want 2", n)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestHiveCheckErrors: a change check of a metastore that does not answer
// or does not know get_table_objects_by_name fails with one line naming
// the metastore and the database, within the call's bound, and leaves the
// table to its own polls.
func TestHiveCheckErrors(t *testing.T) {
	defer source.SetHiveTimeouts(time.Second, time.Second)()
	silent, _ := fakeMetastore(t, func(c net.Conn) { c.Read(make([]byte, 1<<16)) })
	hive4, _ := fakeMetastore(t, unknownMethods)
	for _, tc := range []struct{ name, uri, want string }{
		{"no answer", silent, "no answer within 1s"},
		{"hive 4.0.1", hive4, "the metastore does not know the Thrift call get_table_objects_by_name that icecdc's change check makes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := source.Options{CatalogType: "hive", CatalogURI: tc.uri}
			cat := source.NewCatalog(o, 2)
			defer cat.Close()
			o.Table, o.Catalog = "shop.orders", cat
			src, err := source.New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			err = cat.CheckChanges(context.Background())
			t.Logf("check: %v", err)
			if err == nil {
				t.Fatal("the check passed")
			}
			if msg, want := err.Error(), "check for changes: database shop: hive metastore at "+tc.uri+": "+tc.want; !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
				t.Fatalf("error %q, want it to begin %q, on one line", msg, want)
			}
			if _, covered := src.Changes(); covered {
				t.Fatal("a failed check covers the table")
			}
		})
	}
}
