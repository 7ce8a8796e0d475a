package state

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/icecdc/icecdc/cdc"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// holdLockEnv makes the test binary a child that holds a state file's lock
// (see TestOpenLockedByOtherProcess).
const holdLockEnv = "ICECDC_STATE_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdLockEnv); path != "" {
		os.Exit(holdLock(path))
	}
	os.Exit(m.Run())
}

// holdLock opens the store, saves a checkpoint, says "locked" and keeps the
// lock until stdin closes or the process is killed.
func holdLock(path string) int {
	s, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := s.Save(context.Background(), "child", "shop.orders", childCheckpoint); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

var childCheckpoint = cdc.Checkpoint{TableUUID: "child-uuid", SnapshotID: 7, Seq: 3, Next: 2}

// statePath returns a fresh state file path whose database is checked for
// consistency when the test ends, after every store on it was closed.
func statePath(tb testing.TB) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "state.db")
	tb.Cleanup(func() { checkConsistency(tb, path) })
	return path
}

func checkConsistency(tb testing.TB, path string) {
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		tb.Errorf("consistency check: open %s: %v", path, err)
		return
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			tb.Errorf("consistency check %s: %v", path, err)
		}
		return nil
	})
	if err != nil {
		tb.Errorf("consistency check %s: %v", path, err)
	}
}

// mustOpen opens a store that is closed when the test ends.
func mustOpen(tb testing.TB, path string, opts Options) *Store {
	tb.Helper()
	s, err := Open(path, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// startLockHolder starts the test binary as a child that holds the state
// file at path, and returns once the child says it has the lock. The child
// is killed when the test ends.
func startLockHolder(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child did not take the lock: %q, %v; stderr: %s", line, err, stderr.String())
	}
	return cmd
}
