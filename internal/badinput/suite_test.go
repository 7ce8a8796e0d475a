package badinput

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// allCases is the whole suite, generated from the structure of one slot's
// table (every slot's table has the same structure).
func allCases(s *slot) []tcase {
	var cases []tcase
	cases = append(cases, metadataByteCases()...)
	cases = append(cases, metadataFieldCases(s)...)
	cases = append(cases, graphCases(s)...)
	cases = append(cases, manifestListCases(s)...)
	cases = append(cases, manifestEntryCases(s)...)
	cases = append(cases, avroByteCases()...)
	cases = append(cases, puffinCases()...)
	cases = append(cases, parquetCases()...)
	cases = append(cases, daemonCases(cases)...)
	cases = append(cases, v3Cases()...)
	cases = append(cases, stateCases()...)
	return cases
}

// TestBadInput corrupts the base table (and the daemon's state file) case
// by case and runs the real binary on each as a subprocess. A case passes
// when the process either
//
//   - exits non-zero with icecdc's one-line error last on stderr, naming
//     the corrupted object (its file, or the field, snapshot or column),
//     and every event it printed before is a prefix of the right answer; or
//   - exits 0 having printed exactly the right answer: the events of the
//     untouched table (or, where a case says so, of the snapshots that are
//     still there), compared in order, all fields but those in Cosmetic;
//
// and in both cases without a panic, within caseTimeout, with a peak RSS
// under memoryBudget, printing nothing of a file outside the table. For
// the daemon, a corrupt state file must stop it; one it keeps running on
// counts as accepted. A sample of the table corruptions also runs under
// the daemon (daemonCases): `run --once` into a file sink, then `status`.
//
// ICECDC_BADINPUT_CASES=regexp runs only the matching cases,
// ICECDC_BADINPUT_PARALLEL sets the number of concurrent cases (default 2),
// ICECDC_BADINPUT_REPORT=file writes the tally and the failures there.
func TestBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("the bad-input suite runs the icecdc binary hundreds of times")
	}
	start := time.Now()
	par := 2
	if v := os.Getenv("ICECDC_BADINPUT_PARALLEL"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ICECDC_BADINPUT_PARALLEL=%q", v)
		}
		par = n
	}
	slots := setupSlots(t, par)
	cases := casesMatching(t, allCases(slots[0]))
	checkNames(t, cases)
	setup := time.Since(start)
	r := runAll(t, slots, cases)
	summary := fmt.Sprintf("%s\n  setup %s, cases %s with %d at a time", r.tally(), setup.Round(time.Millisecond),
		(time.Since(start) - setup).Round(time.Millisecond), par)
	t.Log(summary)
	fails := r.failures()
	if p := os.Getenv("ICECDC_BADINPUT_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(summary+"\n"+fails+r.all()), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, o := range r.outcomes {
		if o.c.control && !o.ok() {
			t.Errorf("control case %s failed (%s: %s): the suite itself is broken", o.c.name, o.class, o.detail)
		}
	}
	if fails != "" {
		t.Errorf("failing cases:\n%s", fails)
	}
}

// checkNames makes sure every case name is unique, so that a failure says
// exactly what was corrupted.
func checkNames(t *testing.T, cases []tcase) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases named %q", c.name)
		}
		seen[c.name] = true
	}
}

// all lists every case with its outcome, for the report file.
func (r *report) all() string {
	var b strings.Builder
	b.WriteString("\nall cases:\n")
	for _, o := range r.outcomes {
		fmt.Fprintf(&b, "  %-28s %5d MiB %6s  %s: %s\n", o.class, o.peakRSS>>20, o.elapsed.Round(time.Millisecond), o.c.name, o.detail)
	}
	return b.String()
}
