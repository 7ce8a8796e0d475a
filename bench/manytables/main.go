// Command manytables builds a SQLite catalog of many small v3 tables, one
// commit each, for measuring what a daemon following a whole namespace
// costs, and prints an icecdc.yaml that follows them all.
//
//	go run ./bench/manytables -dir DIR -tables 1000 > DIR/icecdc.yaml
//
// With -icecdc, it also runs that daemon (file sink, poll: 1s) and
// reports, from the one run: the time until every table's first commit
// was delivered (and the daemon's CPU time until then, which a loaded
// machine does not stretch as it does the wall time), its idle CPU, its
// peak RSS (and RSS at the end), its open file descriptors and metric
// series, the median and 90th percentile time from a writer's commit to
// its event in the sink file, and the writer's commits that failed
// with SQLITE_BUSY (a writer starved by the daemon's reads), and the
// machine's load average at the end.
//
//	go build -o /tmp/icecdc ./cmd/icecdc
//	go run ./bench/manytables -dir /tmp/many -tables 1000 -icecdc /tmp/icecdc
//
// The daemon inherits the environment: ICECDC_CPUPROFILE=FILE and
// ICECDC_HEAPPROFILE=FILE profile it (heap profiles are written to FILE.1
// when half the tables were delivered, FILE.2 when the daemon is idle,
// and FILE when the run ends). -reuse runs again on the tables of an earlier run.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icecdc/icecdc/internal/scenario"
)

