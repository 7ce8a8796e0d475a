package daemontest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/state"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error

	// cleanups run when the test binary ends: what tests and benchmarks
	// share lives as long as the binary.
	cleanups []func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	os.Exit(code)
}

// icecdcBinary builds cmd/icecdc once per test binary and returns its path.
func icecdcBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "icecdc-daemontest-")
		if buildErr != nil {
			return
		}
		cleanups = append(cleanups, func() { os.RemoveAll(buildDir) })
		buildBin = filepath.Join(buildDir, "icecdc")
		cmd := exec.Command("go", "build", "-o", buildBin, "github.com/icecdc/icecdc/cmd/icecdc")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build cmd/icecdc: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// busyTimeout makes SQLite wait for a lock instead of failing at once
// with SQLITE_BUSY: the writer and the daemon share the catalog file.
const busyTimeout = "?_pragma=busy_timeout(10000)"

// newEnv makes a warehouse and SQL catalog under dir (its handle waits for
// the SQLite lock, as every process on the file must).
func newEnv(t testing.TB, dir string) *scenario.Env {
	t.Helper()
	ctx := context.Background()
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// tableConf is one entry of tables: in the config.
type tableConf struct {
	Name, Start string
	Hold        bool // hold: true, a retention branch on the table
}

// daemonConf is what the tests vary in icecdc.yaml; it renders the file.
type daemonConf struct {
	Name      string
	Env       *scenario.Env
	Tables    []tableConf
	Poll      time.Duration
	Chunk     int
	StatePath string
	Listen    string
	Token     string // http.token: the bearer token of POST /snapshot
	// HoldInterval is hold_interval (0: the default).
	HoldInterval time.Duration
	// Sink is the sink: section, indented by two spaces per level.
	Sink string
	// Extra is more of the file, as written.
	Extra string
}

func fileSink(path string) string {
	return fmt.Sprintf("  type: file\n  file: {path: %q}\n", path)
}

func kafkaSink(brokers []string, delivery string) string {
	q := make([]string, len(brokers))
	for i, b := range brokers {
		q[i] = strconv.Quote(b)
	}
	// One partition keeps the whole stream in one total order, which the
	// tests compare against; the sink's own tests cover key ordering.
	return fmt.Sprintf("  type: kafka\n  kafka:\n    brokers: [%s]\n    delivery: %s\n    topic_partitions: 1\n", strings.Join(q, ", "), delivery)
}

func (c daemonConf) write(t testing.TB, path string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", c.Name)
	fmt.Fprintf(&b, "catalog:\n  name: %s\n  type: sql\n  uri: %q\n  warehouse: %q\n", scenario.CatalogName, c.Env.CatalogURI+busyTimeout, c.Env.Warehouse)
	b.WriteString("tables:\n")
	for _, tc := range c.Tables {
		fmt.Fprintf(&b, "  - name: %s\n    start: %s\n", tc.Name, tc.Start)
		if tc.Hold {
			b.WriteString("    hold: true\n")
		}
	}
	if c.HoldInterval > 0 {
		fmt.Fprintf(&b, "hold_interval: %s\n", c.HoldInterval)
	}
	fmt.Fprintf(&b, "poll: {interval: %s}\n", c.Poll)
	fmt.Fprintf(&b, "chunk: %d\n", c.Chunk)
	fmt.Fprintf(&b, "sink:\n%s", c.Sink)
	fmt.Fprintf(&b, "state: {path: %q}\n", c.StatePath)
	if c.Listen != "" {
		fmt.Fprintf(&b, "http: {listen: %q, token: %q}\n", c.Listen, c.Token)
	}
	b.WriteString(c.Extra)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// freeAddr returns a local address nothing listens on right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// daemon is one `icecdc run` process.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // from Wait, once done is closed
}

// startDaemon runs `icecdc run -c cfg`, appending its stdout and stderr
// to logPath, so that the log of every run of a test stays readable.
func startDaemon(t testing.TB, bin, cfg, logPath string) *daemon {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== start %s\n", time.Now().Format(time.StampMilli))
	cmd := exec.Command(bin, "run", "-c", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = cmd.Process.Kill()
			<-d.done
		}
	})
	return d
}

// kill ends the process with SIGKILL and waits for it to be gone, so that
// its state file lock is released.
func (d *daemon) kill(t testing.TB) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	<-d.done
}

// exited reports whether the process has ended.
func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// wait waits up to timeout for the process to end and returns its exit
// code; it fails the test on timeout.
func (d *daemon) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(timeout):
		t.Fatalf("icecdc run (pid %d) still running after %s", d.cmd.Process.Pid, timeout)
	}
	return d.cmd.ProcessState.ExitCode()
}

