package source_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// Tests of corrupt or hostile metadata: numbers a manifest records about
// its files must not size allocations before they are checked, and paths
// must not lead outside the table.

// maxAlloc bounds what computing a commit of a 5-row table may allocate
// when its metadata lies: a lie trusted costs gigabytes.
const maxAlloc = 256 << 20

// appended is a table with one snapshot appending one data file of 5 rows.
func appended(t *testing.T) *fixture {
	f := newFixture(t, 3, nil, nil)
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, orders(1, 5))
	})
	return f
}

// withVector is appended plus a merge-on-read delete of one row.
func withVector(t *testing.T) *fixture {
	f := appended(t)
	f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, eq("order_id", 2))
	})
	return f
}

// rewrite edits the entries the head snapshot wrote that edit chooses, and
// returns the path of the last file edited.
func (f *fixture) rewrite(content iceberg.ManifestEntryContent, edit func(*scenario.FileFields)) string {
	f.t.Helper()
	var path string
	err := scenario.RewriteEntries(f.ctx, f.tbl, *f.tbl.CurrentSnapshot(), func(df iceberg.DataFile, ff *scenario.FileFields) {
		if df.ContentType() == content {
			path = df.FilePath()
			edit(ff)
		}
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if path == "" {
		f.t.Fatalf("head snapshot wrote no entry of content %v", content)
	}
	return path
}

// run computes the events of every snapshot of src (or, initial, reads the
// head's rows) and returns the bytes allocated and the first error.
func run(t *testing.T, src *source.Table, initial bool) (uint64, error) {
	t.Helper()
	ctx := context.Background()
	snaps, err := src.Snapshots(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err = func() error {
		if initial {
			_, err := src.InitialRead(ctx, snaps[len(snaps)-1])
			return err
		}
		for _, si := range snaps {
			c, err := src.Commit(ctx, si)
			if err != nil {
				return err
			}
			if err := c.EachBatch(ctx, 0, func([]cdc.Event) error { return nil }); err != nil {
				return err
			}
		}
		return nil
	}()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, err
}

// wantRefused checks that err is an error whose message holds every want,
// and that it came without allocating gigabytes.
func wantRefused(t *testing.T, err error, alloc uint64, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if alloc > maxAlloc {
		t.Errorf("allocated %d MiB before failing, want under %d MiB", alloc>>20, maxAlloc>>20)
	}
}

func TestHostileRecordCount(t *testing.T) {
	for _, n := range []int64{1 << 40, 1 << 50} {
		for _, initial := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d initial=%v", n, initial), func(t *testing.T) {
				f := appended(t)
				data := f.rewrite(iceberg.EntryContentData, func(ff *scenario.FileFields) { ff.RecordCount = n })
				alloc, err := run(t, f.open(), initial)
				wantRefused(t, err, alloc, data, "record_count "+fmt.Sprint(n))
			})
		}
	}
	// With next-row-id raised as far, only the file's footer tells the lie.
	t.Run("checked against the footer", func(t *testing.T) {
		f := appended(t)
		data := f.rewrite(iceberg.EntryContentData, func(ff *scenario.FileFields) { ff.RecordCount = 1 << 40 })
		meta := f.hostileMetadata(func(m map[string]any) {
			m["next-row-id"] = json.Number(fmt.Sprint(int64(1) << 62))
			for _, s := range m["snapshots"].([]any) {
				s.(map[string]any)["added-rows"] = json.Number(fmt.Sprint(int64(1) << 62))
			}
		})
		for _, initial := range []bool{false, true} {
			alloc, err := run(t, f.openMetadata(meta, nil), initial)
			wantRefused(t, err, alloc, "data file "+data+": manifest record_count 1099511627776 disagrees with the file's 5 rows")
		}
	})
	// One row fewer than the file holds is no memory risk, but reading
	// 4 rows of 5 would be wrong.
	t.Run("one off", func(t *testing.T) {
		f := appended(t)
		data := f.rewrite(iceberg.EntryContentData, func(ff *scenario.FileFields) { ff.RecordCount = 4 })
		alloc, err := run(t, f.open(), false)
		wantRefused(t, err, alloc, "data file "+data+": manifest record_count 4 disagrees with the file's 5 rows")
	})
	// A removed file's positions are enumerated to find its rows.
	t.Run("removed file", func(t *testing.T) {
		f := appended(t)
		f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			return scenario.Append(ctx, tb, orders(6, 8))
		})
		f.do("drop the first file", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			return scenario.DeleteCoW(ctx, tb, in("order_id", 1, 2, 3, 4, 5))
		})
		meta := f.hostileMetadata(func(m map[string]any) { m["next-row-id"] = json.Number(fmt.Sprint(int64(1) << 62)) })
		data := f.rewrite(iceberg.EntryContentData, func(ff *scenario.FileFields) { ff.RecordCount = 1 << 50 })
		alloc, err := run(t, f.openMetadata(meta, nil), false)
		wantRefused(t, err, alloc, "data file "+data+": manifest record_count 1125899906842624 disagrees with the file's 5 rows")
	})
}

