package source_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/badinput"
	"github.com/icecdc/icecdc/internal/scenario"
)

// ordersKeyedBy is the orders schema with identifier fields ids (field ids
// of OrdersSchema: 1 order_id, 2 customer, 3 status, 4 amount).
func ordersKeyedBy(ids ...int) *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, ids, ordersSchema().Fields()...)
}

// parquetInOrder returns the local paths of the Parquet files under dir
// (data and equality-delete files) in the order they were written.
func parquetInOrder(t *testing.T, dir string) []string {
	t.Helper()
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			found = append(found, p)
		}
		return nil
	})
	slices.SortFunc(found, func(a, b string) int {
		ia, _ := os.Stat(a)
		ib, _ := os.Stat(b)
		return ia.ModTime().Compare(ib.ModTime())
	})
	return found
}

// corruptReplaying zeroes the data of files (corruptData) and reports the
// error of computing snapshot snap's changes again from a freshly opened
// source.
func (f *fixture) corruptReplaying(snap cdc.SnapshotInfo, files ...string) error {
	f.t.Helper()
	corruptData(f.t, files...)
	_, err := f.open().Commit(f.ctx, snap)
	return err
}

// corruptData overwrites the row groups of Parquet files with zeros,
// keeping their size, magic and footer: a file skipped by its bounds has
// only its footer read (its statistics confirm the manifest's bounds), so
// it is not affected; a file whose rows are read fails.
func corruptData(t *testing.T, files ...string) {
	t.Helper()
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		footer := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		clear(b[4 : len(b)-8-footer])
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEqualityUpsertPrunesMultiFieldKey: an upsert keyed on (customer,
// order_id) reads only the data file that can hold one of its key tuples.
// The other two files each overlap the keys' range on every field, but no
// single key tuple falls inside one file's bounds on both fields at once.
func TestEqualityUpsertPrunesMultiFieldKey(t *testing.T) {
	f := newFixture(t, 3, nil, ordersKeyedBy(2, 1))
	appendRows := func(rows ...map[string]any) {
		f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, tb, rows)
		})
	}
	// customer a..c, order_id 1..5: holds the key (a, 2)
	appendRows(order(1, "a", "new", 1), order(2, "a", "new", 2), order(3, "b", "new", 3), order(5, "c", "new", 5))
	// customer x..y, order_id 1..5: order_id range overlaps, customer range overlaps y
	appendRows(order(1, "x", "new", 6), order(5, "y", "new", 7))
	// customer a..a, order_id 100..105: customer overlaps a, order_id overlaps 104
	appendRows(order(100, "a", "new", 8), order(105, "a", "new", 9))
	// (a, 2) replaces a row; (y, 104) is new; (b, 3) is deleted
	f.do("upsert", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.EqualityUpsert(ctx, tb, []string{"customer", "order_id"}, []map[string]any{
			order(2, "a", "paid", 20), order(104, "y", "new", 21),
		})
	})
	f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.EqualityDelete(ctx, tb, []string{"customer", "order_id"}, []map[string]any{
			{"customer": "b", "order_id": int64(3)},
		})
	})
	steps := f.check()
	wantOps(t, steps, "d:0 u:0 c:4", "d:0 u:0 c:2", "d:0 u:0 c:2", "d:0 u:1 c:1", "d:1 u:0 c:0")
	if u := steps[3].Events[0]; u.Source.Paired != "equality-delete" || u.Source.PairedRowID != 1 {
		t.Fatalf("upsert of (a, 2): %+v, want an update paired with row 1", u.Source)
	}
	files := parquetInOrder(t, f.env.Dir)
	if len(files) < 3 {
		t.Fatalf("Parquet files: %v", files)
	}
	files = files[:3] // the appended data files
	if err := f.corruptReplaying(steps[3].Snapshot, files[1], files[2]); err != nil {
		t.Fatalf("upsert: a data file outside every key tuple's bounds was read: %v", err)
	}
	if err := f.corruptReplaying(steps[4].Snapshot); err != nil {
		t.Fatalf("delete of (b, 3): a data file outside every key tuple's bounds was read: %v", err)
	}
	// The file that holds the keys is read: corrupting it fails the commit.
	if err := f.corruptReplaying(steps[3].Snapshot, files[0]); err == nil || !strings.Contains(err.Error(), filepath.Base(files[0])) {
		t.Fatalf("upsert with its candidate file corrupt: %v, want an error naming %s", err, files[0])
	}
}