// interrupt sends SIGINT and returns the exit code.
func (d *daemon) interrupt(t testing.TB) int {
	t.Helper()
	if err := d.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatalf("SIGINT: %v", err)
	}
	return d.wait(t, 60*time.Second)
}

// waitReady waits until the daemon answers /readyz on listen: it has
// installed its signal handlers and loaded every table's position, and
// `icecdc status` asks it rather than reading the state file.
func waitReady(t testing.TB, listen string, d *daemon, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get("http://" + listen + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if d.exited() {
			t.Fatalf("icecdc run exited (%v) before it was ready", d.err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("icecdc run not ready on %s within %s: %v", listen, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// daemonCheckpoint asks a running daemon (GET /status) for a table's
// checkpoint; ok is false when it has none.
func daemonCheckpoint(listen, table string) (cp cdc.Checkpoint, ok bool, err error) {
	resp, err := http.Get("http://" + listen + "/status")
	if err != nil {
		return cp, false, err
	}
	defer resp.Body.Close()
	var states []struct {
		Table      string          `json:"table"`
		Checkpoint *cdc.Checkpoint `json:"checkpoint"` // none: followed, no checkpoint yet
	}
	if err := json.NewDecoder(resp.Body).Decode(&states); err != nil {
		return cp, false, fmt.Errorf("daemon /status: %w", err)
	}
	for _, s := range states {
		if s.Table == table && s.Checkpoint != nil {
			return *s.Checkpoint, true, nil
		}
	}
	return cp, false, nil
}

// statusRow is one table line of `icecdc status`.
type statusRow struct {
	Table    string
	CPSeq    int64
	Position string
	HeadSeq  int64
}

func (r statusRow) caughtUp() bool { return r.Position == "done" && r.CPSeq == r.HeadSeq }

// icecdcStatus runs `icecdc status -c cfg` and parses its table.
func icecdcStatus(ctx context.Context, bin, cfg string) (map[string]statusRow, error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "status", "-c", cfg)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// Exit 3 is a status printed with a table failing; its row says why.
	if err := cmd.Run(); err != nil && cmd.ProcessState.ExitCode() != 3 {
		return nil, fmt.Errorf("icecdc status: %v: %s", err, errOut.String())
	}
	rows := map[string]statusRow{}
	sc := bufio.NewScanner(&out)
	header := true
	for sc.Scan() {
		if header {
			header = false
			continue
		}
		if sc.Text() == "" {
			break // the tables' problems follow
		}
		// TABLE  CHECKPOINT SEQ  SNAPSHOT  POSITION  HEAD SEQ  BEHIND  SECONDS  SAVED;
		// POSITION may be "event N" (two words).
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			return nil, fmt.Errorf("icecdc status: cannot parse %q", sc.Text())
		}
		r := statusRow{Table: f[0]}
		var err1, err2 error
		r.CPSeq, err1 = strconv.ParseInt(f[1], 10, 64)
		pos := f[3 : len(f)-4]
		r.Position = strings.Join(pos, " ")
		r.HeadSeq, err2 = strconv.ParseInt(f[len(f)-4], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("icecdc status: cannot parse %q: %v", sc.Text(), err)
		}
		rows[r.Table] = r
	}
	return rows, nil
}

// waitCaughtUp polls `icecdc status` until table's checkpoint is the head,
// whole, and fails the test after timeout.
func waitCaughtUp(t testing.TB, bin, cfg, table string, d *daemon, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		rows, err := icecdcStatus(ctx, bin, cfg)
		if err == nil {
			if r, ok := rows[table]; ok && r.caughtUp() {
				return
			}
			last = fmt.Sprintf("%+v", rows[table])
		} else {
			last = err.Error()
		}
		if d != nil && d.exited() {
			t.Fatalf("icecdc run exited (%v) before %s caught up; last status %s", d.err, table, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not catch up within %s; last status %s", table, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// loadCheckpoint reads a table's checkpoint from a state file no daemon
// holds.
func loadCheckpoint(t testing.TB, path, pipeline, table string) (cdc.Checkpoint, bool) {
	t.Helper()
	// Read-only: a daemon killed before it created its state file must
	// find none at its next start, not one this check created (which it
	// would rightly refuse as holding no checkpoints of its pipeline).
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return cdc.Checkpoint{}, false
	}
	st, err := state.Open(path, state.Options{LockTimeout: 5 * time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cp, ok, err := st.Load(context.Background(), pipeline, table)
	if err != nil {
		t.Fatal(err)
	}
	return cp, ok
}

// tail returns the last n lines of a log file, for failure messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
