package badinput

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// daemonEvery is the stride of the daemon sample: besides the first case
// of every group of table corruptions and the controls, every
// daemonEvery-th table case runs under the daemon too (about fifty cases,
// each a `run --once` and a `status`).
const daemonEvery = 16

// daemonCases run a sample of the table corruptions (metadata.json, the
// snapshot graph, manifest lists, manifests, Puffin, Parquet) through the
// daemon: `icecdc run --once` into a file sink on the corrupted table,
// then `icecdc status` on what it left. The invariants are those of
// `changes`, for a table the daemon follows:
//
//   - run exits non-zero with icecdc's one-line error naming the object;
//     or it logs the table as failing (retried, as README says of a table
//     that cannot be loaded) or stopped, with the error in one log line
//     naming the object, and is then stopped with SIGTERM; or it exits 0
//     having written exactly the right events;
//   - what it wrote to the sink before an error is a prefix of the right
//     events: never a wrong or invented event, never one skipped;
//   - status exits, without a panic, showing the table's checkpoint or its
//     problem (naming the object), or fails with a one-line error naming it;
//   - neither panics, hangs or reaches a peak RSS of memoryBudget.
func daemonCases(table []tcase) []tcase {
	var out []tcase
	seen := map[string]bool{}
	for i, c := range table {
		first := !seen[c.group]
		seen[c.group] = true
		if !first && !c.control && i%daemonEvery != 0 {
			continue
		}
		d := c
		d.name, d.group, d.kind = "daemon/"+c.name, "daemon", kindDaemon
		out = append(out, d)
	}
	return out
}

// logLine is one line of the daemon's JSON log.
type logLine struct {
	Level, Msg, Err, Table string
}

// daemonLog parses the JSON lines of the daemon's log (the last line,
// icecdc's error on exit, is not JSON and is skipped).
func daemonLog(stderr []byte) []logLine {
	var out []logLine
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg != "" {
			out = append(out, l)
		}
	}
	return out
}

// tableDown is the first log line saying the table cannot go on: failing
// and retried, or stopped.
func tableDown(log []logLine) (logLine, bool) {
	for _, l := range log {
		if l.Table != "" && (strings.HasSuffix(l.Msg, " failing; retrying") || l.Msg == "table stopped") {
			return l, true
		}
	}
	return logLine{}, false
}

// runDaemon runs a daemon case prepared in w: run --once, then status.
func (s *slot) runDaemon(w *work, lim Limits) (out outcome, err error) {
	w.cfg, w.sink, _ = writeDaemonConfig(w.dir, "icecdc", w.meta)
	run := lim
	run.WatchFile = w.sink
	run.StopOnStderr = func(b []byte) bool { _, down := tableDown(daemonLog(b)); return down }
	res, err := Run(s.bin, []string{"run", "--once", "-c", w.cfg}, w.dir, run)
	if err != nil {
		return out, err
	}
	out.peakRSS, out.elapsed = res.PeakRSS, res.Elapsed
	out.class, out.detail = classifyDaemon(w, res)
	st, err := Run(s.bin, []string{"status", "-c", w.cfg}, w.dir, lim)
	if err != nil {
		return out, err
	}
	out.peakRSS, out.elapsed = max(out.peakRSS, st.PeakRSS), out.elapsed+st.Elapsed
	if class, detail := classifyStatus(w, st); class != classClear && class != classHarmless {
		out.class, out.detail = class, "status: "+detail
	} else {
		out.detail += "; status: " + detail
	}
	return out, nil
}

// classifyDaemon classifies a `run --once` of a daemon case.
func classifyDaemon(w *work, res Result) (string, string) {
	if class, detail := processFault(res); class != "" {
		return class, detail
	}
	stderr := string(res.Stderr)
	output, _ := os.ReadFile(w.sink)
	if leaked(output, stderr) {
		return classLeak, "the sink or the log holds the content of a file outside the table"
	}
	got, perr := ParseEvents(output, w.cols)
	if perr != nil {
		if res.Exit == 0 && !res.Stopped {
			return classWrong, "the sink holds no events: " + perr.Error()
		}
		return classWrongErr, "the sink holds no events: " + perr.Error()
	}
	down, isDown := tableDown(daemonLog(res.Stderr))
	switch {
	case res.Stopped:
		// Stopped by us once the log said the table was down: a stopped
		// run --once exits 1 (interrupted), so this comes before the exit.
		if d := Compare(got, w.expect, false); d != "" {
			return classWrongErr, d + "; then: " + clip(down.Err, 160)
		}
		if !isDown || down.Err == "" {
			return classUnclear, "stopped with no log line saying why the table is down"
		}
		class, detail := namesObject(w.names, down.Err)
		return class, down.Msg + ": " + detail
	case res.Exit != 0:
		last := lastLine(stderr)
		if d := Compare(got, w.expect, false); d != "" {
			return classWrongErr, d + "; then: " + clip(last, 160)
		}
		class, detail := errorLine(w, last)
		return class, "exit " + fmt.Sprint(res.Exit) + ": " + detail
	}
	if d := Compare(got, w.expect, true); d != "" {
		return classWrong, d
	}
	return classHarmless, ""
}

// classifyStatus classifies `icecdc status` after a daemon case's run.
func classifyStatus(w *work, res Result) (string, string) {
	if class, detail := processFault(res); class != "" {
		return class, detail
	}
	stdout, stderr := string(res.Stdout), string(res.Stderr)
	if leaked(res.Stdout, stderr) {
		return classLeak, "status printed the content of a file outside the table"
	}
	// Exit 3: the status was printed and a table is failing or
	// unreadable; its row says why.
	if res.Exit != 0 && res.Exit != 3 {
		return errorLine(w, lastLine(stderr))
	}
	for _, l := range strings.Split(stdout, "\n") {
		if !strings.HasPrefix(l, "bookshop.orders ") {
			continue
		}
		for _, mark := range []string{"unavailable: ", "broken: "} {
			if _, problem, ok := strings.Cut(l, mark); ok {
				return namesObject(w.names, problem)
			}
		}
		return classHarmless, "checkpoint " + clip(strings.Join(strings.Fields(l)[1:], " "), 120)
	}
	return classUnclear, "no row for the table: " + clip(stdout, 200)
}
