package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReleaseBuildStripped: the release build (the Dockerfile's) leaves
// out the builder's paths, the symbol table and DWARF.
func TestReleaseBuildStripped(t *testing.T) {
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	builds := regexp.MustCompile(`(?m)^RUN .*\bgo build\b.*$`).FindAllString(string(df), -1)
	if len(builds) == 0 {
		t.Fatal("Dockerfile: no go build")
	}
	stripped := regexp.MustCompile(`-ldflags=(-s -w|'-s -w'|"-s -w")(\s|$)`)
	for _, b := range builds {
		if !strings.Contains(b, " -trimpath ") || !stripped.MatchString(b) {
			t.Errorf("Dockerfile: %q is not a stripped release build (want -trimpath -ldflags='-s -w')", b)
		}
	}
}
