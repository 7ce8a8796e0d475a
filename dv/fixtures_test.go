package dv

import (
	"os"
	"path/filepath"
	"testing"
)

// fixtureRoot is where CI and a local checkout keep the shared fixtures: the
// repository's sibling directory shared/, seen from this package directory.
const fixtureRoot = "../../shared/fixtures"

// fixtureDir returns fixtures/<sub>, failing the test if it is missing: a
// decoder test that passes without its golden vectors proves nothing.
func fixtureDir(tb testing.TB, sub string) string {
	tb.Helper()
	dir := filepath.Join(fixtureRoot, sub)
	if _, err := os.Stat(dir); err != nil {
		wd, _ := os.Getwd()
		abs, _ := filepath.Abs(dir)
		tb.Fatalf("fixtures not found at %s (from working directory %s): %v; check out the shared fixtures next to the repository root", abs, wd, err)
	}
	return dir
}

// fixtureFiles returns the names of the regular files in fixtures/<sub>.
func fixtureFiles(tb testing.TB, sub string) []string {
	tb.Helper()
	entries, err := os.ReadDir(fixtureDir(tb, sub))
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		tb.Fatalf("no fixture files in %s", fixtureDir(tb, sub))
	}
	return names
}

// readFixture returns the bytes of fixtures/<sub>/<name>.
func readFixture(tb testing.TB, sub, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir(tb, sub), name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