// TestHostileEqualityDeleteCount: an equality-delete file whose
// record_count disagrees with the rows read fails: a scan read short must
// not drop deletes silently.
func TestHostileEqualityDeleteCount(t *testing.T) {
	f := appended(t)
	f.do("equality delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.EqualityDelete(ctx, tb, []string{"order_id"}, []map[string]any{{"order_id": int64(2)}, {"order_id": int64(4)}})
	})
	eqFile := f.rewrite(iceberg.EntryContentEqDeletes, func(ff *scenario.FileFields) { ff.RecordCount = 3 })
	alloc, err := run(t, f.open(), false)
	wantRefused(t, err, alloc, "equality delete file "+eqFile+": manifest record_count 3 disagrees with the 2 rows read")
}

func TestHostileDeletionVector(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*scenario.FileFields)
		want string
	}{
		{"size 2^31-1", func(ff *scenario.FileFields) { ff.ContentSize = ptr(math.MaxInt32) }, "content_size_in_bytes 2147483647 for 1 positions"},
		{"offset past the end", func(ff *scenario.FileFields) { ff.ContentOffset = ptr(1 << 40) }, "content_offset 1099511627776 + content_size_in_bytes"},
		{"range past the end", func(ff *scenario.FileFields) {
			st, err := os.Stat(strings.TrimPrefix(ff.Path, "file://"))
			if err != nil {
				panic(err)
			}
			ff.ContentOffset = ptr(st.Size() - *ff.ContentSize + 1)
		}, "past the end of the file"},
		{"negative offset", func(ff *scenario.FileFields) { ff.ContentOffset = ptr(-1) }, "negative content_offset -1"},
		{"negative size", func(ff *scenario.FileFields) { ff.ContentSize = ptr(-40) }, "negative content_size_in_bytes -40"},
		{"cardinality above the data file's rows", func(ff *scenario.FileFields) { ff.RecordCount = 1 << 40 }, "record_count 1099511627776 above the 5 rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withVector(t)
			puffin := f.rewrite(iceberg.EntryContentPosDeletes, tc.edit)
			alloc, err := run(t, f.open(), false)
			wantRefused(t, err, alloc, "deletion vector file "+puffin, tc.want)
		})
	}
	t.Run("initial read", func(t *testing.T) {
		f := withVector(t)
		puffin := f.rewrite(iceberg.EntryContentPosDeletes, func(ff *scenario.FileFields) { ff.ContentSize = ptr(math.MaxInt32) })
		alloc, err := run(t, f.open(), true)
		wantRefused(t, err, alloc, "deletion vector file "+puffin, "content_size_in_bytes 2147483647")
	})
}

func TestHostileFirstRowID(t *testing.T) {
	t.Run("manifest list first_row_id 2^63-7", func(t *testing.T) {
		f := appended(t)
		if err := scenario.RewriteManifestList(f.ctx, f.tbl, *f.tbl.CurrentSnapshot(), math.MaxInt64-6); err != nil {
			t.Fatal(err)
		}
		for _, initial := range []bool{false, true} {
			alloc, err := run(t, f.open(), initial)
			wantRefused(t, err, alloc, "data file ", "first_row_id 9223372036854775801 + record_count 5 passes the table's next-row-id 5")
		}
	})
	for _, tc := range []struct {
		name string
		id   int64
		want string
	}{
		{"overflow", math.MaxInt64 - 2, "first_row_id 9223372036854775805 + record_count 5 overflows a row id"},
		{"negative", -5, "negative first_row_id -5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := appended(t)
			data := f.rewrite(iceberg.EntryContentData, func(ff *scenario.FileFields) { ff.FirstRowID = &tc.id })
			for _, initial := range []bool{false, true} {
				alloc, err := run(t, f.open(), initial)
				wantRefused(t, err, alloc, "data file "+data, tc.want)
			}
		})
	}
}

