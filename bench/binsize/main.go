// Command binsize says what each module costs in an icecdc binary: the
// sizes of its symbols in the file (code, read-only data, data; the ELF
// symbol table go tool nm -size reads, less the zeroed bss), summed by the
// module of the package each symbol belongs to, and by the groups the
// README's table names (the catalogs' and object stores' SDKs). The
// runtime's tables (pclntab, funcdata) are counted under the standard
// library; the symbol table and DWARF are not symbols: the sum is less
// than the file.
//
//	go build -o /tmp/icecdc ./cmd/icecdc
//	go run ./bench/binsize /tmp/icecdc
package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// groups name the modules behind each catalog, object store or sink, by
// prefix.
var groups = []struct{ name, prefix string }{
	{"AWS SDK (S3 store, Glue catalog, SQS, SNS and Kinesis sinks)", "github.com/aws/"},
	{"Google Cloud SDK (GCS store)", "cloud.google.com/"},
	{"Google Cloud SDK (GCS store)", "google.golang.org/api"},
	{"Google Cloud SDK (GCS store)", "github.com/googleapis/"},
	{"Google Cloud SDK (GCS store)", "github.com/GoogleCloudPlatform/"},
	{"Azure SDK (ADLS/Blob store)", "github.com/Azure/"},
	{"Azure SDK (ADLS/Blob store)", "github.com/AzureAD/"},
	{"gRPC and protobuf (GCS, OTLP/gRPC)", "google.golang.org/grpc"},
	{"gRPC and protobuf (GCS, OTLP/gRPC)", "google.golang.org/protobuf"},
	{"gRPC and protobuf (GCS, OTLP/gRPC)", "google.golang.org/genproto"},
	{"gRPC and protobuf (GCS, OTLP/gRPC)", "github.com/envoyproxy/"},
	{"gRPC and protobuf (GCS, OTLP/gRPC)", "github.com/cncf/"},
	{"SQLite (sql catalog, pure Go)", "modernc.org/"},
	{"SQL catalog (bun, pgx, mysql drivers)", "github.com/uptrace/"},
	{"SQL catalog (bun, pgx, mysql drivers)", "github.com/jackc/"},
	{"SQL catalog (bun, pgx, mysql drivers)", "github.com/go-sql-driver/"},
	{"Hive metastore (thrift)", "github.com/apache/thrift"},
	{"Hive metastore (thrift)", "github.com/beltran/"},
	{"iceberg-go (REST, Glue, SQL, Hive, Hadoop catalogs; table reading)", "github.com/apache/iceberg-go"},
	{"Arrow and Parquet", "github.com/apache/arrow-go"},
	{"substrait (linked by iceberg-go)", "github.com/substrait-io/"},
	{"gocloud.dev (blob stores)", "gocloud.dev"},
	{"Kafka client (franz-go)", "github.com/twmb/"},
	{"OpenSearch client", "github.com/opensearch-project/"},
	{"Redis client (go-redis)", "github.com/redis/"},
	{"NATS client (nats.go)", "github.com/nats-io/"},
	{"RabbitMQ client (amqp091-go)", "github.com/rabbitmq/"},
	{"OpenTelemetry", "go.opentelemetry.io/"},
	{"Prometheus client", "github.com/prometheus/"},
	{"icecdc", "github.com/icecdc/"},
	{"Go standard library and runtime", ""},
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: binsize BINARY (built without -ldflags=-s)")
		os.Exit(2)
	}
	bin := os.Args[1]
	mods, err := modules()
	if err != nil {
		fail(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		fail(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		fail(fmt.Errorf("%s: %w (built with -ldflags=-s?)", bin, err))
	}
	byModule, byGroup := map[string]int64{}, map[string]int64{}
	var total int64
	for _, sym := range syms {
		// Only what the file holds: not the zeroed data (bss), which
		// costs memory at run time but no bytes on disk.
		if sym.Size == 0 || sym.Section == elf.SHN_UNDEF || int(sym.Section) >= len(f.Sections) ||
			f.Sections[sym.Section].Type == elf.SHT_NOBITS {
			continue
		}
		size := int64(sym.Size)
		mod := moduleOf(pkgOf(sym.Name), mods)
		byModule[mod] += size
		byGroup[groupOf(mod)] += size
		total += size
	}
	st, err := os.Stat(bin)
	if err != nil {
		fail(err)
	}
	fmt.Printf("%s: %.1f MB on disk, %.1f MB in sized symbols\n\n", bin, mb(st.Size()), mb(total))
	fmt.Println("| group | MB |\n|---|---:|")
	printSorted(byGroup, 0)
	fmt.Println("\n| module | MB |\n|---|---:|")
	printSorted(byModule, 25)
}

func mb(n int64) float64 { return float64(n) / 1e6 }

func printSorted(m map[string]int64, limit int) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	for i, k := range keys {
		if limit > 0 && i == limit {
			break
		}
		fmt.Printf("| %s | %.1f |\n", k, mb(m[k]))
	}
}

// modules maps the packages of ./cmd/icecdc to their modules ("" for the
// standard library).
func modules() (map[string]string, error) {
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Module", "./cmd/icecdc").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps ./cmd/icecdc: %w", err)
	}
	m := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Module     *struct{ Path string }
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		if p.Module != nil {
			m[p.ImportPath] = p.Module.Path
		}
	}
	return m, nil
}

// pkgOf returns the package path a symbol name starts with, past the
// linker's prefixes (type:.eq., go:itab.*, …).
func pkgOf(sym string) string {
	for _, p := range []string{"type:.eq.", "type:.hash.", "type:", "go:itab.", "go:string.", "go:", "*", "[]"} {
		sym = strings.TrimPrefix(sym, p)
	}
	sym = strings.TrimLeft(sym, "*[]")
	slash := strings.LastIndexByte(sym, '/')
	if slash < 0 {
		slash = 0
	}
	if dot := strings.IndexByte(sym[slash:], '.'); dot >= 0 {
		return sym[:slash+dot]
	}
	return sym
}

// moduleOf returns the module of package pkg, trying its parents for
// vendored or generated names.
func moduleOf(pkg string, mods map[string]string) string {
	for p := pkg; p != ""; {
		if m, ok := mods[p]; ok {
			return m
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	if strings.Contains(pkg, ".") && strings.Contains(pkg, "/") {
		return pkg // a module path go list did not name
	}
	return "std"
}

func groupOf(mod string) string {
	for _, g := range groups {
		if g.prefix != "" && strings.HasPrefix(mod, g.prefix) {
			return g.name
		}
	}
	if mod == "std" {
		return "Go standard library and runtime"
	}
	return "other modules"
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "binsize:", err)
	os.Exit(1)
}
