package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func netSummaries(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, l := range parseLines(t, out) {
		got = append(got, l.summary())
	}
	return got
}

// The net changes of the bookshop story, whole and from sequence number
// 1 on: one event per row, ordered by the last snapshot that touched it.
func TestChangesNet(t *testing.T) {
	_, catArgs, _ := bookshop(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"1 c 3 order=4 new", "1 c 4 order=5 new", "3 c 0 order=1 shipped", "4 c 6 order=6 new"}},
		{[]string{"--from-seq", "1"}, []string{"2 d 1 order=2 new", "3 u 0 order=1 new->shipped", "4 c 6 order=6 new", "6 d 2 order=3 new"}},
		{[]string{"--from-seq", "2", "--to-seq", "3"}, []string{"3 u 0 order=1 new->shipped"}},
	} {
		out, errOut, code := runCmd(append(append([]string{"changes", "--net"}, tc.args...), catArgs...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		if got := netSummaries(t, out); !slices.Equal(got, tc.want) {
			t.Fatalf("changes --net %v:\n%s\nwant:\n%s", tc.args, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
		}
	}
	failsWith(t, append([]string{"--net", "--net-max-rows", "2"}, catArgs...), "--net-max-rows", "more than 2 rows")
}

func TestChangesColumns(t *testing.T) {
	_, catArgs, _ := bookshop(t)
	out, errOut, code := runCmd(append([]string{"changes", "--from-seq", "1", "--columns", "status"}, catArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	ls := parseLines(t, out)
	if len(ls) != 4 || ls[1].Op != "u" {
		t.Fatalf("columns [status]: %v", netSummaries(t, out))
	}
	var keys []string
	for k := range ls[1].After {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "order_id,status" {
		t.Fatalf("the update's image holds %v, want the key and the subscribed column", keys)
	}
	// The update changed status only: a subscription to amount skips it.
	out, errOut, code = runCmd(append([]string{"changes", "--from-seq", "1", "--columns", "amount,customer"}, catArgs...)...)
	if got := netSummaries(t, out); code != 0 || slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, " u ") }) || len(got) != 3 {
		t.Fatalf("columns [amount customer]: exit %d %s: %v", code, errOut, got)
	}
	failsWith(t, append([]string{"--columns", "status,colour"}, catArgs...), "table bookshop.orders", `unknown column "colour"`)
}

func TestChangesTableFormat(t *testing.T) {
	_, catArgs, _ := bookshop(t)
	out, errOut, code := runCmd(append([]string{"changes", "--format", "table"}, catArgs...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+len(bookshopEvents) || !strings.HasPrefix(lines[0], "SEQ") {
		t.Fatalf("want a header and %d events:\n%s", len(bookshopEvents), out)
	}
	var update string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 2 && f[2] == "u" {
			update = l
		}
	}
	if !strings.Contains(update, "order_id=1") || !strings.Contains(update, "status: new → shipped") {
		t.Fatalf("the update line should show the key and status: new → shipped:\n%s", out)
	}
	// Aligned: the op column starts at the same place on every line.
	col := strings.Index(lines[0], "OP")
	for _, l := range lines[1:] {
		if len(l) <= col || l[col-1] != ' ' || l[col+1] != ' ' {
			t.Fatalf("op column not aligned at %d:\n%s", col, out)
		}
	}
}

// Progress goes to stderr only when it is a terminal: a file or a pipe
// receives nothing.
func TestChangesNoProgressWhenNotATerminal(t *testing.T) {
	_, catArgs, _ := bookshop(t)
	errFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	var out strings.Builder
	if code := run(append([]string{"changes", "--net"}, catArgs...), &out, errFile); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if fi, err := errFile.Stat(); err != nil || fi.Size() != 0 {
		b, _ := os.ReadFile(errFile.Name())
		t.Fatalf("stderr is a file, yet %q was written to it (%v)", b, err)
	}
	if out.Len() == 0 {
		t.Fatal("no events printed")
	}
}