// TestEqualityDeletePrunesPartitionAndBounds: on a table partitioned by
// status with the key (status, order_id), a delete of ("new", 2) reads
// neither the "paid" file (another partition, same ids) nor the "new" file
// whose order_id bounds exclude 2.
func TestEqualityDeletePrunesPartitionAndBounds(t *testing.T) {
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "status", Transform: iceberg.IdentityTransform{}})
	f := newFixture(t, 3, &spec, ordersKeyedBy(3, 1))
	appendRows := func(rows ...map[string]any) {
		f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, tb, rows)
		})
	}
	appendRows(order(1, "a", "new", 1), order(2, "b", "new", 2), order(3, "c", "new", 3))
	appendRows(order(1, "d", "paid", 4), order(2, "e", "paid", 5), order(3, "f", "paid", 6))
	appendRows(order(100, "g", "new", 7), order(101, "h", "new", 8))
	f.do("upsert", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.EqualityUpsert(ctx, tb, []string{"status", "order_id"}, []map[string]any{
			order(2, "b2", "new", 20), order(7, "i", "new", 21),
		})
	})
	steps := f.check()
	wantOps(t, steps, "d:0 u:0 c:3", "d:0 u:0 c:3", "d:0 u:0 c:2", "d:0 u:1 c:1")
	files := parquetInOrder(t, f.env.Dir)
	if len(files) < 3 {
		t.Fatalf("Parquet files: %v", files)
	}
	files = files[:3] // the appended data files
	if err := f.corruptReplaying(steps[3].Snapshot, files[1], files[2]); err != nil {
		t.Fatalf("a data file of another partition or outside the key bounds was read: %v", err)
	}
	if err := f.corruptReplaying(steps[3].Snapshot, files[0]); err == nil {
		t.Fatalf("upsert with its candidate file corrupt: no error")
	}
}

// TestEqualityDeleteChecksPruningBounds: manifest bounds are metadata; a
// lower bound above a deleted key would skip the data file and lose the
// delete's event without a trace. A file is skipped only when its own
// Parquet statistics rule it out too, and a bound an exact statistic
// contradicts stops the commit naming the file and the column. (Found by
// the bad-input suite: bounds of the compacted file above or below the
// key of a later equality delete lost its event with exit 0.)
func TestEqualityDeleteChecksPruningBounds(t *testing.T) {
	for _, c := range []struct {
		name, key string
		value     int64
	}{
		{"lower bound above the key", "lower_bounds", 3},
		{"upper bound below the key", "upper_bounds", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, 3, nil, nil)
			f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Append(ctx, tb, orders(1, 5))
			})
			f.do("equality delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.EqualityDelete(ctx, tb, []string{"order_id"}, []map[string]any{{"order_id": int64(2)}})
			})
			steps := f.check()
			wantOps(t, steps, "d:0 u:0 c:5", "d:1 u:0 c:0")
			data := firstDataFile(t, f.env.Dir)
			setManifestBound(t, f.env.Dir, data, c.key, 1, c.value)
			_, err := f.open().Commit(f.ctx, steps[1].Snapshot)
			if err == nil || !strings.Contains(err.Error(), filepath.Base(data)) || !strings.Contains(err.Error(), c.key+" of column order_id") {
				t.Fatalf("equality delete with a data file's %s of order_id at %d: %v, want an error naming the file and the bound", c.key, c.value, err)
			}
		})
	}
}

// setManifestBound sets, in the manifest entry of data file data (and in
// the manifest lists, the manifest's new length), the bound key of field
// id to v, little-endian as Iceberg stores a long.
func setManifestBound(t *testing.T, dir, data, key string, id int, v int64) {
	t.Helper()
	var manifests, lists []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		switch {
		case err != nil || !strings.HasSuffix(p, ".avro"):
		case strings.HasPrefix(filepath.Base(p), "snap-"):
			lists = append(lists, p)
		default:
			manifests = append(manifests, p)
		}
		return nil
	})
	edited := ""
	for _, m := range manifests {
		f, err := badinput.ReadAvro(m)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range f.Records {
			df := r["data_file"].(map[string]any)
			if badinput.LocalPath(df["file_path"].(string)) != data {
				continue
			}
			for _, kv := range df[key].([]any) {
				if kv := kv.(map[string]any); kv["key"] == int32(id) {
					kv["value"], found = binary.LittleEndian.AppendUint64(nil, uint64(v)), true
				}
			}
		}
		if found {
			if err := f.Write(m); err != nil {
				t.Fatal(err)
			}
			edited = m
		}
	}
	if edited == "" {
		t.Fatalf("no %s of field %d for %s in %v", key, id, data, manifests)
	}
	st, err := os.Stat(edited)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		f, err := badinput.ReadAvro(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range f.Records {
			if badinput.LocalPath(r["manifest_path"].(string)) == edited {
				r["manifest_length"] = st.Size()
			}
		}
		if err := f.Write(l); err != nil {
			t.Fatal(err)
		}
	}
}
