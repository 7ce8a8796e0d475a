package badinput

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// outcome is how a case ended.
type outcome struct {
	c       tcase
	class   string
	detail  string
	peakRSS int64
	elapsed time.Duration
}

// The classes of outcome. Only the first two are acceptable.
const (
	classClear    = "clear error"
	classHarmless = "harmless (exit 0, exact)"
	classWrong    = "wrong/lost events (exit 0)"
	classWrongErr = "wrong events before an error"
	classUnclear  = "unclear error"
	classPanic    = "panic"
	classHang     = "hang"
	classMemory   = "over-memory"
	classLeak     = "leak of an outside file"
	classAccepted = "accepted corrupt state"
)

var classOrder = []string{classClear, classHarmless, classWrong, classWrongErr, classUnclear, classPanic, classHang, classMemory, classLeak, classAccepted}

func (o outcome) ok() bool { return o.class == classClear || o.class == classHarmless }

// runCase prepares c on the slot, runs it and classifies the result.
func (s *slot) runCase(c tcase, n int) (out outcome, setupErr error) {
	out.c = c
	dir := filepath.Join(s.root, "cases", strconv.Itoa(n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	w := &work{s: s, dir: dir, meta: s.base.Metadata, expect: s.truth, cols: s.cols}
	if c.kind == kindRun || c.kind == kindStatus {
		w.cfg, w.sink, _ = writeDaemonConfig(dir, "icecdc", s.base.Metadata)
		w.expect = s.daemonTruth
	}
	defer func() {
		if err := w.restore(); err != nil && setupErr == nil {
			setupErr = fmt.Errorf("restore: %w", err)
		}
	}()
	if err := c.prep(w); err != nil {
		return out, fmt.Errorf("prepare: %w", err)
	}
	lim := Limits{Timeout: caseTimeout, KillRSS: killRSS, MaxOutput: maxOutput, AddressSpace: addressSpace}
	if c.kind == kindDaemon {
		o, err := s.runDaemon(w, lim)
		o.c = c
		return o, err
	}
	var args []string
	switch c.kind {
	case kindChanges:
		args = []string{"changes", "--metadata", w.meta}
	case kindRun:
		args = []string{"run", "-c", w.cfg}
		lim.Stop, lim.WatchFile = daemonStop, w.sink
		want := len(w.expect)
		lim.StopWhen = func() bool { return want > 0 && countLines(w.sink) >= want }
	case kindStatus:
		args = []string{"status", "-c", w.cfg}
	}
	res, err := Run(s.bin, args, dir, lim)
	if err != nil {
		return out, err
	}
	out.peakRSS, out.elapsed = res.PeakRSS, res.Elapsed
	out.class, out.detail = classify(w, c, res)
	return out, nil
}

var panicRE = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ \[|SIGSEGV|unexpected fault address)`)

// processFault classifies how the process ended when that alone fails
// the case: out of memory, a hang, an output flood, a panic or a peak RSS
// over the budget; "" otherwise.
func processFault(res Result) (string, string) {
	stderr := string(res.Stderr)
	switch {
	case res.OverMemory:
		return classMemory, fmt.Sprintf("resident set passed %d MiB: killed", killRSS>>20)
	case res.Hang && res.PeakRSS >= memoryBudget:
		// A runaway that had not reached killRSS by the timeout (how far
		// it gets depends on the machine's load): over budget either way.
		return classMemory, fmt.Sprintf("still running after %s with %d MiB resident: killed", caseTimeout, res.PeakRSS>>20)
	case res.Hang:
		return classHang, fmt.Sprintf("still running after %s", caseTimeout)
	case strings.Contains(stderr, "runtime: out of memory") || strings.Contains(stderr, "fatal error: out of memory"):
		return classMemory, fmt.Sprintf("out of memory within the %d GiB address space: %s", addressSpace>>30, firstLineWith(stderr, "out of memory"))
	case res.Flood:
		return classWrong, fmt.Sprintf("more than %d MiB of output: killed", maxOutput>>20)
	case panicRE.MatchString(stderr) || res.Signal != "" && !res.Stopped:
		return classPanic, firstMatchLine(stderr, res.Signal)
	case res.PeakRSS >= memoryBudget:
		return classMemory, fmt.Sprintf("peak RSS %d MiB", res.PeakRSS>>20)
	}
	return "", ""
}

// leaked says whether what a case printed or wrote holds the content of a
// file outside the table.
func leaked(output []byte, stderr string) bool {
	return bytes.Contains(output, []byte(Secret)) || strings.Contains(stderr, Secret) || strings.Contains(stderr+string(output), "root:x:0:0")
}

func classify(w *work, c tcase, res Result) (string, string) {
	stderr := string(res.Stderr)
	last := lastLine(stderr)
	if class, detail := processFault(res); class != "" {
		return class, detail
	}
	output := res.Stdout
	if c.kind == kindRun {
		output, _ = os.ReadFile(w.sink)
	}
	if leaked(output, stderr) {
		return classLeak, "the output holds the content of a file outside the table"
	}
	if c.kind == kindStatus {
		if res.Exit == 0 {
			if w.corruptState {
				return classAccepted, "status printed checkpoints from it and exited 0"
			}
			return classHarmless, ""
		}
		return errorLine(w, last)
	}
	got, perr := ParseEvents(output, w.cols)
	if perr != nil {
		if res.Exit == 0 {
			return classWrong, "output is not events: " + perr.Error()
		}
		return classWrongErr, "output is not events: " + perr.Error()
	}
	if c.kind == kindRun && res.Stopped && res.Exit == 0 {
		d := Compare(got, w.expect, true)
		if w.corruptState && !(w.absorbed && d == "") {
			if d == "" {
				d = "it resumed as from an intact state"
			}
			return classAccepted, "kept running on it; " + d
		}
		if d != "" {
			return classWrong, d
		}
		return classHarmless, ""
	}
	if res.Exit == 0 {
		if c.kind == kindRun && w.corruptState {
			return classAccepted, "exited 0"
		}
		if d := Compare(got, w.expect, true); d != "" {
			return classWrong, d
		}
		return classHarmless, ""
	}
	if d := Compare(got, w.expect, false); d != "" {
		return classWrongErr, d + "; then: " + clip(last, 160)
	}
	return errorLine(w, last)
}

// errorLine checks the last line of stderr: icecdc's one-line error, and
// it names the corrupted object.
func errorLine(w *work, last string) (string, string) {
	if !strings.HasPrefix(last, "icecdc: ") {
		return classUnclear, "last stderr line is not icecdc's error: " + clip(last, 200)
	}
	for _, m := range w.must {
		if !strings.Contains(last, m) {
			return classUnclear, fmt.Sprintf("does not name %q: %s", m, clip(last, 240))
		}
	}
	return namesObject(w.names, last)
}

// namesObject checks that an error line names one of names (the corrupted
// object's file, field, snapshot or column): classClear if it does,
// classUnclear if not.
func namesObject(names []string, last string) (string, string) {
	if strings.Contains(last, "\n") {
		return classUnclear, "the error spans several lines: " + clip(last, 200)
	}
	low := strings.ToLower(last)
	for _, n := range names {
		if n != "" && strings.Contains(low, strings.ToLower(n)) {
			return classClear, clip(last, 200)
		}
	}
	return classUnclear, fmt.Sprintf("names none of %q: %s", clip(strings.Join(names, ", "), 160), clip(last, 240))
}

func firstLineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return clip(l, 160)
		}
	}
	return ""
}

func firstMatchLine(stderr, signal string) string {
	for _, l := range strings.Split(stderr, "\n") {
		if panicRE.MatchString(l) {
			return clip(l, 200)
		}
	}
	return "killed by " + signal
}

// report is the tally of a run.
type report struct {
	outcomes []outcome
}

func (r *report) tally() string {
	count := map[string]int{}
	var peak int64
	for _, o := range r.outcomes {
		count[o.class]++
		peak = max(peak, o.peakRSS)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cases %d, clear errors %d, harmless (exit 0, exact) %d, wrong/lost events %d, panics %d, hangs %d, over-memory %d, peak RSS max %d MiB",
		len(r.outcomes), count[classClear], count[classHarmless], count[classWrong]+count[classWrongErr],
		count[classPanic], count[classHang], count[classMemory], peak>>20)
	fmt.Fprintf(&b, "\n  also: unclear errors %d, leaks %d, accepted corrupt state %d (wrong/lost: %d with exit 0, %d before an error)",
		count[classUnclear], count[classLeak], count[classAccepted], count[classWrong], count[classWrongErr])
	groups := map[string][2]int{}
	var names []string
	for _, o := range r.outcomes {
		g := groups[o.c.group]
		if g == [2]int{} {
			names = append(names, o.c.group)
		}
		g[0]++
		if !o.ok() {
			g[1]++
		}
		groups[o.c.group] = g
	}
	fmt.Fprintf(&b, "\n  by group:")
	for _, n := range names {
		fmt.Fprintf(&b, " %s %d (%d failing);", n, groups[n][0], groups[n][1])
	}
	if groups["daemon"][0] > 0 {
		var exited, down, exact int
		for _, o := range r.outcomes {
			switch {
			case o.c.kind != kindDaemon:
			case o.class == classHarmless:
				exact++
			case o.class == classClear && strings.HasPrefix(o.detail, "exit "):
				exited++
			case o.class == classClear:
				down++
			}
		}
		fmt.Fprintf(&b, "\n  daemon (run --once, then status): %d exited non-zero with the error, %d logged the table failing or stopped (then SIGTERM), %d exact",
			exited, down, exact)
	}
	return b.String()
}

// failures lists the failing cases, by class.
func (r *report) failures() string {
	var b strings.Builder
	for _, cl := range classOrder {
		var lines []string
		for _, o := range r.outcomes {
			if o.class == cl && !o.ok() {
				lines = append(lines, fmt.Sprintf("    %s: %s", o.c.name, o.detail))
			}
		}
		if len(lines) > 0 {
			fmt.Fprintf(&b, "  %s (%d):\n%s\n", cl, len(lines), strings.Join(lines, "\n"))
		}
	}
	return b.String()
}

// runAll runs the cases on the slots, one worker per slot.
func runAll(t *testing.T, slots []*slot, cases []tcase) *report {
	t.Helper()
	outs := make([]outcome, len(cases))
	idx := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, s := range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				o, err := s.runCase(cases[i], i)
				if err != nil {
					mu.Lock()
					t.Errorf("case %s: the suite could not run it: %v", cases[i].name, err)
					mu.Unlock()
					o.class, o.detail = "setup error", err.Error()
				}
				outs[i] = o
			}
		}()
	}
	for i := range cases {
		idx <- i
	}
	close(idx)
	wg.Wait()
	r := &report{}
	for _, o := range outs {
		if o.class != "setup error" {
			r.outcomes = append(r.outcomes, o)
		}
	}
	return r
}

// casesMatching keeps the cases whose name matches ICECDC_BADINPUT_CASES.
func casesMatching(t *testing.T, cases []tcase) []tcase {
	pat := os.Getenv("ICECDC_BADINPUT_CASES")
	if pat == "" {
		return cases
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		t.Fatalf("ICECDC_BADINPUT_CASES: %v", err)
	}
	return slices.DeleteFunc(slices.Clone(cases), func(c tcase) bool { return !re.MatchString(c.name) })
}
