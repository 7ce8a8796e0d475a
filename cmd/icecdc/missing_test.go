package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMisspeltTable: a table the catalog does not know is one line that
// names it, the catalog, and the nearest table of its namespace (or the
// nearest namespace), never iceberg-go's Go slice; it is not retried.
func TestMisspeltTable(t *testing.T) {
	path, _ := demoDaemonConfig(t)
	dir := filepath.Dir(path)
	catURI := "file:" + filepath.Join(dir, "catalog.db")
	where := `sql catalog "local" at ` + catURI
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ table, want string }{
		{"bookshop.ordrs", "table bookshop.ordrs does not exist in " + where + "; did you mean bookshop.orders?"},
		{"bookshp.orders", "table bookshp.orders does not exist in " + where + ": no namespace bookshp; did you mean bookshop.orders?"},
		{"bookshop.invoices", "table bookshop.invoices does not exist in " + where + "; namespace bookshop holds bookshop.orders"},
	} {
		t.Run(c.table, func(t *testing.T) {
			_, errOut, code := runCmd("changes", "--catalog-uri", catURI, "--table", c.table)
			if code != 1 || errOut != "icecdc: "+c.want+"\n" {
				t.Fatalf("changes --table %s: exit %d\n%s\nwant exit 1 and\nicecdc: %s", c.table, code, errOut, c.want)
			}
			bad := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(bad, []byte(strings.Replace(string(raw), "name: bookshop.orders", "name: "+c.table, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			_, errOut, code = runCmd("run", "--once", "-c", bad)
			last := errOut[strings.LastIndex(strings.TrimRight(errOut, "\n"), "\n")+1:]
			if code != 1 || last != "icecdc: "+c.want+"\n" || strings.Contains(errOut, "gave up after") {
				t.Fatalf("run --once with table %s: exit %d\n%s\nwant exit 1 at once and the last line\nicecdc: %s", c.table, code, errOut, c.want)
			}
		})
	}
}

// TestMisspeltTableInDaemon: the daemon stops a table the catalog does
// not know with that line, follows the others, and shows it stopped in
// /status and icecdc status (exit 3).
func TestMisspeltTableInDaemon(t *testing.T) {
	path, listen := demoDaemonConfig(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(raw), "  - name: bookshop.orders\n", "  - name: bookshop.orders\n  - name: bookshop.ordrs\n", 1)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "-c", path)
	d.waitFor(t, "the misspelt table to stop", func() bool { return len(d.logLines("table stopped")) == 1 })
	d.waitFor(t, "the demo table caught up", func() bool {
		var rows []tableStatus
		return json.Unmarshal([]byte(daemonPage(listen, "/status")), &rows) == nil && len(rows) == 2 &&
			rows[0].Table == "bookshop.orders" && rows[0].Checkpoint != nil && rows[0].Lag != nil && rows[0].Lag.SnapshotsBehind == 0
	})
	stopped := d.logLines("table stopped")[0]
	if stopped["table"] != "bookshop.ordrs" || !strings.HasSuffix(stopped["err"].(string), "does not exist in sql catalog \"local\" at file:"+filepath.Join(filepath.Dir(path), "catalog.db")+"; did you mean bookshop.orders?") {
		t.Fatalf("stop line %v", stopped)
	}
	if n := len(d.logLines("source failing; retrying")); n != 0 {
		t.Fatalf("the missing table was retried (%d lines):\n%s", n, d.logs.String())
	}
	out, errOut, code := runCmd("status", "-c", path, "-o", "json")
	if code != exitTablesFailing || !strings.Contains(errOut, "1 of 2 tables failing, stopped or unreadable: bookshop.ordrs") {
		t.Fatalf("status -o json: exit %d %q, want %d naming bookshop.ordrs", code, errOut, exitTablesFailing)
	}
	var rows []tableStatus
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	if h := rows[1].Health; rows[1].Table != "bookshop.ordrs" || h == nil || h.State != "stopped" || !strings.Contains(h.LastError, "did you mean bookshop.orders?") ||
		!strings.Contains(rows[1].Error, "did you mean bookshop.orders?") {
		t.Fatalf("status -o json: the misspelt table %+v %+v", rows[1], h)
	}
	if rows[0].Health == nil || rows[0].Health.State != "ok" {
		t.Fatalf("status -o json: the demo table %+v", rows[0])
	}
	// The daemon ends with the stopped table's line, for its supervisor.
	d.cancel()
	err = <-d.done
	d.done <- nil
	if err == nil || !strings.HasSuffix(err.Error(), "; did you mean bookshop.orders?") {
		t.Fatalf("the daemon's exit error %v: want the stopped table's line", err)
	}
}

// TestSQLiteURIForms: a SQLite catalog given in another tool's URI form
// is refused at once with the form icecdc reads; a file that is not a
// SQLite database is named.
func TestSQLiteURIForms(t *testing.T) {
	path, _ := demoDaemonConfig(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	bad := filepath.Join(dir, "bad.yaml")
	var uri string
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "  uri: "); ok {
			uri = v
		}
	}
	for _, c := range []struct{ uri, want string }{
		{"sqlite:///./demo/catalog.db", "sqlite:///./demo/catalog.db: a SQLite catalog's uri is file:PATH (here file:./demo/catalog.db)"},
		{"sqlite:////srv/catalog.db", "sqlite:////srv/catalog.db: a SQLite catalog's uri is file:PATH (here file:/srv/catalog.db)"},
		{"jdbc:sqlite:catalog.db", "jdbc:sqlite:catalog.db: a SQLite catalog's uri is file:PATH (here file:catalog.db)"},
	} {
		if err := os.WriteFile(bad, []byte(strings.Replace(string(raw), uri, c.uri, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := runCmd("run", "--once", "-c", bad)
		if code != 1 || !strings.Contains(errOut, "config: catalog.uri: "+c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("run with uri %s: exit %d %q, want one line with %q", c.uri, code, errOut, c.want)
		}
		_, errOut, code = runCmd("changes", "--catalog-uri", c.uri, "--table", "bookshop.orders")
		if code != 1 || errOut != "icecdc: changes: --catalog-uri "+c.want+"\n" {
			t.Errorf("changes --catalog-uri %s: exit %d %q, want %q", c.uri, code, errOut, c.want)
		}
	}
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte("not a database, but long enough to have a header page of its own......................................................"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runCmd("changes", "--catalog-uri", "file:"+notDB, "--table", "bookshop.orders")
	if code != 1 || !strings.Contains(errOut, "SQLite file "+notDB+": file is not a database") {
		t.Errorf("changes on a text file: exit %d %q, want the file named", code, errOut)
	}
	missing := filepath.Join(dir, "nothere.db")
	_, errOut, code = runCmd("changes", "--catalog-uri", "file:"+missing, "--table", "bookshop.orders")
	if code != 1 || !strings.Contains(errOut, "SQLite file "+missing+": no such file or directory (a SQLite catalog's uri is file:PATH)") {
		t.Errorf("changes on a missing file: exit %d %q", code, errOut)
	}
}
