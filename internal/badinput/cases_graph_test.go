package badinput

import (
	"encoding/json"
	"fmt"
)

// graphCases break the snapshot graph of metadata.json: cycles, gaps,
// expired snapshots, duplicate and out-of-order sequence numbers, refs and
// ids that point nowhere, and paths that leave the table.
func graphCases(s *slot) []tcase {
	last := len(s.base.Snapshots) - 1
	snap := func(k int, field string) Path { return Path{"snapshots", k, field} }
	set := func(w *work, p Path, v any) error {
		return w.editMeta(func(root any) error { return Set(root, p, v) })
	}
	var cases []tcase
	add := func(name string, prep func(w *work) error) {
		cases = append(cases, tcase{name: "graph/" + name, group: "snapshot graph", prep: prep})
	}

	// Cycles.
	for _, k := range []int{2, last} {
		add(fmt.Sprintf("snapshot %d is its own parent", k+1), func(w *work) error {
			w.nameSnaps(k)
			w.name(keyNames("parent-snapshot-id")...)
			return set(w, snap(k, "parent-snapshot-id"), w.snapID(k))
		})
	}
	add("cycle 1->2->1 (the first snapshot's parent is its child)", func(w *work) error {
		w.nameSnaps(0, 1)
		return set(w, snap(0, "parent-snapshot-id"), w.snapID(1))
	})
	add("cycle through the head (the first snapshot's parent is the head)", func(w *work) error {
		w.nameSnaps(0, last)
		return set(w, snap(0, "parent-snapshot-id"), w.snapID(last))
	})
	add("cycle 3->6->5->4->3 (snapshot 3's parent is snapshot 6)", func(w *work) error {
		w.nameSnaps(2, 5)
		return set(w, snap(2, "parent-snapshot-id"), w.snapID(5))
	})

	// Gaps and expiry.
	add("gap: snapshot 4's parent is an unknown id", func(w *work) error {
		w.nameSnaps(3)
		w.name("4242424242")
		return set(w, snap(3, "parent-snapshot-id"), json.Number("4242424242"))
	})
	add("fork: snapshot 3's parent skips snapshot 2 (still listed)", func(w *work) error {
		w.nameSnaps(0, 1, 2)
		return set(w, snap(2, "parent-snapshot-id"), w.snapID(0))
	})
	for _, k := range []int{1, 2, 3} {
		add(fmt.Sprintf("expired middle snapshot %d (%s), its child still points at it", k+1, s.base.Snapshots[k].Op), func(w *work) error {
			w.nameSnaps(k, k+1)
			return w.editMeta(func(root any) error { return expire(root, k) })
		})
	}
	add("expired oldest snapshot 1 (an ordinary expiry)", func(w *work) error {
		w.nameSnaps(0, 1)
		w.expect = w.withoutSnaps(0)
		return w.editMeta(func(root any) error { return expire(root, 0) })
	})
	add("expired oldest snapshots 1-2 (an ordinary expiry)", func(w *work) error {
		w.nameSnaps(0, 1, 2)
		w.expect = w.withoutSnaps(0, 1)
		return w.editMeta(func(root any) error {
			if err := expire(root, 0); err != nil {
				return err
			}
			return expire(root, 0)
		})
	})

	// Sequence numbers.
	add("duplicate sequence number (snapshot 3 has snapshot 2's)", func(w *work) error {
		w.nameSnaps(1, 2)
		w.name(keyNames("sequence-number")...)
		return set(w, snap(2, "sequence-number"), json.Number(fmt.Sprint(w.s.base.Snapshots[1].Seq)))
	})
	add("out of order: snapshot 4's sequence number (a replace) below its parent's", func(w *work) error {
		w.nameSnaps(2, 3)
		w.name(keyNames("sequence-number")...)
		return set(w, snap(3, "sequence-number"), json.Number("1"))
	})
	add("out of order: snapshot 6's sequence number (a delete) below its parent's", func(w *work) error {
		w.nameSnaps(4, 5)
		w.name(keyNames("sequence-number")...)
		return set(w, snap(5, "sequence-number"), json.Number("2"))
	})
	add("sequence numbers of snapshots 2 and 3 swapped", func(w *work) error {
		w.nameSnaps(1, 2)
		w.name(keyNames("sequence-number")...)
		return w.editMeta(func(root any) error {
			a, _ := Get(root, snap(1, "sequence-number"))
			b, _ := Get(root, snap(2, "sequence-number"))
			Set(root, snap(1, "sequence-number"), b)
			return Set(root, snap(2, "sequence-number"), a)
		})
	})
	add("head's sequence number above last-sequence-number", func(w *work) error {
		w.nameSnaps(last)
		w.name(keyNames("sequence-number")...)
		w.name(keyNames("last-sequence-number")...)
		return set(w, snap(last, "sequence-number"), json.Number("100"))
	})
	add("duplicate snapshot id (snapshot 3 has snapshot 2's id)", func(w *work) error {
		w.nameSnaps(1, 2)
		return set(w, snap(2, "snapshot-id"), w.snapID(1))
	})

	// Refs and current snapshot.
	add("main ref points to an unknown snapshot", func(w *work) error {
		w.name("4242424242", "main")
		return set(w, Path{"refs", "main", "snapshot-id"}, json.Number("4242424242"))
	})
	add("current-snapshot-id unknown", func(w *work) error {
		w.name("4242424242")
		w.name(keyNames("current-snapshot-id")...)
		return set(w, Path{"current-snapshot-id"}, json.Number("4242424242"))
	})
	add("main ref and current-snapshot-id both unknown", func(w *work) error {
		w.name("4242424242", "main")
		return w.editMeta(func(root any) error {
			Set(root, Path{"current-snapshot-id"}, json.Number("4242424242"))
			return Set(root, Path{"refs", "main", "snapshot-id"}, json.Number("4242424242"))
		})
	})
	add("main ref is a tag", func(w *work) error {
		w.name("main", "tag")
		return set(w, Path{"refs", "main", "type"}, "tag")
	})
	add("valid rollback: main and current snapshot at snapshot 4", func(w *work) error {
		w.nameSnaps(3)
		w.expect = w.onlySnaps(0, 1, 2, 3)
		return w.editMeta(func(root any) error {
			Set(root, Path{"current-snapshot-id"}, w.snapID(3))
			return Set(root, Path{"refs", "main", "snapshot-id"}, w.snapID(3))
		})
	})
	add("main ref at snapshot 4, current-snapshot-id at the head", func(w *work) error {
		w.nameSnaps(3, last)
		w.name("main", "current")
		w.expect = w.onlySnaps(0, 1, 2, 3) // the branch followed is main
		return set(w, Path{"refs", "main", "snapshot-id"}, w.snapID(3))
	})

	// Schemas.
	add("current-schema-id unknown", func(w *work) error {
		w.name("7")
		w.name(keyNames("current-schema-id")...)
		w.name(keyNames("schema-id")...)
		return set(w, Path{"current-schema-id"}, json.Number("7"))
	})
	add("snapshot 3's schema-id unknown", func(w *work) error {
		w.nameSnaps(2)
		w.name(keyNames("schema-id")...)
		return set(w, snap(2, "schema-id"), json.Number("7"))
	})
	add("column amount typed string", func(w *work) error {
		w.name("amount")
		w.nameDataFiles()
		return set(w, Path{"schemas", 0, "fields", 3, "type"}, "string")
	})
	add("column order_id typed int (narrower than the files)", func(w *work) error {
		w.name("order_id")
		w.nameDataFiles()
		return set(w, Path{"schemas", 0, "fields", 0, "type"}, "int")
	})
	add("columns customer and status swap field ids", func(w *work) error {
		w.name("customer", "status")
		return w.editMeta(func(root any) error {
			Set(root, Path{"schemas", 0, "fields", 1, "id"}, json.Number("3"))
			return Set(root, Path{"schemas", 0, "fields", 2, "id"}, json.Number("2"))
		})
	})
	add("two columns with field id 2", func(w *work) error {
		w.name("customer", "status", "2")
		return set(w, Path{"schemas", 0, "fields", 2, "id"}, json.Number("2"))
	})

	// Format version.
	for _, v := range []string{"1", "2", "4"} {
		add("format-version "+v, func(w *work) error {
			w.name(keyNames("format-version")...)
			w.name("version " + v)
			return set(w, Path{"format-version"}, json.Number(v))
		})
	}

	// Manifest lists: swapped, elsewhere.
	add("manifest lists of snapshots 2 and 3 swapped", func(w *work) error {
		w.nameSnaps(1, 2)
		w.name(baseName(w.s.base.Snapshots[1].ManifestList), baseName(w.s.base.Snapshots[2].ManifestList))
		return w.editMeta(func(root any) error {
			a, _ := Get(root, snap(1, "manifest-list"))
			b, _ := Get(root, snap(2, "manifest-list"))
			Set(root, snap(1, "manifest-list"), b)
			return Set(root, snap(2, "manifest-list"), a)
		})
	})
	for _, t := range outsideTargets(func(s *slot) string { return s.base.Outside.ManifestList }) {
		add("head's manifest-list "+t.label, func(w *work) error {
			p := t.path(w.s)
			w.nameSnaps(last)
			w.name(p, baseName(p))
			return set(w, snap(last, "manifest-list"), "file://"+p)
		})
	}
	add("location moved elsewhere (paths are absolute)", func(w *work) error {
		// The files now lie outside the table's location: the refusal
		// names the location.
		w.name("file:///nonexistent/elsewhere")
		return set(w, Path{"location"}, "file:///nonexistent/elsewhere")
	})
	return cases
}

