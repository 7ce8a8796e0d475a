package badinput

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
)

// editAvro rewrites the Avro file at path in place (restored after the
// case): records decoded and re-encoded with the file's own writer schema,
// metadata and codec, fn applied in between.
func (w *work) editAvro(path string, fn func(f *AvroFile) error) error {
	f, err := ReadAvro(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		return err
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	w.restores = append(w.restores, func() error { return os.WriteFile(path, orig, 0o644) })
	return f.Write(path)
}

// fixLengths keeps the manifest lists consistent with a rewritten
// manifest: every list that references it gets its new manifest_length,
// so that the mutation under test is the only inconsistency.
func (w *work) fixLengths(manifest string) error {
	st, err := os.Stat(manifest)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, sn := range w.s.base.Snapshots {
		if seen[sn.ManifestList] {
			continue
		}
		seen[sn.ManifestList] = true
		f, err := ReadAvro(sn.ManifestList)
		if err != nil {
			return err
		}
		refs := false
		for _, r := range f.Records {
			if p, _ := r["manifest_path"].(string); LocalPath(p) == manifest {
				refs = true
			}
		}
		if !refs {
			continue
		}
		err = w.editAvro(sn.ManifestList, func(f *AvroFile) error {
			for _, r := range f.Records {
				if p, _ := r["manifest_path"].(string); LocalPath(p) == manifest {
					r["manifest_length"] = st.Size()
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// setNum sets a numeric field keeping the Go type the decoder gave it
// (int32 for Avro int), int64 when it was null.
func setNum(m map[string]any, key string, v int64) {
	if _, ok := m[key].(int32); ok && v >= math.MinInt32 && v <= math.MaxInt32 {
		m[key] = int32(v)
		return
	}
	m[key] = v
}

// entryTarget is one manifest entry of the base table to mutate.
type entryTarget struct {
	label   string
	snap    int // index into Story
	content int // 0 data, 1 deletion vector, 2 equality deletes
}

// editEntry applies fn to the added entry of target t (record and its
// data_file) in the manifest that holds it.
func (w *work) editEntry(t entryTarget, fn func(rec, df map[string]any) error) error {
	m, e, ok := w.s.base.Find(t.snap, t.content)
	if !ok {
		return fmt.Errorf("no %s", t.label)
	}
	w.name(m.Path, baseName(m.Path), baseName(e.Path))
	if e.Referenced != "" {
		w.name(baseName(e.Referenced))
	}
	w.nameSnaps(t.snap)
	found := false
	err := w.editAvro(m.Path, func(f *AvroFile) error {
		for _, rec := range f.Records {
			df, _ := rec["data_file"].(map[string]any)
			if p, _ := df["file_path"].(string); LocalPath(p) == e.Path && asInt(rec["status"]) == 1 {
				found = true
				if err := fn(rec, df); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("entry %s not found in %s", e.Path, m.Path)
	}
	return w.fixLengths(m.Path)
}

// editListRecord applies fn to the record of manifest list k that
// describes the manifest pick chooses.
func (w *work) editListRecord(k int, pick func(b *Base) string, fn func(rec map[string]any) error) error {
	list := w.s.base.Snapshots[k].ManifestList
	target := pick(w.s.base)
	w.name(list, baseName(list), baseName(target))
	w.nameSnaps(k)
	found := false
	err := w.editAvro(list, func(f *AvroFile) error {
		for _, r := range f.Records {
			if p, _ := r["manifest_path"].(string); LocalPath(p) == target {
				found = true
				if err := fn(r); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err == nil && !found {
		err = fmt.Errorf("manifest %s not in list %s", target, list)
	}
	return err
}

func manifestOf(k, content int) func(b *Base) string {
	return func(b *Base) string {
		m, _, _ := b.Find(k, content)
		return m.Path
	}
}

// fieldEdit is one mutation of one Avro record field.
type fieldEdit struct {
	label string
	apply func(w *work, m map[string]any) error
}

func num(key string, v int64, label string) fieldEdit {
	return fieldEdit{fmt.Sprintf("%s %s", key, label), func(_ *work, m map[string]any) error {
		setNum(m, key, v)
		return nil
	}}
}

func null(key string) fieldEdit {
	return fieldEdit{key + " null", func(_ *work, m map[string]any) error {
		m[key] = nil
		return nil
	}}
}

func str(key, v, label string) fieldEdit {
	return fieldEdit{fmt.Sprintf("%s %s", key, label), func(_ *work, m map[string]any) error {
		m[key] = v
		return nil
	}}
}

// pathEdits bend a path field out of the table.
func pathEdits(key string, sameKind func(s *slot) string) []fieldEdit {
	var out []fieldEdit
	for _, t := range outsideTargets(sameKind) {
		out = append(out, fieldEdit{key + " " + t.label, func(w *work, m map[string]any) error {
			p := t.path(w.s)
			w.name(p, baseName(p))
			m[key] = "file://" + p
			return nil
		}})
	}
	return out
}

const (
	two40  = int64(1) << 40
	two50  = int64(1) << 50
	near63 = math.MaxInt64 - 7
)

// manifestListCases mutate fields of manifest-list records.
func manifestListCases(s *slot) []tcase {
	last := len(s.base.Snapshots) - 1
	var cases []tcase
	add := func(k int, what string, pick func(*Base) string, edits []fieldEdit) {
		for _, e := range edits {
			cases = append(cases, tcase{
				name:  fmt.Sprintf("manifest-list/snapshot %d %s: %s", k+1, what, e.label),
				group: "manifest list fields",
				prep: func(w *work) error {
					return w.editListRecord(k, pick, func(r map[string]any) error { return e.apply(w, r) })
				},
			})
		}
	}
	data0 := manifestOf(0, 0)
	add(0, "data manifest", data0, append([]fieldEdit{
		num("first_row_id", near63, "2^63-7"),
		num("first_row_id", -1, "-1"),
		null("first_row_id"),
		num("first_row_id", 3, "3 (disagrees with the snapshot's first-row-id)"),
		num("sequence_number", -1, "-1"),
		num("sequence_number", 0, "0"),
		num("sequence_number", 99, "99 (above the snapshot's)"),
		num("min_sequence_number", 99, "99"),
		num("min_sequence_number", -1, "-1"),
		num("added_snapshot_id", 4242424242, "unknown id"),
		{"added_snapshot_id the head's id", func(w *work, m map[string]any) error {
			m["added_snapshot_id"] = w.s.base.Snapshots[last].ID
			return nil
		}},
		num("added_rows_count", two40, "2^40"),
		num("added_rows_count", -1, "-1"),
		num("added_rows_count", 0, "0"),
		num("existing_rows_count", two50, "2^50"),
		num("added_files_count", 0, "0"),
		num("added_files_count", -1, "-1"),
		num("content", 1, "1 (data manifest labelled deletes)"),
		num("content", 7, "7 (invalid)"),
		num("partition_spec_id", 99, "99 (unknown spec)"),
		num("manifest_length", 0, "0"),
		num("manifest_length", two40, "2^40"),
		{"manifest_path the manifest of another snapshot", func(w *work, m map[string]any) error {
			mf, _, _ := w.s.base.Find(last, 0)
			w.name(baseName(mf.Path))
			m["manifest_path"] = "file://" + mf.Path
			return nil
		}},
	}, pathEdits("manifest_path", func(s *slot) string { return s.base.Outside.Manifests[0].Path })...))
	add(last, "own data manifest", manifestOf(last, 0), []fieldEdit{
		num("first_row_id", near63, "2^63-7"),
		num("first_row_id", -1, "-1"),
		num("first_row_id", 0, "0 (overlaps the first snapshot's rows)"),
		num("sequence_number", 1, "1 (below its snapshot's)"),
	})
	add(last, "carried compacted manifest", manifestOf(3, 0), []fieldEdit{
		num("first_row_id", near63, "2^63-7"),
		num("sequence_number", 99, "99"),
		num("added_snapshot_id", 4242424242, "unknown id"),
	})
	add(1, "deletion-vector manifest", manifestOf(1, 1), []fieldEdit{
		num("content", 0, "0 (delete manifest labelled data)"),
		num("sequence_number", 0, "0 (below the data it deletes)"),
		num("added_snapshot_id", 4242424242, "unknown id"),
		num("first_row_id", 0, "0 (set on a delete manifest)"),
	})
	// The counts and summaries nothing is computed from, or should not be.
	add(0, "data manifest", data0, []fieldEdit{
		num("existing_files_count", 5, "5 (the manifest has no existing entry)"),
		num("existing_files_count", -1, "-1"),
		num("existing_files_count", math.MaxInt32, "2^31-1"),
		num("deleted_files_count", 1, "1 (the manifest has no deleted entry)"),
		num("deleted_files_count", -1, "-1"),
		num("deleted_rows_count", two50, "2^50"),
		num("deleted_rows_count", -1, "-1"),
		null("partitions"),
		{"partitions a summary of a partition field the spec does not have", func(_ *work, m map[string]any) error {
			m["partitions"] = []any{fieldSummary(false, le64(1), le64(5))}
			return nil
		}},
		{"partitions 100000 summaries", func(_ *work, m map[string]any) error {
			sums := make([]any, 100000)
			for i := range sums {
				sums[i] = fieldSummary(true, nil, nil)
			}
			m["partitions"] = sums
			return nil
		}},
		{"partitions a summary with a 1 MiB lower bound", func(_ *work, m map[string]any) error {
			m["partitions"] = []any{fieldSummary(false, bytes.Repeat([]byte{'a'}, 1<<20), nil)}
			return nil
		}},
		bytesField("key_metadata", make([]byte, 16), "16 bytes (an encrypted manifest)"),
		bytesField("key_metadata", make([]byte, 1<<20), "1 MiB"),
	})
	add(2, "deletion-vector manifest removing snapshot 2's vector", manifestWithDeleted(2, 1), []fieldEdit{
		num("deleted_files_count", 0, "0 (it removes one)"),
		num("deleted_rows_count", 0, "0"),
		num("existing_files_count", 1, "1 (it has none)"),
		num("added_files_count", 1, "1 (the removed vector counted as added)"),
	})
	add(3, "data manifest removing the compacted files", manifestWithDeleted(3, 0), []fieldEdit{
		num("deleted_files_count", 0, "0 (it removes two)"),
		num("deleted_rows_count", 0, "0"),
		num("deleted_rows_count", two40, "2^40"),
	})
	for _, kv := range [][2]string{{"sequence-number", "99"}, {"snapshot-id", "1"}, {"first-row-id", "-5"}, {"format-version", "2"}, {"parent-snapshot-id", "4242424242"}} {
		cases = append(cases, tcase{
			name:  fmt.Sprintf("manifest-list/snapshot 2 header metadata %s=%s", kv[0], kv[1]),
			group: "manifest list fields",
			prep: func(w *work) error {
				list := w.s.base.Snapshots[1].ManifestList
				w.name(list, baseName(list))
				w.name(keyNames(kv[0])...)
				return w.editAvro(list, func(f *AvroFile) error {
					f.Meta[kv[0]] = []byte(kv[1])
					return nil
				})
			},
		})
	}
	cases = append(cases, tcase{
		name: "manifest-list/snapshot 1 rewritten unchanged (control)", group: "manifest list fields", control: true,
		prep: func(w *work) error {
			return w.editListRecord(0, data0, func(map[string]any) error { return nil })
		},
	})
	return cases
}

// manifestEntryCases mutate fields of manifest entries.
func manifestEntryCases(s *slot) []tcase {
	var cases []tcase
	add := func(t entryTarget, edits []fieldEdit, onEntry bool) {
		for _, e := range edits {
			cases = append(cases, tcase{
				name:  fmt.Sprintf("manifest/%s: %s", t.label, e.label),
				group: "manifest entry fields",
				prep: func(w *work) error {
					return w.editEntry(t, func(rec, df map[string]any) error {
						if onEntry {
							return e.apply(w, rec)
						}
						return e.apply(w, df)
					})
				},
			})
		}
	}
	data0 := entryTarget{"snapshot 1 data file", 0, 0}
	dv1 := entryTarget{"snapshot 2 deletion vector", 1, 1}
	upd := entryTarget{"snapshot 3 data file storing _row_id", 2, 0}
	compacted := entryTarget{"snapshot 4 compacted data file", 3, 0}
	eq := entryTarget{"snapshot 5 equality deletes", 4, 2}
	dv6 := entryTarget{"snapshot 6 deletion vector on the compacted file", 5, 1}
	evilData := func(s *slot) string { return s.base.Outside.Manifests[0].Entries[0].Path }

	add(data0, append([]fieldEdit{
		{"file_path points into another table, with its record count and size (valid object, secret rows)", func(w *work, m map[string]any) error {
			e := w.s.base.Outside.Manifests[0].Entries[0]
			w.name(e.Path, baseName(e.Path))
			m["file_path"], m["record_count"], m["file_size_in_bytes"] = "file://"+e.Path, e.Records, e.Size
			return nil
		}},
		num("record_count", two40, "2^40"),
		num("record_count", two50, "2^50"),
		num("record_count", -1, "-1"),
		num("record_count", 0, "0"),
		num("record_count", 4, "4 (the file holds 5)"),
		num("record_count", 6, "6 (the file holds 5)"),
		num("first_row_id", near63, "2^63-7"),
		num("first_row_id", -1, "-1"),
		num("first_row_id", 3, "3 (disagrees with the manifest's)"),
		num("file_size_in_bytes", 0, "0"),
		num("file_size_in_bytes", two40, "2^40"),
		num("file_size_in_bytes", -1, "-1"),
		str("file_format", "ORC", "ORC"),
		str("file_format", "AVRO", "AVRO"),
		str("file_format", "NOT-A-FORMAT", "unknown"),
		num("content", 1, "1 (data file labelled position deletes)"),
		num("content", 2, "2 (data file labelled equality deletes)"),
		num("content", 5, "5 (invalid)"),
	}, pathEdits("file_path", evilData)...), false)
	add(data0, []fieldEdit{
		num("status", 0, "EXISTING (added by nobody)"),
		num("status", 2, "DELETED"),
		num("status", 7, "7 (invalid)"),
		num("snapshot_id", 4242424242, "unknown id"),
		num("sequence_number", 5, "5 (above its snapshot's)"),
		num("sequence_number", -1, "-1"),
		num("file_sequence_number", 5, "5 (above its snapshot's)"),
	}, true)
	add(dv1, append([]fieldEdit{
		num("content_offset", math.MaxInt32, "2^31-1"),
		{"content_offset past EOF", func(w *work, m map[string]any) error {
			m["content_offset"] = fileSizeOf(m) + 8
			return nil
		}},
		num("content_offset", -1, "-1"),
		num("content_offset", 0, "0 (the file's magic)"),
		num("content_offset", 5, "5 (one byte late)"),
		null("content_offset"),
		num("content_size_in_bytes", math.MaxInt32, "2^31-1"),
		{"content_size_in_bytes past EOF", func(w *work, m map[string]any) error {
			m["content_size_in_bytes"] = fileSizeOf(m)
			return nil
		}},
		num("content_size_in_bytes", -1, "-1"),
		num("content_size_in_bytes", 0, "0"),
		{"content_size_in_bytes one byte short", func(w *work, m map[string]any) error {
			m["content_size_in_bytes"] = m["content_size_in_bytes"].(int64) - 1
			return nil
		}},
		null("content_size_in_bytes"),
		{"referenced_data_file a data file of another snapshot", func(w *work, m map[string]any) error {
			_, e, _ := w.s.base.Find(len(w.s.base.Snapshots)-1, 0)
			w.name(baseName(e.Path))
			m["referenced_data_file"] = "file://" + e.Path
			return nil
		}},
		str("referenced_data_file", "file:///nonexistent/data.parquet", "a missing file"),
		null("referenced_data_file"),
		num("record_count", two40, "2^40 (cardinality)"),
		num("record_count", -1, "-1"),
		num("record_count", 0, "0"),
		num("record_count", 2, "2 (the vector holds 1)"),
		str("file_format", "PARQUET", "PARQUET (a vector labelled a position-delete file)"),
		num("content", 2, "2 (labelled equality deletes)"),
		num("content", 0, "0 (labelled data)"),
	}, pathEdits("file_path", evilData)...), false)
	add(dv1, []fieldEdit{
		num("sequence_number", 0, "0 (below the data it deletes)"),
		num("status", 2, "DELETED"),
		num("status", 0, "EXISTING"),
	}, true)
	add(upd, []fieldEdit{
		num("first_row_id", 0, "0 (set on a file that stores _row_id)"),
		num("record_count", two40, "2^40"),
	}, false)
	add(compacted, []fieldEdit{
		num("record_count", two40, "2^40"),
		{"lower_bounds of order_id 3 bytes (malformed)", func(w *work, m map[string]any) error {
			return setBound(m, "lower_bounds", 1, []byte{1, 2, 3})
		}},
		{"upper_bounds of order_id empty (malformed)", func(w *work, m map[string]any) error {
			return setBound(m, "upper_bounds", 1, []byte{})
		}},
	}, false)
	add(compacted, []fieldEdit{
		num("status", 2, "DELETED"),
	}, true)
	add(eq, []fieldEdit{
		{"equality_ids [99] (unknown column)", func(w *work, m map[string]any) error {
			m["equality_ids"] = []any{int32(99)}
			return nil
		}},
		{"equality_ids [] (none)", func(w *work, m map[string]any) error {
			m["equality_ids"] = []any{}
			return nil
		}},
		null("equality_ids"),
		{"equality_ids [2] (a column the file does not hold)", func(w *work, m map[string]any) error {
			m["equality_ids"] = []any{int32(2)}
			return nil
		}},
		num("record_count", two40, "2^40"),
		{"file_path the data file of snapshot 1", func(w *work, m map[string]any) error {
			_, e, _ := w.s.base.Find(0, 0)
			w.name(baseName(e.Path))
			m["file_path"] = "file://" + e.Path
			return nil
		}},
	}, false)
	add(eq, []fieldEdit{
		num("sequence_number", 3, "3 (below the data it deletes)"),
	}, true)
	add(dv6, []fieldEdit{
		{"content_offset past EOF", func(w *work, m map[string]any) error {
			m["content_offset"] = fileSizeOf(m) + 8
			return nil
		}},
		{"referenced_data_file the removed pre-compaction file", func(w *work, m map[string]any) error {
			_, e, _ := w.s.base.Find(0, 0)
			w.name(baseName(e.Path))
			m["referenced_data_file"] = "file://" + e.Path
			return nil
		}},
		num("record_count", two40, "2^40 (cardinality)"),
	}, false)
	// Metrics, split offsets, sort order, key metadata: only bounds are
	// used (to prune equality deletes); the rest must change nothing.
	add(data0, []fieldEdit{
		null("column_sizes"),
		metric("column_sizes", 1, -1, "-1 for order_id"),
		metric("column_sizes", 1, 1<<62, "2^62 for order_id"),
		metric("column_sizes", 99, 10, "for an unknown column 99"),
		null("value_counts"),
		metric("value_counts", 1, -1, "-1 for order_id"),
		metric("value_counts", 1, two40, "2^40 for order_id (the file holds 5)"),
		metric("value_counts", 1, 0, "0 for order_id"),
		null("null_value_counts"),
		metric("null_value_counts", 1, 5, "5 for order_id (every row null, a required column)"),
		metric("null_value_counts", 1, -1, "-1 for order_id"),
		metric("nan_value_counts", 4, 5, "5 for amount (every value NaN)"),
		metric("nan_value_counts", 4, -1, "-1 for amount"),
		metric("nan_value_counts", 1, 1, "1 for order_id (a long column)"),
		null("lower_bounds"),
		null("upper_bounds"),
		bound("lower_bounds", 1, le64(100), "order_id 100 (above every value)"),
		bound("upper_bounds", 1, le64(0), "order_id 0 (below every value)"),
		{"lower_bounds and upper_bounds of order_id swapped (lower 5, upper 1)", func(_ *work, m map[string]any) error {
			if err := setBound(m, "lower_bounds", 1, le64(5)); err != nil {
				return err
			}
			return setBound(m, "upper_bounds", 1, le64(1))
		}},
		bound("lower_bounds", 99, le64(1), "of an unknown column 99"),
		bound("lower_bounds", rowIDField, le64(1000), "_row_id 1000 (above the file's)"),
		bound("upper_bounds", 2, bytes.Repeat([]byte{'z'}, 1<<20), "customer 1 MiB"),
		bound("lower_bounds", 4, []byte{1, 2, 3}, "amount 3 bytes (malformed double)"),
		null("split_offsets"),
		splits("[-1]", -1),
		splits("[2^40]", two40),
		{"split_offsets past the end of the file", func(_ *work, m map[string]any) error {
			m["split_offsets"] = []any{fileSizeOf(m) + 100}
			return nil
		}},
		splits("[4, 4, 2] (not increasing)", 4, 4, 2),
		{"split_offsets 100000 entries", func(_ *work, m map[string]any) error {
			offs := make([]any, 100000)
			for i := range offs {
				offs[i] = int64(4 + i)
			}
			m["split_offsets"] = offs
			return nil
		}},
		num("sort_order_id", 99, "99 (unknown sort order)"),
		num("sort_order_id", -1, "-1"),
		bytesField("key_metadata", make([]byte, 16), "16 bytes (an encrypted file)"),
		bytesField("key_metadata", []byte{}, "empty"),
	}, false)
	// Bounds of the file the equality delete of order 4 applies to: a
	// bound that excludes the key prunes the delete, unless it is checked.
	add(compacted, []fieldEdit{
		bound("lower_bounds", 1, le64(5), "order_id 5 (above the deleted key 4)"),
		bound("upper_bounds", 1, le64(3), "order_id 3 (below the deleted key 4)"),
		{"bounds of order_id [100, 200] (the file holds 1-5)", func(_ *work, m map[string]any) error {
			if err := setBound(m, "lower_bounds", 1, le64(100)); err != nil {
				return err
			}
			return setBound(m, "upper_bounds", 1, le64(200))
		}},
		metric("null_value_counts", 1, 4, "4 for order_id (every row null)"),
		metric("value_counts", 1, 0, "0 for order_id"),
		null("lower_bounds"),
	}, false)
	add(eq, []fieldEdit{
		{"bounds of order_id [99, 99] (the file holds 4)", func(_ *work, m map[string]any) error {
			if err := setBound(m, "lower_bounds", 1, le64(99)); err != nil {
				return err
			}
			return setBound(m, "upper_bounds", 1, le64(99))
		}},
		metric("value_counts", 1, two40, "2^40 for order_id"),
		bytesField("key_metadata", make([]byte, 16), "16 bytes"),
	}, false)
	add(dv1, []fieldEdit{
		bytesField("key_metadata", make([]byte, 16), "16 bytes"),
		splits("[4]", 4),
		num("sort_order_id", 0, "0"),
		metric("column_sizes", 1, 100, "for order_id"),
	}, false)
	for _, pv := range []struct {
		label string
		spec  string // the manifest header's partition-spec, "" unchanged
	}{
		{"partition value in a manifest of an unpartitioned spec", ""},
		{"partition value, the manifest header claiming a partition spec the table does not have", `[{"name":"order_id_bucket","transform":"bucket[4]","source-id":1,"field-id":1000}]`},
	} {
		cases = append(cases, tcase{
			name: fmt.Sprintf("manifest/%s: %s", data0.label, pv.label), group: "manifest entry fields",
			prep: func(w *work) error {
				m, e, _ := w.s.base.Find(data0.snap, data0.content)
				w.name(m.Path, baseName(m.Path), baseName(e.Path), "partition")
				w.nameSnaps(data0.snap)
				err := w.editAvro(m.Path, func(f *AvroFile) error {
					if pv.spec != "" {
						f.Meta["partition-spec"] = []byte(pv.spec)
					}
					for _, rec := range f.Records {
						rec["data_file"].(map[string]any)["partition"] = map[string]any{"order_id_bucket": int32(3)}
					}
					return f.EditSchema(func(root any) error {
						return Set(root, partitionTypePath(root), map[string]any{"type": "record", "name": "r102",
							"fields": []any{map[string]any{"name": "order_id_bucket", "type": []any{"null", "int"}, "field-id": 1000}}})
					})
				})
				if err != nil {
					return err
				}
				return w.fixLengths(m.Path)
			},
		})
	}
	for _, t := range []entryTarget{data0, dv1} {
		cases = append(cases, tcase{
			name: fmt.Sprintf("manifest/%s: manifest rewritten unchanged (control)", t.label), group: "manifest entry fields", control: true,
			prep: func(w *work) error {
				return w.editEntry(t, func(rec, df map[string]any) error { return nil })
			},
		})
	}
	return cases
}

func fileSizeOf(df map[string]any) int64 {
	n, _ := df["file_size_in_bytes"].(int64)
	return n
}

// setBound replaces the bound of field id in an Iceberg bounds map (an
// Avro array of key/value records).
func setBound(df map[string]any, key string, id int, v []byte) error {
	arr, _ := df[key].([]any)
	for _, kv := range arr {
		m, _ := kv.(map[string]any)
		if asInt(m["key"]) == id {
			m["value"] = v
			return nil
		}
	}
	return fmt.Errorf("no %s for field %d", key, id)
}

// rowIDField is the field id of _row_id.
const rowIDField = 2147483540

func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

// fieldSummary is one partition field summary of a manifest-list record.
func fieldSummary(containsNull bool, lower, upper []byte) map[string]any {
	s := map[string]any{"contains_null": containsNull, "contains_nan": nil, "lower_bound": nil, "upper_bound": nil}
	if lower != nil {
		s["lower_bound"] = lower
	}
	if upper != nil {
		s["upper_bound"] = upper
	}
	return s
}

func bytesField(key string, v []byte, label string) fieldEdit {
	return fieldEdit{fmt.Sprintf("%s %s", key, label), func(_ *work, m map[string]any) error {
		m[key] = v
		return nil
	}}
}

// metric sets the value of field id in a metrics map (an Avro array of
// key/value records), adding the pair if the map has none for it.
func metric(key string, id int, v int64, label string) fieldEdit {
	return fieldEdit{fmt.Sprintf("%s %s", key, label), func(_ *work, m map[string]any) error {
		arr, _ := m[key].([]any)
		for _, kv := range arr {
			if p, _ := kv.(map[string]any); asInt(p["key"]) == id {
				p["value"] = v
				return nil
			}
		}
		m[key] = append(arr, map[string]any{"key": int32(id), "value": v})
		return nil
	}}
}

// bound sets the bound of field id, adding it if the map has none for it.
func bound(key string, id int, v []byte, label string) fieldEdit {
	return fieldEdit{fmt.Sprintf("%s of %s", key, label), func(_ *work, m map[string]any) error {
		if setBound(m, key, id, v) == nil {
			return nil
		}
		arr, _ := m[key].([]any)
		m[key] = append(arr, map[string]any{"key": int32(id), "value": v})
		return nil
	}}
}

func splits(label string, offs ...int64) fieldEdit {
	return fieldEdit{"split_offsets " + label, func(_ *work, m map[string]any) error {
		a := make([]any, len(offs))
		for i, o := range offs {
			a[i] = o
		}
		m["split_offsets"] = a
		return nil
	}}
}

// manifestWithDeleted picks the manifest of snapshot k with content
// (0 data, 1 deletes) that holds a DELETED entry.
func manifestWithDeleted(k, content int) func(b *Base) string {
	return func(b *Base) string {
		for _, m := range b.Snapshots[k].Manifests {
			for _, e := range m.Entries {
				if m.Content == content && e.Status == 2 {
					return m.Path
				}
			}
		}
		return ""
	}
}

// partitionTypePath is where a manifest entry schema's data_file.partition
// type is.
func partitionTypePath(root any) Path {
	fields, _ := Get(root, Path{"fields"})
	for i, f := range fields.([]any) {
		if f.(map[string]any)["name"] != "data_file" {
			continue
		}
		dfFields, _ := Get(root, Path{"fields", i, "type", "fields"})
		for j, g := range dfFields.([]any) {
			if g.(map[string]any)["name"] == "partition" {
				return Path{"fields", i, "type", "fields", j, "type"}
			}
		}
	}
	return Path{"no partition field"}
}
