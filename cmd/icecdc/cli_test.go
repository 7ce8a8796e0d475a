package main

import (
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// TestMainVersionAndHelp: --version as well as version; the help lists
// every command with its description, and each command's help has a
// synopsis, examples and its flags in groups, as --long flags.
func TestMainVersionAndHelp(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		out, errOut, code := runCmd(args...)
		if want := buildVersionLine() + "\n"; code != 0 || out != want || errOut != "" || !strings.HasPrefix(out, "icecdc "+version+" (") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("icecdc %s: exit %d, stdout %q, stderr %q; want %q", strings.Join(args, " "), code, out, errOut, want)
		}
	}
	out, _, code := runCmd("--help")
	if code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	commands := map[string]string{
		"changes":  "print a table's change events",
		"demo":     "write a small v3 table",
		"run":      "run the daemon",
		"status":   "print each table's checkpoint",
		"reset":    "forget a table's checkpoint",
		"snapshot": "ask the running daemon",
		"version":  "print the version of icecdc, its commit and Go version",
	}
	for name, short := range commands {
		if !strings.Contains(out, "\n  "+name) || !strings.Contains(out, short) {
			t.Errorf("--help does not list %s with %q:\n%s", name, short, out)
		}
	}
	for name, groups := range map[string][]string{
		"changes":  {"Table:", "Range:", "Output:", "Resources:"},
		"run":      {"Configuration:", "Run:"},
		"status":   {"Configuration:"},
		"reset":    {"Configuration:", "Reset:"},
		"snapshot": {"Configuration:", "Snapshot:"},
		"demo":     {"Demo:"},
	} {
		help, errOut, code := runCmd(name, "--help")
		if code != 0 || errOut != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, errOut)
		}
		for _, want := range append([]string{"Usage:\n  icecdc " + name, "Examples:\n  icecdc " + name, "-h, --help"}, groups...) {
			if !strings.Contains(help, want) {
				t.Errorf("%s --help lacks %q:\n%s", name, want, help)
			}
		}
	}
}

// TestMainOffersFlagsWhereTheyMeanSomething: status, reset and snapshot
// take only the overrides they use; the others are unknown flags there.
func TestMainOffersFlagsWhereTheyMeanSomething(t *testing.T) {
	for cmd, flags := range map[string]struct{ has, not []string }{
		"run":      {has: []string{"--config", "--listen", "--state", "--sink", "--once", "--adopt-state", "--schema-registry-url"}},
		"status":   {has: []string{"--config", "--listen", "--state"}, not: []string{"--sink", "--once", "--schema-registry-url"}},
		"reset":    {has: []string{"--config", "--state", "--table", "--all", "--timeout"}, not: []string{"--sink", "--listen", "--schema-registry-url"}},
		"snapshot": {has: []string{"--config", "--listen", "--table", "--timeout"}, not: []string{"--sink", "--state", "--schema-registry-url"}},
	} {
		help, _, _ := runCmd(cmd, "--help")
		for _, f := range flags.has {
			if !strings.Contains(help, f+" ") {
				t.Errorf("%s --help lacks %s", cmd, f)
			}
		}
		for _, f := range flags.not {
			if strings.Contains(help, f+" ") {
				t.Errorf("%s --help offers %s", cmd, f)
			}
			wantUsageError(t, []string{cmd, "-c", "icecdc.yaml", f, "x"}, "unknown flag: "+f, "'icecdc "+cmd+" --help'")
			wantUsageError(t, []string{cmd, "-c", "icecdc.yaml", f[1:], "x"}, "unknown flag: "+f, "'icecdc "+cmd+" --help'")
		}
	}
}

// TestMainUsageErrors: a command line that does not parse is answered
// with one line pointing at --help, exit 2.
func TestMainUsageErrors(t *testing.T) {
	wantUsageError(t, []string{"stauts"}, `unknown command "stauts" (did you mean status?)`, "'icecdc --help'")
	wantUsageError(t, []string{"bogus"}, `unknown command "bogus"`, "'icecdc --help'")
	wantUsageError(t, []string{"--bogus"}, "unknown flag: --bogus", "'icecdc --help'")
	wantUsageError(t, []string{"run", "--bogus"}, "run: unknown flag: --bogus", "'icecdc run --help'")
	wantUsageError(t, []string{"changes", "--from-seq", "x"}, `changes: invalid argument "x" for "--from-seq"`, "'icecdc changes --help'")
	wantUsageError(t, []string{"status", "-c", "icecdc.yaml", "extra"}, `status: unexpected argument "extra"`, "'icecdc status --help'")
	wantUsageError(t, []string{"demo", "--commit"}, "demo: flag needs an argument: --commit", "'icecdc demo --help'")
	wantUsageError(t, []string{"help", "nonexistent"}, `unknown command "nonexistent"`, "'icecdc --help'")
	wantUsageError(t, []string{"help", "stauts"}, `unknown command "stauts" (did you mean status?)`, "'icecdc --help'")
	wantUsageError(t, []string{"help", "changes", "extra"}, `unknown command "changes extra"`, "'icecdc --help'")
}

