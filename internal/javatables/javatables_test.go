package javatables

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
