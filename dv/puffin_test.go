package dv

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/puffin"
)

// puffinFiles maps each Puffin fixture to the positions of its DV blobs,
// keyed by the blob's referenced-data-file base name; nil for files without
// DV blobs.
var puffinFiles = map[string]map[string][]uint64{
	"java-single-blob-dv.puffin": {"00000-0-abc.parquet": {1, 3, 5, 7, 9}},
	"java-multi-blob-dv.puffin": {
		"file-001.parquet": {0, 100, 200},
		"file-002.parquet": {50, 150},
	},
	"empty-puffin-uncompressed.bin":          nil,
	"sample-metric-data-uncompressed.bin":    nil,
	"sample-metric-data-compressed-zstd.bin": nil,
}

func TestPuffinFixtures(t *testing.T) {
	for _, name := range fixtureFiles(t, "dv/puffin") {
		t.Run(name, func(t *testing.T) {
			want, ok := puffinFiles[name]
			if !ok {
				t.Fatalf("fixture %s is not covered by this test: add its blobs", name)
			}
			f, err := os.Open(filepath.Join(fixtureDir(t, "dv/puffin"), name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			pr, err := puffin.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, blob := range pr.Blobs() {
				if blob.Type != puffin.BlobTypeDeletionVector {
					checkNotDV(t, pr, blob)
					continue
				}
				seen++
				file := blob.Properties["referenced-data-file"]
				positions, ok := want[file[strings.LastIndexByte(file, '/')+1:]]
				if !ok {
					t.Fatalf("unexpected DV blob for %q", file)
				}
				card, err := strconv.ParseInt(blob.Properties["cardinality"], 10, 64)
				if err != nil {
					t.Fatalf("blob for %s: cardinality property: %v", file, err)
				}
				b, err := ReadAt(f, blob.Offset, blob.Length, card, int64(positions[len(positions)-1])+1)
				if err != nil {
					t.Fatalf("read dv %s: %v", file, err)
				}
				if got := b.ToArray(); !slices.Equal(got, positions) {
					t.Errorf("blob for %s: got %v, want %v", file, got, positions)
				}
			}
			if seen != len(want) {
				t.Errorf("found %d DV blobs, want %d", seen, len(want))
			}
		})
	}
}

// checkNotDV feeds a non-DV blob's raw bytes to Decode, which must refuse them
// with an error rather than panic or invent positions.
func checkNotDV(t *testing.T, pr *puffin.Reader, blob puffin.BlobMetadata) {
	t.Helper()
	data := make([]byte, blob.Length)
	if _, err := pr.ReadAt(data, blob.Offset); err != nil {
		t.Fatalf("read %s blob: %v", blob.Type, err)
	}
	if _, err := Decode(data, -1, -1); err == nil {
		t.Errorf("Decode accepted the %s blob", blob.Type)
	}
}
