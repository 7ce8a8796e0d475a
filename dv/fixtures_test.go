package dv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// testdataDir holds the vectors and Puffin files the project wrote with
// Iceberg Java (interop/generate_dv_testdata.sh), and vectors.json: what
// Java read back from them. Every checkout has them.
const testdataDir = "../testdata/dv"

// fixtureRoot is where CI and the project's own machines keep files taken
// from other implementations' repositories: the repository's sibling
// directory shared/, seen from this package directory. A clone has no such
// directory; its tests run on testdataDir alone.
const fixtureRoot = "../../shared/fixtures"

// javaManifest is vectors.json.
type javaManifest struct {
	WrittenBy string       `json:"written_by"`
	Vectors   []javaVector `json:"vectors"`
	Puffin    []javaPuffin `json:"puffin"`
}

// javaVector is a deletion-vector-v1 blob file and what Java read from it.
type javaVector struct {
	File        string       `json:"file"`
	Size        int64        `json:"size"`
	Cardinality int64        `json:"cardinality"`
	Positions   []javaRun    `json:"positions"`
	Buckets     []javaBucket `json:"buckets"`
}

// javaRun is from, from+step, … below to.
type javaRun [3]uint64

// javaBucket is one 32-bit bitmap of a vector as it is serialized (Java
// writes every key up to the highest, empty ones too) and the kinds of its
// containers, as Java's RoaringBitmap deserialized them.
type javaBucket struct {
	Key         uint32 `json:"key"`
	Cardinality uint64 `json:"cardinality"`
	Array       int    `json:"array"`
	Bitmap      int    `json:"bitmap"`
	Run         int    `json:"run"`
}

type javaPuffin struct {
	File        string            `json:"file"`
	Size        int64             `json:"size"`
	DeleteFiles []javaDeleteFile  `json:"delete_files"`
	Properties  map[string]string `json:"properties"`
	Blobs       []javaBlob        `json:"blobs"`
}

// javaDeleteFile is what BaseDVFileWriter reported for a vector: the fields
// a manifest entry records and the reader goes by.
type javaDeleteFile struct {
	ReferencedDataFile string `json:"referenced_data_file"`
	Format             string `json:"format"`
	FileSizeInBytes    int64  `json:"file_size_in_bytes"`
	ContentOffset      int64  `json:"content_offset"`
	ContentSizeInBytes int64  `json:"content_size_in_bytes"`
	RecordCount        int64  `json:"record_count"`
}

// javaBlob is a footer entry as Java's PuffinReader read it; a vector's
// positions and buckets, or another blob's (decompressed) data.
type javaBlob struct {
	Type             string            `json:"type"`
	Fields           []int32           `json:"fields"`
	SnapshotID       int64             `json:"snapshot_id"`
	SequenceNumber   int64             `json:"sequence_number"`
	Offset           int64             `json:"offset"`
	Length           int64             `json:"length"`
	CompressionCodec *string           `json:"compression_codec"`
	Properties       map[string]string `json:"properties"`
	Cardinality      int64             `json:"cardinality"`
	Positions        []javaRun         `json:"positions"`
	Buckets          []javaBucket      `json:"buckets"`
	Data             string            `json:"data"`
}

// readManifest reads vectors.json, refusing fields this test does not know
// so that a regenerated manifest cannot carry a fact nobody checks.
func readManifest(tb testing.TB) javaManifest {
	tb.Helper()
	f, err := os.Open(filepath.Join(testdataDir, "vectors.json"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var m javaManifest
	if err := dec.Decode(&m); err != nil {
		tb.Fatalf("%s: %v", f.Name(), err)
	}
	if len(m.Vectors) == 0 || len(m.Puffin) == 0 {
		tb.Fatalf("%s lists no vectors or no Puffin files", f.Name())
	}
	return m
}

// vector returns the manifest's entry for file and its bytes.
func vector(tb testing.TB, file string) (javaVector, []byte) {
	tb.Helper()
	for _, v := range readManifest(tb).Vectors {
		if v.File == file {
			return v, readTestdata(tb, file)
		}
	}
	tb.Fatalf("%s is not in %s/vectors.json", file, testdataDir)
	return javaVector{}, nil
}

func readTestdata(tb testing.TB, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(testdataDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// expand lists the positions of runs.
func expand(runs []javaRun) []uint64 {
	var p []uint64
	for _, r := range runs {
		for v := r[0]; v < r[1]; v += r[2] {
			p = append(p, v)
		}
	}
	return p
}

// fixtureDir returns fixtures/<sub>, or "" when it is missing and CI is not
// set: the fixtures add other implementations' files to the project's own
// vectors. Under CI=true a missing directory fails the test, as a decoder
// test that silently lost its golden vectors proves less than it claims.
func fixtureDir(tb testing.TB, sub string) string {
	tb.Helper()
	dir := filepath.Join(fixtureRoot, sub)
	if _, err := os.Stat(dir); err != nil {
		abs, _ := filepath.Abs(dir)
		if os.Getenv("CI") == "true" {
			tb.Fatalf("fixtures %s missing: CI=true requires the shared fixtures beside the repository (../shared/fixtures): %v", abs, err)
		}
		tb.Logf("fixtures %s not present: only %s is checked (CI=true requires them)", abs, testdataDir)
		return ""
	}
	return dir
}

// fixtureFiles returns the names of the regular files in fixtures/<sub>,
// none when fixtureDir finds no directory.
func fixtureFiles(tb testing.TB, sub string) []string {
	tb.Helper()
	dir := fixtureDir(tb, sub)
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
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
		tb.Fatalf("no fixture files in %s", dir)
	}
	return names
}

// readFixture returns the bytes of fixtures/<sub>/<name>.
func readFixture(tb testing.TB, sub, name string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureRoot, sub, name))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
