package badinput

import (
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
