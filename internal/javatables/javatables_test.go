package javatables

import (
	"bytes"
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// files lists the regular files under dir, relative and sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// Every stored table holds exactly the files its metadata references, no
// path of the directory Spark wrote it in, and relocates to a copy in
// which no file names the placeholder any more.
func TestStoredTables(t *testing.T) {
	names, err := Names()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatal("no tables under testdata/java")
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			tb := Load(t, name)
			stored := slices.DeleteFunc(files(t, filepath.Join(root, name)), func(f string) bool { return f == "expected.json" })
			copied := files(t, tb.Dir)
			if !slices.Equal(stored, copied) {
				t.Errorf("stored files %v, the metadata references %v", stored, copied)
			}
			for _, f := range stored {
				b, err := os.ReadFile(filepath.Join(root, name, f))
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte("/icecdc-interop.")) || bytes.Contains(b, []byte("/tmp/")) {
					t.Errorf("%s names the directory Spark wrote the table in", f)
				}
			}
			for _, f := range copied {
				b, err := os.ReadFile(filepath.Join(tb.Dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(b, []byte(Placeholder)) {
					t.Errorf("relocated %s still names %s", f, Placeholder)
				}
			}
		})
	}
}

// testdataLimit is issue #13's bound on the stored tables: "keep the whole
// folder under 2 MiB", the apparent size of every file under testdata/.
const testdataLimit = 2 << 20

type sizedFile struct {
	path string
	size int64
}

// sizes returns the regular files under dir with their apparent sizes,
// biggest first, and their total.
func sizes(dir string) ([]sizedFile, int64, error) {
	var out []sizedFile
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, sizedFile{filepath.ToSlash(rel), info.Size()})
		total += info.Size()
		return err
	})
	slices.SortFunc(out, func(a, b sizedFile) int { return cmp.Or(cmp.Compare(b.size, a.size), strings.Compare(a.path, b.path)) })
	return out, total, err
}

// testdata/ stays under the 2 MiB: the sizes of its files summed
// (directories, whose size depends on the file system, not counted).
func TestTestdataSize(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(root) // testdata
	files, total, err := sizes(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("testdata/: %d files, %d bytes (%.0f KiB of %.0f KiB allowed)", len(files), total, float64(total)/1024, float64(testdataLimit)/1024)
	if total <= testdataLimit {
		return
	}
	var big []string
	for _, f := range files[:min(10, len(files))] {
		big = append(big, fmt.Sprintf("  testdata/%s: %d bytes", f.path, f.size))
	}
	t.Errorf("testdata/ holds %d bytes in %d files, over the limit of %d (%.2f MiB); the biggest files:\n%s",
		total, len(files), testdataLimit, float64(testdataLimit)/(1<<20), strings.Join(big, "\n"))
}
