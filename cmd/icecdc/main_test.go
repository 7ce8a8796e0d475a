package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

type line struct {
	Op     string         `json:"op"`
	Before map[string]any `json:"before"`
	After  map[string]any `json:"after"`
	Source struct {
		Seq   int64 `json:"sequence_number"`
		RowID int64 `json:"row_id"`
	} `json:"source"`
}

// summary renders an event as "seq op row_id order_id status[->status]".
func (l line) summary() string {
	img := l.After
	if img == nil {
		img = l.Before
	}
	s := fmt.Sprintf("%d %s %d order=%v %v", l.Source.Seq, l.Op, l.Source.RowID, img["order_id"], img["status"])
	if l.Op == "u" {
		s = fmt.Sprintf("%d u %d order=%v %v->%v", l.Source.Seq, l.Source.RowID, img["order_id"], l.Before["status"], l.After["status"])
	}
	return s
}

func parseLines(t *testing.T, out string) []line {
	t.Helper()
	var ls []line
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") || sc.Text() == "" {
			continue
		}
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("not JSON: %v: %s", err, sc.Text())
		}
		ls = append(ls, l)
	}
	return ls
}

func runCmd(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return o.String(), e.String(), code
}

// bookshopEvents is the exact event list of the demo story.
var bookshopEvents = []string{
	"1 c 0 order=1 new", "1 c 1 order=2 new", "1 c 2 order=3 new", "1 c 3 order=4 new", "1 c 4 order=5 new",
	"2 d 1 order=2 new",
	"3 u 0 order=1 new->shipped",
	"4 c 6 order=6 new", // row id 5 went to the file the update wrote (it stores id 0)
	"6 d 2 order=3 new",
}