// secret is a file outside every table, with content that must never
// appear in an error, as text or as hex.
func secret(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "passwd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(secretContent), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const secretContent = "root:x:0:0:SECRET-CONTENT:/root:/bin/bash\n"

func wantNoContent(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	for _, form := range []string{"SECRET", "root:x", fmt.Sprintf("%x", secretContent[:4]), fmt.Sprintf("% x", secretContent[:4]), fmt.Sprintf("%X", secretContent[:4])} {
		if strings.Contains(msg, form) {
			t.Errorf("error shows the file's content (%q): %s", form, msg)
		}
	}
}

// tableDir is the local directory of the fixture's table.
func (f *fixture) tableDir() string {
	return strings.TrimPrefix(f.tbl.Metadata().Location(), "file://")
}

// hostileMetadata writes a copy of the table's current metadata file,
// changed by edit, next to it and returns its path.
func (f *fixture) hostileMetadata(edit func(map[string]any)) string {
	f.t.Helper()
	cur := strings.TrimPrefix(f.tbl.MetadataLocation(), "file://")
	b, err := os.ReadFile(cur)
	if err != nil {
		f.t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		f.t.Fatal(err)
	}
	edit(m)
	out, err := json.Marshal(m)
	if err != nil {
		f.t.Fatal(err)
	}
	p := filepath.Join(filepath.Dir(cur), "99999-hostile.metadata.json")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// withManifestList points the head snapshot at another manifest list.
func withManifestList(list string) func(map[string]any) {
	return func(m map[string]any) {
		head := m["current-snapshot-id"]
		for _, s := range m["snapshots"].([]any) {
			if s := s.(map[string]any); s["snapshot-id"] == head {
				s["manifest-list"] = list
			}
		}
	}
}

func (f *fixture) openMetadata(path string, allowed []string) *source.Table {
	f.t.Helper()
	src, err := source.Open(f.ctx, source.Options{MetadataPath: path, AllowedLocations: allowed})
	if err != nil {
		f.t.Fatal(err)
	}
	return src
}

func TestManifestListOutsideTable(t *testing.T) {
	f := appended(t)
	outside := secret(t, t.TempDir())
	sibling := secret(t, f.tableDir()+"2")
	rel, err := filepath.Rel(f.tableDir(), outside)
	if err != nil {
		t.Fatal(err)
	}
	snapID := fmt.Sprint(f.tbl.CurrentSnapshot().SnapshotID)
	for _, list := range []string{
		"file://" + outside,
		"file:" + outside,
		outside,
		f.tbl.Metadata().Location() + "/" + filepath.ToSlash(rel), // …/orders/../../…/passwd
		f.tbl.Metadata().Location() + "/metadata/../../../" + filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(f.tableDir())), filepath.Base(f.tableDir())+"2", "passwd")),
		"file://" + sibling, // …/orders2 is not inside …/orders
	} {
		t.Run(list, func(t *testing.T) {
			meta := f.hostileMetadata(withManifestList(list))
			_, err := run(t, f.openMetadata(meta, nil), false)
			wantRefused(t, err, 0, "manifest list "+list+" of snapshot "+snapID+": outside the allowed locations (table location "+f.tbl.Metadata().Location()+")",
				"add it to allowed_locations to read it")
			wantNoContent(t, err)
		})
	}
	t.Run("allowed, not a manifest list", func(t *testing.T) {
		meta := f.hostileMetadata(withManifestList("file://" + outside))
		_, err := run(t, f.openMetadata(meta, []string{f.tbl.Metadata().Location(), "file:" + filepath.Dir(outside)}), false)
		wantRefused(t, err, 0, "manifest list file://"+outside+" of snapshot "+snapID+": not a valid manifest list")
		wantNoContent(t, err)
	})
}

// TestGarbageManifestListInsideTable: a manifest list inside the table that
// is no Avro file is reported as such, without its bytes.
func TestGarbageManifestListInsideTable(t *testing.T) {
	f := appended(t)
	list := f.tbl.CurrentSnapshot().ManifestList
	if err := os.WriteFile(strings.TrimPrefix(list, "file://"), []byte(secretContent), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, initial := range []bool{false, true} {
		_, err := run(t, f.open(), initial)
		wantRefused(t, err, 0, "manifest list "+list, "not a valid manifest list")
		wantNoContent(t, err)
	}
}

// TestFilesOutsideTable: a manifest naming a data file or a deletion
// vector outside the table is refused, although the copies there are
// valid files.
func TestFilesOutsideTable(t *testing.T) {
	copyOut := func(t *testing.T, local string) string {
		b, err := os.ReadFile(local)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), filepath.Base(local))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return "file://" + p
	}
	t.Run("data file", func(t *testing.T) {
		f := appended(t)
		var moved string
		f.rewrite(iceberg.EntryContentData, func(ff *scenario.FileFields) {
			moved = copyOut(t, strings.TrimPrefix(ff.Path, "file://"))
			ff.Path = moved
		})
		for _, initial := range []bool{false, true} {
			_, err := run(t, f.open(), initial)
			wantRefused(t, err, 0, "data file "+moved+": outside the allowed locations")
		}
	})
	t.Run("deletion vector", func(t *testing.T) {
		f := withVector(t)
		var moved string
		f.rewrite(iceberg.EntryContentPosDeletes, func(ff *scenario.FileFields) {
			moved = copyOut(t, strings.TrimPrefix(ff.Path, "file://"))
			ff.Path = moved
		})
		_, err := run(t, f.open(), false)
		wantRefused(t, err, 0, "deletion vector file "+moved+": outside the allowed locations")
	})
	t.Run("equality delete file", func(t *testing.T) {
		f := appended(t)
		f.do("equality delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
			return scenario.EqualityDelete(ctx, tb, []string{"order_id"}, []map[string]any{{"order_id": int64(2)}})
		})
		var moved string
		f.rewrite(iceberg.EntryContentEqDeletes, func(ff *scenario.FileFields) {
			moved = copyOut(t, strings.TrimPrefix(ff.Path, "file://"))
			ff.Path = moved
		})
		_, err := run(t, f.open(), false)
		wantRefused(t, err, 0, "equality delete file "+moved+": outside the allowed locations")
	})
}

func ptr(v int64) *int64 { return &v }