// TestHelp: icecdc alone and icecdc help print the root help on stdout
// and succeed, as kubectl and gh do; icecdc help COMMAND prints that
// command's help, the same as COMMAND --help.
func TestHelp(t *testing.T) {
	root, errOut, code := runCmd("--help")
	if code != 0 || errOut != "" || !strings.Contains(root, "Usage:\n  icecdc") {
		t.Fatalf("--help: exit %d, stderr %q:\n%s", code, errOut, root)
	}
	for _, args := range [][]string{{}, {"help"}} {
		out, errOut, code := runCmd(args...)
		if code != 0 || errOut != "" || out != root {
			t.Errorf("icecdc %s: exit %d, stderr %q, stdout\n%s\nwant the help of --help", strings.Join(args, " "), code, errOut, out)
		}
	}
	want, _, _ := runCmd("changes", "--help")
	if out, errOut, code := runCmd("help", "changes"); code != 0 || errOut != "" || out != want || !strings.Contains(out, "icecdc changes") {
		t.Errorf("icecdc help changes: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
}

func wantUsageError(t *testing.T, args []string, parts ...string) {
	t.Helper()
	out, errOut, code := runCmd(args...)
	if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "icecdc: ") {
		t.Fatalf("icecdc %s: exit %d, stdout %q, stderr %q; want exit 2 and one line", strings.Join(args, " "), code, out, errOut)
	}
	for _, p := range parts {
		if !strings.Contains(errOut, p) {
			t.Fatalf("icecdc %s: stderr %q does not say %q", strings.Join(args, " "), errOut, p)
		}
	}
}

// TestMainSingleDashLongFlags: the flags were Go flag package flags, which
// take -name as well as --name, and --c as well as -c; scripts written
// then keep working. Values are never rewritten.
func TestMainSingleDashLongFlags(t *testing.T) {
	root := newRootCommand(&cli{})
	for _, tc := range []struct{ in, want []string }{
		{[]string{"run", "-c", "x.yaml", "-listen", ":9464", "-state=s.db", "-once"},
			[]string{"run", "-c", "x.yaml", "--listen", ":9464", "--state=s.db", "--once"}},
		{[]string{"run", "--c", "x.yaml", "--sink", "-stdout"}, []string{"run", "-c", "x.yaml", "--sink", "-stdout"}},
		{[]string{"changes", "-metadata", "-m.json", "-from-seq", "2", "-net", "--", "-to-seq"},
			[]string{"changes", "--metadata", "-m.json", "--from-seq", "2", "--net", "--", "-to-seq"}},
		{[]string{"status", "-listen", "a", "-sink", "x", "-cx.yaml"}, []string{"status", "--listen", "a", "--sink", "x", "-cx.yaml"}},
	} {
		if got := singleDashLongFlags(root, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestVersionLine: the commit, its time and a dirty tree come from the
// build information when the toolchain stamped them; without them the
// line still names the version and the Go version.
func TestVersionLine(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{&debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "c21f25e0123456789abcdef0123456789abcdef0"},
			{Key: "vcs.time", Value: "2026-12-05T16:10:00Z"},
			{Key: "vcs.modified", Value: "false"},
		}}, "icecdc " + version + " (commit c21f25e01234 of 2026-12-05T16:10:00Z, go1.26.0 " + platform + ")"},
		{&debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "c21f25e0123456789abcdef0123456789abcdef0"},
			{Key: "vcs.time", Value: "2026-12-05T16:10:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}, "icecdc " + version + " (commit c21f25e01234-dirty of 2026-12-05T16:10:00Z, go1.26.0 " + platform + ")"},
		{&debug.BuildInfo{GoVersion: "go1.26.0"}, "icecdc " + version + " (go1.26.0 " + platform + ")"},
		{nil, "icecdc " + version + " (" + runtime.Version() + " " + platform + ")"},
	} {
		if got := versionLine(tc.bi); got != tc.want {
			t.Errorf("versionLine:\n got %q\nwant %q", got, tc.want)
		}
	}
	// A release build stamps its date.
	defer func(d string) { buildDate = d }(buildDate)
	buildDate = "2026-12-06T05:00:00Z"
	want := "icecdc " + version + " (built 2026-12-06T05:00:00Z, go1.26.0 " + platform + ")"
	if got := versionLine(&debug.BuildInfo{GoVersion: "go1.26.0"}); got != want {
		t.Errorf("versionLine with a build date:\n got %q\nwant %q", got, want)
	}
}
