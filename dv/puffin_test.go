package dv

import (
	"maps"
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

// TestPuffinVectors reads the Puffin files Iceberg Java wrote into
// testdata/dv with iceberg-go's reader, as icecdc does: the footer must be
// the one Java read, and each vector, read from where its DeleteFile (the
// manifest entry) says it is, must hold the positions and containers Java
// read; other blob types must not decode as vectors.
func TestPuffinVectors(t *testing.T) {
	for _, want := range readManifest(t).Puffin {
		t.Run(want.File, func(t *testing.T) {
			f, err := os.Open(filepath.Join(testdataDir, want.File))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != want.Size {
				t.Fatalf("%d bytes, Java wrote %d", fi.Size(), want.Size)
			}
			pr, err := puffin.NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := pr.Properties(); !maps.Equal(got, want.Properties) {
				t.Errorf("file properties %v, Java read %v", got, want.Properties)
			}
			blobs := pr.Blobs()
			if len(blobs) != len(want.Blobs) {
				t.Fatalf("%d blobs, Java read %d", len(blobs), len(want.Blobs))
			}
			dvs := map[string]javaDeleteFile{}
			for _, d := range want.DeleteFiles {
				if d.Format != "PUFFIN" || d.FileSizeInBytes != want.Size {
					t.Errorf("delete file for %s: format %s, size %d; want PUFFIN, %d", d.ReferencedDataFile, d.Format, d.FileSizeInBytes, want.Size)
				}
				dvs[d.ReferencedDataFile] = d
			}
			for i, blob := range blobs {
				jb := want.Blobs[i]
				got := javaBlob{
					Type: string(blob.Type), Fields: blob.Fields, SnapshotID: blob.SnapshotID, SequenceNumber: blob.SequenceNumber,
					Offset: blob.Offset, Length: blob.Length, CompressionCodec: blob.CompressionCodec, Properties: blob.Properties,
				}
				if !sameFooterEntry(got, jb) {
					t.Errorf("blob %d: footer entry %+v, Java read %+v", i, got, jb)
				}
				if blob.Type != puffin.BlobTypeDeletionVector {
					checkNotDV(t, pr, blob)
					if blob.CompressionCodec == nil {
						data, err := pr.ReadBlob(i)
						if err != nil {
							t.Fatalf("blob %d: %v", i, err)
						}
						if string(data.Data) != jb.Data {
							t.Errorf("blob %d: read %q, Java read %q", i, data.Data, jb.Data)
						}
					}
					continue
				}
				file := blob.Properties["referenced-data-file"]
				d, ok := dvs[file]
				if want.DeleteFiles != nil && !ok {
					t.Fatalf("blob %d: no delete file for %s", i, file)
				}
				if ok && (d.ContentOffset != blob.Offset || d.ContentSizeInBytes != blob.Length || d.RecordCount != jb.Cardinality) {
					t.Errorf("blob %d: delete file %+v, footer offset %d length %d cardinality %d", i, d, blob.Offset, blob.Length, jb.Cardinality)
				}
				if card := blob.Properties["cardinality"]; card != strconv.FormatInt(jb.Cardinality, 10) {
					t.Errorf("blob %d: cardinality property %q, Java read %d positions", i, card, jb.Cardinality)
				}
				positions := expand(jb.Positions)
				records := int64(0)
				if len(positions) > 0 {
					records = int64(positions[len(positions)-1]) + 1
				}
				b, err := ReadAt(f, blob.Offset, blob.Length, jb.Cardinality, records)
				if err != nil {
					t.Fatalf("blob %d for %s: %v", i, file, err)
				}
				if got := b.ToArray(); !slices.Equal(got, positions) {
					t.Errorf("blob %d for %s: got %d positions %v, Java read %d %v", i, file, len(got), head(got), len(positions), head(positions))
				}
				raw := make([]byte, blob.Length)
				if _, err := f.ReadAt(raw, blob.Offset); err != nil {
					t.Fatal(err)
				}
				if got := buckets(t, payload(raw)); !slices.Equal(got, jb.Buckets) {
					t.Errorf("blob %d for %s: buckets\n got %+v\nwant %+v", i, file, got, jb.Buckets)
				}
			}
			if want.DeleteFiles != nil && len(dvs) != countDVs(blobs) {
				t.Errorf("%d delete files for %d vectors", len(dvs), countDVs(blobs))
			}
		})
	}
}

func sameFooterEntry(a, b javaBlob) bool {
	return a.Type == b.Type && slices.Equal(a.Fields, b.Fields) && a.SnapshotID == b.SnapshotID &&
		a.SequenceNumber == b.SequenceNumber && a.Offset == b.Offset && a.Length == b.Length &&
		(a.CompressionCodec == nil) == (b.CompressionCodec == nil) &&
		(a.CompressionCodec == nil || *a.CompressionCodec == *b.CompressionCodec) &&
		maps.Equal(a.Properties, b.Properties)
}

func countDVs(blobs []puffin.BlobMetadata) int {
	n := 0
	for _, b := range blobs {
		if b.Type == puffin.BlobTypeDeletionVector {
			n++
		}
	}
	return n
}

// TestPuffinFixtures reads the Puffin files of other implementations'
// repositories, where present.
func TestPuffinFixtures(t *testing.T) {
	names := fixtureFiles(t, "dv/puffin")
	if names == nil {
		t.Skip("no fixtures; TestPuffinVectors checks the project's own")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			want, ok := puffinFiles[name]
			if !ok {
				t.Fatalf("fixture %s is not covered by this test: add its blobs", name)
			}
			f, err := os.Open(filepath.Join(fixtureRoot, "dv/puffin", name))
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
