package main

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHeapProfile: ICECDC_HEAPPROFILE makes a command write a heap profile
// when it ends, and a path it cannot write is a one-line
// error naming the variable and the path.
func TestHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pb.gz")
	t.Setenv("ICECDC_HEAPPROFILE", path)
	if _, stderr, code := runCmd("version"); code != 0 {
		t.Fatalf("version with a heap profile: exit %d: %s", code, stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f) // pprof's format: a gzipped protobuf
	if err != nil {
		t.Fatalf("the heap profile is not gzipped: %v", err)
	}
	raw, err := io.ReadAll(z)
	if err != nil || !strings.Contains(string(raw), "inuse_space") {
		t.Fatalf("not a heap profile (%d bytes, %v)", len(raw), err)
	}
	bad := filepath.Join(t.TempDir(), "no", "such", "dir", "heap.pb.gz")
	t.Setenv("ICECDC_HEAPPROFILE", bad)
	if _, stderr, _ := runCmd("version"); stderr != "icecdc: ICECDC_HEAPPROFILE "+bad+": open "+bad+": no such file or directory\n" {
		t.Fatalf("unwritable profile path: stderr %q", stderr)
	}
}
