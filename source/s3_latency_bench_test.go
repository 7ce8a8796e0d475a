//go:build unix

package source_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/uptrace/bun/driver/sqliteshim"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// BenchmarkLatencyS3 is BenchmarkLatency's merge200 and idle cases against
// a real S3 API: moto's server (internal/moto) behind an HTTP reverse proxy
// that waits a fixed delay before forwarding each request and counts them,
// read through the S3 file IO icecdc links (iceberg-go's gocloud). moto
// answers a few hundred requests a second, so the parallel cases measure
// moto more than the delay; the request counts and the idle poll are the
// point. It runs only when asked:
//
//	ICECDC_S3_BENCH=1 go test ./source -run '^$' -bench LatencyS3 -benchtime 1x -count 5 -timeout 60m
func BenchmarkLatencyS3(b *testing.B) {
	if os.Getenv("ICECDC_S3_BENCH") == "" {
		b.Skip("set ICECDC_S3_BENCH=1 to run against moto's S3")
	}
	ctx := context.Background()
	srv := moto.Start(b)
	srv.CreateBucket(b, "bench")
	proxy := newDelayProxy(b, srv.Endpoint)
	props := map[string]string(moto.S3Props(proxy.URL))
	lt := buildMerge200S3(b, ctx, props)
	for _, delay := range []time.Duration{20 * time.Millisecond, 50 * time.Millisecond} {
		for _, conc := range []int{16, 64, 1} {
			b.Run(fmt.Sprintf("merge200/cold/delay=%s/conc=%d", delay, conc), func(b *testing.B) {
				o := source.Options{MetadataPath: lt.meta, Props: props, IOConcurrency: conc}
				proxy.measure(b, delay, func() (int, error) {
					src, err := source.Open(ctx, o)
					if err != nil {
						return 0, err
					}
					defer src.Close()
					return commitEvents(ctx, src, lt.last)
				})
			})
		}
		b.Run(fmt.Sprintf("idle/metadata/delay=%s", delay), func(b *testing.B) {
			src, err := source.Open(ctx, source.Options{MetadataPath: lt.meta, Props: props})
			if err != nil {
				b.Fatal(err)
			}
			defer src.Close()
			proxy.measure(b, delay, func() (int, error) {
				changed, err := src.Refresh(ctx)
				if err == nil && changed {
					err = fmt.Errorf("an idle Refresh says the table changed")
				}
				return 0, err
			})
		})
	}
}

// delayProxy forwards requests to the S3 server after a fixed delay.
type delayProxy struct {
	*httptest.Server
	delay    atomic.Int64
	requests atomic.Int64
}

func newDelayProxy(b *testing.B, target string) *delayProxy {
	u, err := url.Parse(target)
	if err != nil {
		b.Fatal(err)
	}
	p := &delayProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		time.Sleep(time.Duration(p.delay.Load()))
		rp.ServeHTTP(w, r)
	}))
	b.Cleanup(p.Close)
	return p
}

func (p *delayProxy) measure(b *testing.B, delay time.Duration, op func() (int, error)) {
	b.Helper()
	p.delay.Store(int64(delay))
	defer p.delay.Store(0)
	p.requests.Store(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	wall := float64(b.Elapsed().Nanoseconds()) / n
	b.ReportMetric(wall/1e6, "ms/op")
	b.ReportMetric(float64(p.requests.Load())/n, "requests/op")
	b.ReportMetric(wall/float64(delay.Nanoseconds()), "roundtrips/op")
	b.ReportMetric(wall/float64(5*delay.Nanoseconds()), "x-bound")
}

// buildMerge200S3 builds buildMerge200's table with its warehouse in the
// bucket, through a SQL catalog whose file is local.
func buildMerge200S3(b *testing.B, ctx context.Context, s3 map[string]string) *latencyTable {
	b.Helper()
	dir := b.TempDir()
	props := iceberg.Properties{
		"type": "sql", "uri": "file:" + filepath.Join(dir, "catalog.db"), "warehouse": "s3://bench/wh",
		"init_catalog_tables": "true", sqlcat.DriverKey: sqliteshim.ShimName, sqlcat.DialectKey: string(sqlcat.SQLite),
	}
	for k, v := range s3 {
		props[k] = v
	}
	props["s3.force-virtual-addressing"] = "false" // iceberg-go's own name for path-style requests
	cat, err := catalog.Load(ctx, scenario.CatalogName, props)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cat.(catalog.Closer).Close() })
	env := &scenario.Env{Dir: dir, CatalogURI: props["uri"], Warehouse: "s3://bench/wh", Catalog: cat}
	start := time.Now()
	lt, err := fillMerge200(ctx, env, source.Options{Props: s3})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built the merge200 table on S3 in %s", time.Since(start).Round(time.Millisecond))
	return lt
}
