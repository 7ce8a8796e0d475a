package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigValueErrors: a value a setting refuses is named with its line
// and, when it is a typo of one of the values the setting takes, that
// value.
func TestConfigValueErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"name: x\ntables: [{name: a.b}]\nformat: \"debezium-jsn\"\nsink: {type: stdout}\n",
			`:3: config: format: "debezium-jsn": want debezium-json, debezium-connect-json or debezium-avro (did you mean debezium-json?)`},
		{"name: x\ntables: [{name: a.b}]\nsink:\n  type: stdot\n",
			`:4: config: sink.type: "stdot": want kafka, webhook, stdout, file, opensearch, nats, redis, rabbitmq, sqs, sns, kinesis or iceberg (did you mean stdout?)`},
		{"name: x\ntables: [{name: a.b}]\nsink: {type: stdout}\nmetrics:\n  per_table: ful\n",
			`:5: config: metrics.per_table: "ful": want essential or full (did you mean full?)`},
		{"name: x\ntables:\n  - name: a.b\n  - name: nodot\nsink: {type: stdout}\n",
			`:4: config: tables[1].name: "nodot": want namespace.table`},
		{"tables: [{name: a.b}]\nsink: {type: stdout}\n", `: config: name: required (the pipeline name)`},
		{"name: x\ntables: [{name: a.b}]\npoll: {intervall: 1s}\n", `: config: line 3: poll: unknown key "intervall" (did you mean "interval"? valid keys: interval, max_interval)`},
	} {
		path := filepath.Join(t.TempDir(), "icecdc.yaml")
		if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := runCmd("run", "-c", path)
		if want := "icecdc: " + path + c.want + "\n"; code != 1 || errOut != want {
			t.Errorf("exit %d\n%s\nwant exit 1 and\n%s", code, errOut, want)
		}
	}
}

// TestFlagValueErrors: a flag value that is not one of the flag's values,
// or not a number, is a command line that does not parse (exit 2), said
// in words, with the nearest value.
func TestFlagValueErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"changes", "--metadata", "m.json", "--format", "tabel"},
			`changes: invalid argument "tabel" for "--format" flag: want debezium-json, debezium-connect-json, debezium-avro or table (did you mean table?); see 'icecdc changes --help'`},
		{[]string{"changes", "--metadata", "m.json", "--from-seq", "abc"},
			`changes: invalid argument "abc" for "--from-seq" flag: want a whole number; see 'icecdc changes --help'`},
		{[]string{"changes", "--metadata", "m.json", "--to-seq", "99999999999999999999"},
			`changes: invalid argument "99999999999999999999" for "--to-seq" flag: out of range; see 'icecdc changes --help'`},
		{[]string{"changes", "--metadata", "m.json", "--progress", "always"},
			`changes: invalid argument "always" for "--progress" flag: want auto or never; see 'icecdc changes --help'`},
		{[]string{"status", "-o", "jsn"},
			`status: invalid argument "jsn" for "--output" flag: want table or json (did you mean json?); see 'icecdc status --help'`},
	} {
		_, errOut, code := runCmd(c.args...)
		if want := "icecdc: " + c.want + "\n"; code != 2 || errOut != want {
			t.Errorf("%v: exit %d\n%s\nwant exit 2 and\n%s", c.args, code, errOut, want)
		}
	}
}

// TestDemoWords: the commands to try come once, with the table; a commit
// of one event says "1 event"; the daemon's start line of a table without
// a checkpoint says where it starts, not a position that does not exist.
func TestDemoWords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	out, _, code := runCmd("demo", "--dir", dir)
	if code != 0 || strings.Count(out, "# next, try:") != 1 || strings.Contains(out, ": 1 events") || !strings.Contains(out, ": 1 event\n") {
		t.Fatalf("demo: exit %d:\n%s", code, out)
	}
	out, _, code = runCmd("demo", "--dir", dir, "--commit", "insert")
	if code != 0 || strings.Contains(out, "next, try") || !strings.HasSuffix(out, "\n") || !strings.Contains(out, "(insert order 7): 1 event\n") {
		t.Fatalf("demo --commit: exit %d, want the commit's event and no commands again:\n%s", code, out)
	}
	_, errOut, code := runCmd("run", "--once", "-c", filepath.Join(dir, "icecdc.yaml"))
	if code != 0 || !strings.Contains(errOut, `"msg":"no checkpoint: starting","table":"bookshop.orders","from":"the first snapshot"}`) ||
		strings.Contains(errOut, "@0(") || strings.Contains(errOut, "null") {
		t.Fatalf("run --once: exit %d:\n%s", code, errOut)
	}
}
