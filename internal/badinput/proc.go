package badinput

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits guard the machine while a case runs.
type Limits struct {
	// Timeout kills the process (SIGKILL): the case hung.
	Timeout time.Duration
	// Stop, if set, sends SIGTERM after this long: a daemon that should
	// have exited on its own is stopped the way an operator would.
	Stop time.Duration
	// StopWhen, if set, is polled with the RSS: true sends SIGTERM too.
	StopWhen func() bool
	// StopOnStderr, if set, is polled with what the process wrote to
	// stderr so far: true sends SIGTERM too (a daemon that logged what it
	// was waiting for).
	StopOnStderr func(stderr []byte) bool
	// KillRSS kills the process once its resident set passes this many
	// bytes (polled from /proc every PollEvery).
	KillRSS   int64
	PollEvery time.Duration
	// AddressSpace, if set, caps the process's virtual memory
	// (RLIMIT_AS, through the shell's ulimit): an allocation of gigabytes
	// then fails at once, deterministically, even when its pages are never
	// touched and so never show in the resident set.
	AddressSpace int64
	// MaxOutput kills the process once stdout, or the file WatchFile,
	// holds more than this many bytes: an event flood.
	MaxOutput int64
	WatchFile string
}

// Result is how a process ended.
type Result struct {
	Exit           int    // exit code; -1 when ended by a signal
	Signal         string // the signal that ended it, if any
	Stdout, Stderr []byte
	// PeakRSS is the process's peak resident set in bytes: its rusage
	// (ru_maxrss) when that is its own, else the most its VmHWM was seen
	// at (see Run).
	PeakRSS    int64
	Hang       bool // killed at Timeout
	OverMemory bool // killed at KillRSS
	Flood      bool // killed at MaxOutput
	Stopped    bool // sent SIGTERM at Stop
	Elapsed    time.Duration
}

// Run runs bin with args in dir under the limits and reports how it ended.
func Run(bin string, args []string, dir string, lim Limits) (Result, error) {
	if lim.PollEvery <= 0 {
		lim.PollEvery = 20 * time.Millisecond
	}
	cmd := exec.Command(bin, args...)
	if lim.AddressSpace > 0 {
		// exec keeps the pid, so the polling and rusage see the binary.
		cmd = exec.Command("/bin/sh", append([]string{"-c",
			fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, lim.AddressSpace>>10), bin}, args...)...)
	}
	cmd.Dir = dir
	stdout := &capWriter{max: lim.MaxOutput}
	stderr := &capWriter{max: 1 << 20}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, err
	}
	done := make(chan struct{})
	var res Result
	var mu sync.Mutex
	var hwm int64 // the most the process's VmHWM was seen at
	go func() {
		tick := time.NewTicker(lim.PollEvery)
		defer tick.Stop()
		stopped := false
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			el := time.Since(start)
			if h := procBytes(cmd.Process.Pid, "VmHWM:"); h > 0 {
				mu.Lock()
				hwm = max(hwm, h)
				mu.Unlock()
			}
			kill := func(set *bool) {
				mu.Lock()
				*set = true
				mu.Unlock()
				cmd.Process.Kill()
			}
			switch {
			case el > lim.Timeout:
				kill(&res.Hang)
			case lim.KillRSS > 0 && vmRSS(cmd.Process.Pid) > lim.KillRSS:
				kill(&res.OverMemory)
			case lim.MaxOutput > 0 && (stdout.over() || fileSize(lim.WatchFile) > lim.MaxOutput):
				kill(&res.Flood)
			case !stopped && ((lim.Stop > 0 && el > lim.Stop) || (lim.StopWhen != nil && lim.StopWhen()) ||
				(lim.StopOnStderr != nil && lim.StopOnStderr(stderr.bytes()))):
				stopped = true
				mu.Lock()
				res.Stopped = true
				mu.Unlock()
				cmd.Process.Signal(syscall.SIGTERM)
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	mu.Lock()
	defer mu.Unlock()
	res.Elapsed = time.Since(start)
	res.Stdout, res.Stderr = stdout.bytes(), stderr.bytes()
	st := cmd.ProcessState
	if st == nil {
		return res, err
	}
	// ru_maxrss is not the process's own peak alone: Go starts a process
	// with vfork, and the kernel keeps, across the exec, the high-water
	// mark of the memory the child shared until then, this test process's.
	// So it is max(this process's peak at the start, the child's peak):
	// the child's when above this process's peak now; otherwise the child
	// stayed below that, and its own VmHWM, polled while it ran, is the
	// measure (growth in its last poll interval may be missed).
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		res.PeakRSS = ru.Maxrss * 1024 // KiB on Linux
		if self := procBytes(os.Getpid(), "VmHWM:"); res.PeakRSS <= self {
			res.PeakRSS = hwm
		}
	}
	res.Exit = st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		res.Signal = ws.Signal().String()
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return res, err
	}
	return res, nil
}

// vmRSS is the current resident set of pid in bytes, 0 if unknown.
func vmRSS(pid int) int64 { return procBytes(pid, "VmRSS:") }

// procBytes reads a size (kB) of /proc/PID/status in bytes, 0 if unknown.
func procBytes(pid int, key string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func fileSize(p string) int64 {
	if p == "" {
		return 0
	}
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

// capWriter keeps the first max bytes written (all when max is 0) and
// notes that more came.
type capWriter struct {
	mu   sync.Mutex
	max  int64
	buf  bytes.Buffer
	more bool
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if w.max > 0 && int64(w.buf.Len()+len(p)) > w.max {
		w.more = true
		p = p[:max(0, int(w.max)-w.buf.Len())]
	}
	w.buf.Write(p)
	return n, nil
}

func (w *capWriter) over() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.more
}

func (w *capWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}
