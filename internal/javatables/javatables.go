// Package javatables gives tests the tables Iceberg Java wrote, stored under
// testdata/java/ (issue #13; interop/generate_testdata.sh writes them). A
// stored table carries the placeholder location [Placeholder]; [Load]
// copies it into a test's temporary directory with that location replaced
// ([Relocate]), so iceberg-go opens the copy like any local table, and
// returns the events Spark's reads imply with it.
package javatables

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Expected is a table's expected.json: how it was made and, for every
// snapshot of main's ancestry (oldest first), the events and live rows
// Spark's own reads imply.
type Expected struct {
	Table       string          `json:"table"`
	Quirk       string          `json:"quirk"`
	WrittenBy   string          `json:"written_by"`
	Placeholder string          `json:"placeholder"`
	Metadata    string          `json:"metadata"` // relative to the table's directory
	Steps       json.RawMessage `json:"steps"`
	Snapshots   []Snapshot      `json:"snapshots"`
}

// Snapshot is one snapshot of main's ancestry.
type Snapshot struct {
	SnapshotID     int64  `json:"snapshot_id"`
	ParentID       *int64 `json:"parent_id"`
	SequenceNumber int64  `json:"sequence_number"`
	Operation      string `json:"operation"`
	Step           string `json:"step"`
	// Lineage is false for a snapshot whose rows Spark reads without
	// row ids (committed before an upgrade to v3).
	Lineage   bool     `json:"lineage"`
	LiveCount int      `json:"live_count"`
	Notes     []string `json:"notes"`
	// Events are sorted by phase (d, u, c), then row id.
	Events []Event `json:"events"`
	// Live are the snapshot's rows as Spark reads them, by row id (empty
	// without lineage).
	Live []LiveRow `json:"live"`
	// Anomalies are reads of Spark's that no event stream can explain.
	Anomalies []string `json:"anomalies"`
	Facts     []string `json:"facts"`
}

// Event is one expected event. Values are JSON values (numbers as
// json.Number).
type Event struct {
	Op     string         `json:"op"`
	RowID  int64          `json:"row_id"`
	Before map[string]any `json:"before"`
	After  map[string]any `json:"after"`
}

// LiveRow is one live row with its effective lineage.
type LiveRow struct {
	RowID  int64          `json:"row_id"`
	LUSN   int64          `json:"lusn"`
	Values map[string]any `json:"values"`
}

// Table is a relocated copy of a stored table.
type Table struct {
	Name string
	// Dir is the copy's directory; Location its table location (file:Dir).
	Dir, Location string
	// MetadataPath is the local path of the copy's metadata.json.
	MetadataPath string
	Expected     Expected
}

// Root returns testdata/java, found from the working directory upwards
// (the directory holding go.mod).
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "java"), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("testdata/java: no go.mod above the working directory")
		}
		dir = up
	}
}

// Names lists the stored tables, sorted.
func Names() ([]string, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(root, e.Name(), "expected.json")); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadExpected reads a stored table's expected.json.
func ReadExpected(name string) (Expected, error) {
	root, err := Root()
	if err != nil {
		return Expected{}, err
	}
	raw, err := os.ReadFile(filepath.Join(root, name, "expected.json"))
	if err != nil {
		return Expected{}, err
	}
	var exp Expected
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&exp); err != nil {
		return Expected{}, fmt.Errorf("%s/expected.json: %w", name, err)
	}
	if exp.Placeholder != Placeholder {
		return Expected{}, fmt.Errorf("%s/expected.json: placeholder %q, want %q", name, exp.Placeholder, Placeholder)
	}
	return exp, nil
}

// Load copies the stored table name into a temporary directory of tb with
// its location rewritten there.
func Load(tb testing.TB, name string) *Table {
	tb.Helper()
	exp, err := ReadExpected(name)
	if err != nil {
		tb.Fatal(err)
	}
	root, err := Root()
	if err != nil {
		tb.Fatal(err)
	}
	src := filepath.Join(root, name)
	dir := filepath.Join(tb.TempDir(), name)
	t := &Table{Name: name, Dir: dir, Location: "file:" + filepath.ToSlash(dir), Expected: exp}
	res, err := Relocate(context.Background(), Relocation{
		Metadata: filepath.Join(src, filepath.FromSlash(exp.Metadata)),
		SrcDir:   src, From: Placeholder, To: t.Location, OutDir: dir,
	})
	if err != nil {
		tb.Fatal(err)
	}
	t.MetadataPath = filepath.Join(dir, filepath.FromSlash(res.Metadata))
	return t
}