func TestDemoBookshop(t *testing.T) {
	out, errOut, code := runCmd("demo", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []string
	for _, l := range parseLines(t, out) {
		got = append(got, l.summary())
	}
	if strings.Join(got, "\n") != strings.Join(bookshopEvents, "\n") {
		t.Fatalf("demo events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(bookshopEvents, "\n"))
	}
	if n := strings.Count(out, "\n# snapshot "); n != 6 {
		t.Fatalf("%d snapshot headers, want 6:\n%s", n, out)
	}
}

// bookshop builds the demo table and returns its catalog flags and the
// current metadata file.
func bookshop(t *testing.T) (dir string, catalogArgs []string, metadata string) {
	t.Helper()
	dir = t.TempDir()
	opts, _, err := buildBookshop(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := source.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, []string{"--catalog-type", "sql", "--catalog-uri", opts.CatalogURI, "--warehouse", opts.Warehouse, "--table", "bookshop.orders"},
		src.Iceberg().MetadataLocation()
}

func TestChangesFromCatalogAndMetadata(t *testing.T) {
	_, catArgs, meta := bookshop(t)
	out1, e1, c1 := runCmd(append([]string{"changes"}, catArgs...)...)
	out2, e2, c2 := runCmd("changes", "--metadata", strings.TrimPrefix(meta, "file://"))
	if c1 != 0 || c2 != 0 {
		t.Fatalf("exit %d %d: %s %s", c1, c2, e1, e2)
	}
	for _, out := range []string{out1, out2} {
		var got []string
		for _, l := range parseLines(t, out) {
			got = append(got, l.summary())
		}
		if strings.Join(got, "\n") != strings.Join(bookshopEvents, "\n") {
			t.Fatalf("changes:\n%s", strings.Join(got, "\n"))
		}
	}
	// A budget of one byte spills every before image: the same events.
	out3, e3, c3 := runCmd(append([]string{"changes", "--max-memory", "1"}, catArgs...)...)
	var got []string
	for _, l := range parseLines(t, out3) {
		got = append(got, l.summary())
	}
	if c3 != 0 || strings.Join(got, "\n") != strings.Join(bookshopEvents, "\n") {
		t.Fatalf("--max-memory 1: exit %d %s\n%s", c3, e3, out3)
	}
	// A flag that does not parse is a usage error: exit 2.
	wantUsageError(t, append([]string{"changes", "--max-memory", "lots"}, catArgs...), "--max-memory", `"lots" is not a size`)
	// --from-seq is exclusive, --to-seq inclusive.
	out, _, code := runCmd(append([]string{"changes", "--from-seq", "1", "--to-seq", "3"}, catArgs...)...)
	ls := parseLines(t, out)
	if code != 0 || len(ls) != 2 || ls[0].summary() != bookshopEvents[5] || ls[1].summary() != bookshopEvents[6] {
		t.Fatalf("range 1..3: exit %d, %v", code, ls)
	}
}

// failsWith runs changes and wants exit 1 with one line on stderr holding every part.
func failsWith(t *testing.T, args []string, parts ...string) {
	t.Helper()
	out, errOut, code := runCmd(append([]string{"changes"}, args...)...)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stdout %q stderr %q", code, out, errOut)
	}
	if strings.Count(errOut, "\n") != 1 {
		t.Fatalf("stderr is not one line: %q", errOut)
	}
	for _, p := range parts {
		if !strings.Contains(errOut, p) {
			t.Fatalf("stderr %q does not name %q", errOut, p)
		}
	}
}

func TestChangesBadInput(t *testing.T) {
	t.Run("missing metadata file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "nope.metadata.json")
		failsWith(t, []string{"--metadata", p}, p)
	})
	t.Run("missing catalog file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "nope.db")
		failsWith(t, []string{"--catalog-uri", "file:" + p, "--table", "a.b"}, p)
	})
	t.Run("v2 table", func(t *testing.T) {
		ctx := context.Background()
		env, err := scenario.NewEnv(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		tbl, err := env.CreateTable(ctx, table.Identifier{"old", "t"}, scenario.OrdersSchema(), nil, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := scenario.Append(ctx, tbl, []map[string]any{bookshopOrder(1, "a", "new", 1)}); err != nil {
			t.Fatal(err)
		}
		failsWith(t, []string{"--catalog-uri", env.CatalogURI, "--warehouse", env.Warehouse, "--table", "old.t"}, "old.t", "format version 2")
	})
	t.Run("missing data file", func(t *testing.T) {
		dir, catArgs, _ := bookshop(t)
		victim := findFile(t, dir, func(p string) bool { return strings.HasSuffix(p, ".parquet") })
		if err := os.Remove(victim); err != nil {
			t.Fatal(err)
		}
		failsWith(t, catArgs, filepath.Base(victim))
	})
	t.Run("garbage data file", func(t *testing.T) {
		dir, catArgs, _ := bookshop(t)
		victim := findFile(t, dir, func(p string) bool { return strings.HasSuffix(p, ".parquet") })
		if err := os.WriteFile(victim, []byte("PAR1 this is not parquet PAR1"), 0o644); err != nil {
			t.Fatal(err)
		}
		failsWith(t, catArgs, filepath.Base(victim))
	})
	t.Run("missing manifest list", func(t *testing.T) {
		dir, catArgs, _ := bookshop(t)
		victim := findFile(t, dir, func(p string) bool { return strings.Contains(filepath.Base(p), "snap-") })
		if err := os.Remove(victim); err != nil {
			t.Fatal(err)
		}
		failsWith(t, catArgs, filepath.Base(victim))
	})
	t.Run("corrupt deletion vector", func(t *testing.T) {
		dir, catArgs, _ := bookshop(t)
		victim := findFile(t, dir, func(p string) bool { return strings.HasSuffix(p, ".puffin") })
		b, err := os.ReadFile(victim)
		if err != nil {
			t.Fatal(err)
		}
		b[4+4+4+2] ^= 0xff // blob at 4: length, magic, then inside the first blob's bitmap: the CRC no longer matches
		if err := os.WriteFile(victim, b, 0o644); err != nil {
			t.Fatal(err)
		}
		failsWith(t, catArgs, filepath.Base(victim), "crc")
	})
	t.Run("bad flags", func(t *testing.T) {
		failsWith(t, []string{"--from-seq", "5", "--to-seq", "2", "--metadata", "x"}, "--from-seq 5 --to-seq 2")
		// A value not among the flag's is a command line that does not parse.
		wantUsageError(t, []string{"changes", "--format", "avro", "--metadata", "x"}, `invalid argument "avro" for "--format" flag`)
	})
}

func findFile(t *testing.T, dir string, match func(string) bool) string {
	t.Helper()
	var found string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && match(p) && found == "" {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no matching file under %s", dir)
	}
	return found
}

// With --metadata the table is named after its location
// (<warehouse>/bookshop.db/orders), not the metadata file; --table
// names it explicitly.
func TestChangesMetadataNamesTheTable(t *testing.T) {
	_, _, meta := bookshop(t)
	meta = strings.TrimPrefix(meta, "file://")
	names := func(args ...string) (schema, table string) {
		t.Helper()
		out, errOut, code := runCmd(append([]string{"changes", "--metadata", meta}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var ev struct {
			Source struct{ Schema, Table string } `json:"source"`
		}
		if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &ev); err != nil {
			t.Fatal(err)
		}
		return ev.Source.Schema, ev.Source.Table
	}
	if s, tb := names(); s != "bookshop" || tb != "orders" {
		t.Errorf("--metadata: source.schema %q, source.table %q; want bookshop, orders", s, tb)
	}
	if s, tb := names("--table", "sales.orders_v2"); s != "sales" || tb != "orders_v2" {
		t.Errorf("--metadata --table sales.orders_v2: source.schema %q, source.table %q", s, tb)
	}
}
