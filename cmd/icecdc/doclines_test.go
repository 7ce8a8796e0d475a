package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/internal/suggest"
)

// docCommand is an icecdc command line a page shows.
type docCommand struct {
	where string // page:line
	line  string
	args  []string
}

// docCommands finds the icecdc command lines of a Markdown page: each line
// of a code block (fenced, or indented by four spaces) that starts with
// "icecdc " or "go run ./cmd/icecdc " (continued by a trailing
// backslash), and each inline code span
// that starts with "icecdc " followed by a flag or by a word that is, or
// nearly is, a command (`icecdc started`, a log message, is not a command
// line; `icecdc stauts` is one, misspelt). A comment, a pipe or a second
// command ends the line.
func docCommands(page, text string) []docCommand {
	var out []docCommand
	lines := strings.Split(text, "\n")
	fenced := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		where := fmt.Sprintf("%s:%d", page, i+1)
		code := strings.TrimPrefix(strings.TrimSpace(l), "$ ")
		if rest, ok := strings.CutPrefix(code, "go run ./cmd/icecdc "); ok {
			code = "icecdc " + rest // the README's quick start, from a clone
		}
		if (fenced || strings.HasPrefix(l, "    ")) && strings.HasPrefix(code, "icecdc ") {
			for strings.HasSuffix(code, "\\") && i+1 < len(lines) {
				i++
				code = strings.TrimSuffix(code, "\\") + " " + strings.TrimSpace(lines[i])
			}
			out = append(out, docCommand{where: where, line: code, args: shellWords(code)})
			continue
		}
		for _, span := range inlineSpans(l) {
			args := shellWords(span)
			if len(args) < 2 || args[0] != "icecdc" {
				continue
			}
			if w := args[1]; strings.HasPrefix(w, "-") || w == "COMMAND" || slices.Contains(commandNames(), w) || suggest.Closest(w, commandNames()) != "" {
				out = append(out, docCommand{where: where, line: span, args: args})
			}
		}
	}
	return out
}

func commandNames() []string {
	var names []string
	for _, c := range newRootCommand(&cli{stdout: io.Discard, stderr: io.Discard}).Commands() {
		names = append(names, c.Name())
	}
	return names
}

// inlineSpans returns the `code spans` of a line that start with icecdc.
func inlineSpans(l string) []string {
	var out []string
	parts := strings.Split(l, "`")
	for i := 1; i < len(parts); i += 2 {
		if strings.HasPrefix(parts[i], "icecdc ") {
			out = append(out, parts[i])
		}
	}
	return out
}

// shellWords splits a command line as a shell would for these pages:
// quotes group, a comment, a pipe, ; or && ends it, and the docs'
// elisions (…, ..., [optional]) are dropped.
func shellWords(s string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	flush := func() {
		if in {
			words = append(words, w.String())
		}
		w.Reset()
		in = false
	}
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			flush()
		case (r == '#' || r == '|' || r == ';' || r == '&') && !in:
			return cleanWords(words)
		default:
			w.WriteRune(r)
			in = true
		}
	}
	flush()
	return cleanWords(words)
}

func cleanWords(words []string) []string {
	var out []string
	for _, w := range words {
		w = strings.Trim(w, "[]")
		if w == "" || w == "…" || w == "..." {
			continue
		}
		out = append(out, w)
	}
	return out
}

// parseCommandLine takes args (without "icecdc") as far as icecdc takes a
// command line before it runs the command: the command, its flags and
// their values' form, its operands. Placeholders stand for values.
func parseCommandLine(args []string) error {
	root := newRootCommand(&cli{stdout: io.Discard, stderr: io.Discard, log: slog.New(slog.DiscardHandler)})
	for i, a := range args {
		if a == "COMMAND" {
			args[i] = "run"
		}
	}
	args = singleDashLongFlags(root, args)
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	fl := cmd.Flags()
	// A value flag the page names without its value (`icecdc changes
	// --format`) is a mention: give it one.
	if n := len(rest); n > 0 && strings.HasPrefix(rest[n-1], "--") && !strings.Contains(rest[n-1], "=") {
		if f := fl.Lookup(strings.TrimPrefix(rest[n-1], "--")); f != nil && f.NoOptDefVal == "" {
			rest = append(rest, "x")
		}
	}
	// A placeholder for a number (--from-seq N) stands for one.
	for i := 0; i+1 < len(rest); i++ {
		name, ok := strings.CutPrefix(rest[i], "--")
		if !ok || strings.Contains(name, "=") || !placeholder.MatchString(rest[i+1]) {
			continue
		}
		if f := fl.Lookup(name); f != nil && strings.Contains(f.Value.Type(), "int") {
			rest[i+1] = "1"
		}
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	operands := fl.Args()
	switch {
	case cmd == root && len(operands) > 0:
		return unknownCommand(root, operands[0])
	case cmd.Name() == "help":
		if len(operands) > 0 {
			if _, more, err := root.Find(operands); err != nil || len(more) > 0 {
				return unknownCommand(root, strings.Join(operands, " "))
			}
		}
		return nil
	}
	if cmd.Args != nil {
		return cmd.Args(cmd, operands)
	}
	return nil
}

// placeholder is a value the docs name by its kind: N, FILE, NS.NAME.
var placeholder = regexp.MustCompile(`^[A-Z][A-Z_.]*$`)

// TestDocCommandLines: every icecdc command line README.md and docs/ show
// is one icecdc takes: its command exists, its flags are the command's,
// their values have the right form, it has no stray operand.
func TestDocCommandLines(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md")
	var all []docCommand
	for _, p := range pages {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, docCommands(filepath.Base(p), string(raw))...)
	}
	seen := map[string]bool{}
	for _, c := range all {
		if len(c.args) > 0 {
			seen[c.args[min(1, len(c.args)-1)]] = true
		}
		if err := parseCommandLine(c.args[1:]); err != nil {
			t.Errorf("%s: %s: %v", c.where, c.line, err)
		}
	}
	// The pages show every command; finding fewer means the search broke.
	for _, name := range []string{"run", "changes", "demo", "status", "reset", "snapshot", "version"} {
		if !seen[name] {
			t.Errorf("no command line of %s found in the docs (%d lines found)", name, len(all))
		}
	}
	t.Logf("%d command lines checked", len(all))
}

// TestDocCommandLinesCheck: the check refuses what icecdc refuses.
func TestDocCommandLinesCheck(t *testing.T) {
	page := "Run `icecdc stauts -c x.yaml`; logs say `icecdc started`.\n\n" +
		"    icecdc run -c icecdc.yaml --bogus\n" +
		"    icecdc changes --from-seq abc --metadata m.json\n" +
		"    icecdc status -c a.yaml extra     # an operand\n" +
		"    icecdc help nothing\n" +
		"    icecdc changes --metadata /p/m.json [--from-seq N] \\\n      --to-seq 5 | kcat -P\n" +
		"```sh\nicecdc demo --dir ./demo --commit update  # fine\n```\n" +
		"    go run ./cmd/icecdc status -c x.yaml --once\n"
	cmds := docCommands("page.md", page)
	var got []string
	for _, c := range cmds {
		got = append(got, fmt.Sprintf("%s %v", c.where, parseCommandLine(c.args[1:]) == nil))
	}
	want := []string{"page.md:1 false", "page.md:3 false", "page.md:4 false", "page.md:5 false", "page.md:6 false", "page.md:7 true", "page.md:10 true", "page.md:12 false"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("checked:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
