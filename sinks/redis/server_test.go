package redis

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/icecdc/icecdc/internal/sinkservers"
)

// serverURL is the redis-server TestMain started; skip says why there
// is none.
var serverURL, skip string

// TestMain runs one real redis-server for the package, on a free
// loopback port, its files in a temp dir.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	bin, missing := sinkservers.Find("redis-server")
	if missing != "" {
		if sinkservers.Required() {
			fmt.Fprintln(os.Stderr, "ICECDC_REQUIRE_SINK_SERVERS=1: "+missing)
			return 1
		}
		skip = missing
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "icecdc-redis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	port, err := sinkservers.FreePort()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", dir+"/redis.log")
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "start redis-server:", err)
		return 1
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	serverURL = fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	c := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer c.Close()
	for start := time.Now(); c.Ping(context.Background()).Err() != nil; time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > 20*time.Second {
			log, _ := os.ReadFile(dir + "/redis.log")
			fmt.Fprintf(os.Stderr, "redis-server on port %d did not answer:\n%s\n", port, log)
			return 1
		}
	}
	return m.Run()
}

// server returns a client of the empty server, or skips.
func server(t *testing.T) *goredis.Client {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
	opts, err := goredis.ParseURL(serverURL)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	return c
}
