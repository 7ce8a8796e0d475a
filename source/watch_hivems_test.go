package source_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hive"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/thrift/lib/go/thrift"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// envHiveURI is the thrift://host:port of a Hive 3.x metastore, which the
// interop stage (interop/run.sh, part hive) starts and sets.
const envHiveURI = "ICECDC_HIVE_URI"

// proxyThrift starts a TCP proxy in front of the metastore at addr
// (host:port) that counts the calls its clients send, by Thrift method
// name, read from the binary protocol's message headers of the traffic it
// forwards; it returns its own address.
func proxyThrift(t *testing.T, addr string) (string, *callCounts) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &callCounts{}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", addr)
			if err != nil {
				client.Close()
				continue
			}
			conns.Add(2)
			go func() {
				defer conns.Done()
				io.Copy(client, server)
				client.Close()
			}()
			go func() {
				defer conns.Done()
				countThrift(c, client, server)
				server.Close()
			}()
		}
	}()
	return ln.Addr().String(), c
}

// countThrift reads the Thrift messages of r, counting their method
// names, and writes each to w only once it is counted: the metastore sees
// a call, and its client an answer, only after the count has it, so a
// count taken when a client's calls have returned holds every one of them.
func countThrift(c *callCounts, r io.Reader, w io.Writer) {
	ctx := context.Background()
	var held bytes.Buffer
	p := thrift.NewTBinaryProtocolConf(thrift.NewStreamTransportR(io.TeeReader(r, &held)), nil)
	for {
		name, _, _, err := p.ReadMessageBegin(ctx)
		if err == nil {
			c.add(name)
			if err = p.Skip(ctx, thrift.STRUCT); err == nil {
				err = p.ReadMessageEnd(ctx)
			}
		}
		if _, werr := w.Write(held.Bytes()); werr != nil {
			return
		}
		held.Reset()
		if err != nil {
			io.Copy(w, r)
			return
		}
	}
}

// TestHiveCatalogChecksChangesInBulk: against a real Hive metastore, a
// shared hive catalog of 150 tables checks them all with two
// get_table_objects_by_name calls a check (batches of 100) and no
// get_table, over 20 checks of the idle catalog, counted in the Thrift
// traffic at a proxy in front of the metastore; then exactly the table a
// writer committed to is woken, and its Refresh finds the commit.
func TestHiveCatalogChecksChangesInBulk(t *testing.T) {
	uri := os.Getenv(envHiveURI)
	if uri == "" {
		t.Skipf("%s is not set: the hive tests run in the interop stage (interop/run.sh starts a Hive metastore and sets it)", envHiveURI)
	}
	const tables, checks = 150, 20
	ctx := context.Background()
	wh := "file://" + t.TempDir()
	loaded, err := catalog.Load(ctx, "hive", iceberg.Properties{"type": "hive", "uri": uri, "warehouse": wh})
	if err != nil {
		t.Fatalf("connect to the metastore at %s: %v", uri, err)
	}
	writer := loaded.(*hive.Catalog)
	defer writer.Close()
	// A database of its own: a metastore kept between runs keeps the
	// tables of the runs before.
	ns := fmt.Sprintf("icecdc_bulk_%d", time.Now().UnixNano())
	first, err := scenario.CreateTableIn(ctx, writer, table.Identifier{ns, "t000"}, scenario.TableDef{Schema: scenario.OrdersSchema(), FormatVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	if first, err = scenario.Append(ctx, first, orders(1, 3)); err != nil {
		t.Fatal(err)
	}
	names := []string{ns + ".t000"}
	for i := 1; i < tables; i++ {
		ident := table.Identifier{ns, fmt.Sprintf("t%03d", i)}
		if _, err := writer.RegisterTable(ctx, ident, first.MetadataLocation()); err != nil {
			t.Fatal(err)
		}
		names = append(names, strings.Join(ident, "."))
	}
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	addr, calls := proxyThrift(t, u.Host)
	o := source.Options{CatalogType: "hive", CatalogURI: "thrift://" + addr, Warehouse: wh}
	checkBulkCounted(t, o, names, checks, calls, func(got map[string]int) string {
		if want := map[string]int{"get_table_objects_by_name": checks * 2}; fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Sprintf("calls %v, want %v (two batches a check)", got, want)
		}
		return ""
	}, func(name string) { commitTo(t, writer, name) })
}