// expire removes snapshot k and its snapshot-log entry, keeping every
// other pointer to it: what an expiry does to the snapshot list.
func expire(root any, k int) error {
	sv, _ := Get(root, Path{"snapshots", k, "snapshot-id"})
	if err := Delete(root, Path{"snapshots", k}); err != nil {
		return err
	}
	logv, _ := Get(root, Path{"snapshot-log"})
	log, _ := logv.([]any)
	var kept []any
	for _, e := range log {
		if m, ok := e.(map[string]any); !ok || m["snapshot-id"] != sv {
			kept = append(kept, e)
		}
	}
	return Set(root, Path{"snapshot-log"}, kept)
}

func (w *work) onlySnaps(ks ...int) []Event {
	keep := map[int64]bool{}
	for _, k := range ks {
		keep[w.s.base.Snapshots[k].ID] = true
	}
	return OnlySnapshots(w.expect, keep)
}

func (w *work) withoutSnaps(ks ...int) []Event {
	keep := map[int64]bool{}
	for _, sn := range w.s.base.Snapshots {
		keep[sn.ID] = true
	}
	for _, k := range ks {
		keep[w.s.base.Snapshots[k].ID] = false
	}
	return OnlySnapshots(w.expect, keep)
}

// outsideTarget is a path outside the table a pointer can be bent to.
type outsideTarget struct {
	label string
	path  func(s *slot) string
}

// outsideTargets: the same kind of object in another table of the
// warehouse (valid, with Secret in its rows), a plain text file outside
// the warehouse, /etc/passwd, and a path that does not exist.
func outsideTargets(sameKind func(s *slot) string) []outsideTarget {
	return []outsideTarget{
		{"points into another table (valid object, secret rows)", sameKind},
		{"points to a text file outside the warehouse", func(s *slot) string { return s.secretText }},
		{"points to /etc/passwd", func(*slot) string { return "/etc/passwd" }},
		{"points to a missing file", func(s *slot) string { return s.root + "/outside/missing.avro" }},
	}
}

func baseName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