func main() {
	var o options
	flag.StringVar(&o.dir, "dir", "", "directory to build the catalog in")
	flag.IntVar(&o.tables, "tables", 1000, "tables to create in namespace many")
	flag.StringVar(&o.bin, "icecdc", "", "an icecdc binary: run it on the catalog and report what it costs")
	flag.IntVar(&o.commits, "commits", 30, "with -icecdc: commits a writer makes, one every 1-2 s, once every table was delivered")
	flag.DurationVar(&o.idle, "idle", 20*time.Second, "with -icecdc: how long the daemon's idle CPU is measured")
	flag.DurationVar(&o.poll, "poll", time.Second, "with -icecdc: the daemon's poll.interval")
	flag.DurationVar(&o.maxPoll, "max-interval", 0, "with -icecdc: the daemon's poll.max_interval (0: its default)")
	flag.BoolVar(&o.reuse, "reuse", false, "use the tables an earlier run built in -dir (its state and events are removed)")
	flag.Parse()
	if err := run(context.Background(), &o); err != nil {
		fmt.Fprintln(os.Stderr, "manytables:", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	dir           string
	tables        int
	bin           string // -icecdc
	commits       int
	idle          time.Duration
	poll, maxPoll time.Duration
	reuse         bool
}

// daemonFiles are the daemon's config, the sink's file and the address
// it serves /metrics on.
type daemonFiles struct {
	config, events, listen string
}

func run(ctx context.Context, o *options) error {
	if o.dir == "" {
		return fmt.Errorf("-dir is required")
	}
	env, err := scenario.NewEnv(ctx, o.dir)
	if err != nil {
		return err
	}
	defer env.Close()
	t0 := time.Now()
	d := daemonFiles{events: filepath.Join(env.Dir, "events.jsonl")}
	var names []string
	if o.reuse {
		for i := range o.tables {
			names = append(names, fmt.Sprintf("many.t%04d", i))
		}
		for _, f := range []string{d.events, filepath.Join(env.Dir, "state.db")} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	} else if names, err = env.ManyTables(ctx, "many", o.tables); err != nil {
		return err
	}
	if o.bin != "" {
		if d.listen, err = freeAddr(); err != nil {
			return err
		}
	}
	cfg := config(env, o, d)
	if o.bin == "" {
		fmt.Print(cfg)
		return nil
	}
	fmt.Fprintf(os.Stderr, "manytables: built %d tables in %s\n", o.tables, time.Since(t0).Round(time.Second))
	d.config = filepath.Join(env.Dir, "icecdc.yaml")
	if err := os.WriteFile(d.config, []byte(cfg), 0o644); err != nil {
		return err
	}
	return measure(ctx, env, names, o, d)
}

// config is the icecdc.yaml that follows every table of namespace many.
func config(env *scenario.Env, o *options, d daemonFiles) string {
	cfg := fmt.Sprintf(`name: many
catalog: {name: %s, type: sql, uri: '%s', warehouse: '%s'}
tables: [{name: 'many.*', start: earliest}]
sink: {type: file, file: {path: %s}}
state: {path: %s}
poll: {interval: %s}
`, scenario.CatalogName, env.CatalogURI, env.Warehouse, d.events, filepath.Join(env.Dir, "state.db"), o.poll)
	if o.maxPoll > 0 {
		cfg = strings.Replace(cfg, "poll: {interval: "+o.poll.String()+"}", fmt.Sprintf("poll: {interval: %s, max_interval: %s}", o.poll, o.maxPoll), 1)
	}
	if d.listen != "" {
		cfg += fmt.Sprintf("http: {listen: '%s'}\n", d.listen)
	}
	return cfg
}

// measure runs the daemon and prints one line of what it cost.
func measure(ctx context.Context, env *scenario.Env, names []string, o *options, d daemonFiles) error {
	logf, err := os.Create(filepath.Join(env.Dir, "icecdc.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(o.bin, "run", "-c", d.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	r := &daemonRun{cmd: cmd, exited: make(chan struct{}), log: logf.Name(), tail: &tailer{path: d.events},
		// With ICECDC_HEAPPROFILE, the daemon writes a heap profile at each
		// SIGUSR1: one when half the tables were delivered, one when idle.
		profile: os.Getenv("ICECDC_HEAPPROFILE") != ""}
	r.start = time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	go func() { cmd.Process.Wait(); close(r.exited) }()

	first, firstCPU, err := r.firstDelivery(len(names))
	if err != nil {
		return err
	}

	// Idle CPU, after the polls settled to their idle schedule.
	time.Sleep(5 * time.Second)
	c0, w0 := cpuTicks(pid), time.Now()
	time.Sleep(o.idle)
	c1, w1 := cpuTicks(pid), time.Now()
	idleCPU := float64(c1-c0) / clockTicks / w1.Sub(w0).Seconds() * 100
	fds := openFDs(pid)
	if r.profile {
		cmd.Process.Signal(syscall.SIGUSR1)
	}
	series, err := metricSeries(d.listen)
	if err != nil {
		return err
	}

	w := writeCommits(ctx, env, names, r.tail, o.commits)
	rss, rssNow := peakRSS(pid), statusKiB(pid, "VmRSS:")
	median, p90 := "n/a", "n/a"
	if lat := w.lat; len(lat) > 0 {
		slices.Sort(lat)
		median = lat[len(lat)/2].Round(time.Millisecond).String()
		p90 = lat[len(lat)*9/10].Round(time.Millisecond).String()
	}
	fmt.Printf("tables=%d first_delivery_all=%s (%.1fs of CPU) idle_cpu=%.1f%% rss_peak=%dMiB rss_end=%dMiB open_fds=%d metric_series=%d (%.1f per table) commit_to_delivery_median=%s p90=%s (%d of %d commits seen) writer_stalls=%d (of %d failed commits) load_average=%s\n",
		len(names), first.Round(100*time.Millisecond), float64(firstCPU)/clockTicks, idleCPU, rss>>10, rssNow>>10, fds, series, float64(series)/float64(len(names)), median, p90, len(w.lat), o.commits, w.stalls, w.failed, loadAverage())
	return nil
}

// daemonRun is the daemon being measured.
type daemonRun struct {
	cmd     *exec.Cmd
	start   time.Time
	exited  chan struct{}
	log     string  // its log file
	tail    *tailer // the sink's file
	profile bool    // ICECDC_HEAPPROFILE is set
}

// firstDelivery waits for one event per table and returns the time it
// took and the daemon's CPU time until then, in clock ticks.
func (r *daemonRun) firstDelivery(tables int) (time.Duration, int64, error) {
	halfway := false
	for deadline := time.Now().Add(30 * time.Minute); ; {
		if r.tail.lines() >= tables {
			return time.Since(r.start), cpuTicks(r.cmd.Process.Pid), nil
		}
		if r.profile && !halfway && r.tail.lines() >= tables/2 {
			halfway = true
			r.cmd.Process.Signal(syscall.SIGUSR1)
		}
		select {
		case <-r.exited:
			return 0, 0, fmt.Errorf("icecdc exited before delivering every table (see %s)", r.log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("not every table delivered within 30 minutes: %d events of %d", r.tail.lines(), tables)
		}
	}
}

// writerResult is what writeCommits saw: the time from each commit to
// its event, and the commits that failed (stalls: on a locked catalog).
type writerResult struct {
	lat            []time.Duration
	stalls, failed int
}

// writeCommits makes commits of a writer that shares the catalog, each
// to a random table, and measures the time until its event is in the
// sink's file.
func writeCommits(ctx context.Context, env *scenario.Env, names []string, tail *tailer, commits int) writerResult {
	var w writerResult
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for k := range commits {
		time.Sleep(time.Second + rand.N(time.Second))
		name := names[rand.IntN(len(names))]
		id := int64(900_000_000 + k)
		tbl, err := env.LoadTable(wctx, catalog.ToIdentifier(name))
		if err == nil {
			_, err = scenario.Append(wctx, tbl, []map[string]any{scenario.Order(id, "bench", "new", 1)})
		}
		if err != nil {
			w.failed++
			if s := err.Error(); strings.Contains(s, "SQLITE_BUSY") || strings.Contains(s, "database is locked") {
				w.stalls++
			}
			fmt.Fprintf(os.Stderr, "manytables: commit %d to %s: %v\n", k, name, err)
			continue
		}
		committed := time.Now()
		needle := []byte(`"order_id":` + strconv.FormatInt(id, 10) + `,`)
		for time.Since(committed) < time.Minute {
			if tail.find(needle) {
				w.lat = append(w.lat, time.Since(committed))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return w
}

// tailer reads a growing JSON-lines file.
type tailer struct {
	path string
	off  int64
	n    int
	buf  []byte // the lines read since the last find
}

func (t *tailer) read() {
	f, err := os.Open(t.path)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return
	}
	data, _ := io.ReadAll(bufio.NewReader(f))
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
		t.off += int64(len(data))
		t.n += bytes.Count(data, []byte{'\n'})
		t.buf = append(t.buf, data...)
	}
}

func (t *tailer) lines() int {
	t.read()
	t.buf = t.buf[:0]
	return t.n
}

func (t *tailer) find(needle []byte) bool {
	t.read()
	if bytes.Contains(t.buf, needle) {
		t.buf = t.buf[:0]
		return true
	}
	return false
}

// loadAverage is the machine's 1, 5 and 15 minute load averages, for the
// figures' context: the daemon's CPU time is its own, its latencies are
// not.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(raw))
	return strings.Join(f[:min(3, len(f))], "/")
}

// clockTicks is Linux's USER_HZ.
const clockTicks = 100

// cpuTicks is the user and system time of pid, in clock ticks.
func cpuTicks(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// peakRSS is VmHWM of pid, in KiB.
func peakRSS(pid int) int64 { return statusKiB(pid, "VmHWM:") }

// statusKiB is the field of /proc/PID/status named by key, in KiB.
func statusKiB(pid int, key string) int64 {
	raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

func openFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// metricSeries counts the series /metrics serves.
func metricSeries(listen string) (int, error) {
	resp, err := http.Get("http://" + listen + "/metrics")
	if err != nil {
		return 0, fmt.Errorf("scrape /metrics: %w", err)
	}
	defer resp.Body.Close()
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	return n, sc.Err()
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
