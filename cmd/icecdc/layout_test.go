package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCodeLayoutNamesEveryPackage: docs/README.md's code layout names
// every top-level folder that holds Go code, and every package under
// internal/ and sinks/, so a newcomer finds each one there.
func TestCodeLayoutNamesEveryPackage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(doc), "## Code layout")
	if !ok {
		t.Fatal("docs/README.md has no '## Code layout' section")
	}
	layout, _, _ = strings.Cut(layout, "\n## ")
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[a-z0-9]+`).FindAllString(layout, -1) {
		words[w] = true
	}
	dirs := map[string]bool{}
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		parts := strings.Split(filepath.ToSlash(filepath.Dir(rel)), "/")
		switch {
		case parts[0] == ".":
		case (parts[0] == "internal" || parts[0] == "sinks") && len(parts) > 1:
			dirs[parts[0]+"/"+parts[1]] = true
		default:
			dirs[parts[0]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %d folders with Go code: %v", len(dirs), dirs)
	}
	for dir := range dirs {
		name := dir[strings.LastIndex(dir, "/")+1:]
		if !words[name] {
			t.Errorf("docs/README.md's code layout does not name %s/", dir)
		}
	}
}
