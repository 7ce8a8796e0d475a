package badinput

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// writeMeta writes b as the case's metadata.json (same file name as the
// table's, so the table name derived from it does not change).
func (w *work) writeMeta(b []byte) error {
	p := filepath.Join(w.dir, filepath.Base(w.s.base.Metadata))
	w.meta = p
	w.name(filepath.Base(p))
	return os.WriteFile(p, b, 0o644)
}

// editMeta applies fn to a copy of the slot's metadata and writes it.
func (w *work) editMeta(fn func(root any) error) error {
	root := CloneJSON(w.s.meta)
	if err := fn(root); err != nil {
		return err
	}
	if cols := SchemaColumns(root); len(cols) > 0 {
		w.cols = cols
	}
	b, err := json.Marshal(root)
	if err != nil {
		return err
	}
	return w.writeMeta(b)
}

// snapID is the id of snapshot k of the slot's table, as JSON.
func (w *work) snapID(k int) json.Number {
	return json.Number(strconv.FormatInt(w.s.base.Snapshots[k].ID, 10))
}

// nameSnaps adds the ids of snapshots ks to the names an error may give.
func (w *work) nameSnaps(ks ...int) {
	for _, k := range ks {
		w.name(strconv.FormatInt(w.s.base.Snapshots[k].ID, 10))
	}
}

// keyNames are the spellings of a metadata key an error may use.
func keyNames(key string) []string {
	if key == "" {
		return nil
	}
	return []string{key, strings.ReplaceAll(key, "-", " "), strings.ReplaceAll(key, "-", "_")}
}

// The walk covers every field, but where metadata.json repeats itself it
// samples: every snapshot's ids, sequence number and operation; the other
// fields of snapshots 1, 2, 3 and the head (append, vector delete,
// position-delta update); the rest of the summary, timestamps and logs only
// for one entry. Numbers get a set of values by what they are.
var (
	// full: row lineage, where sizes matter.
	numsFull = []string{"-1", "0", "2^40", "2^50", "2^63-1"}
	// sequence numbers, where 0 means something and sizes matter.
	numsSeq = []string{"-1", "0", "2^40", "2^63-1"}
	// snapshot ids, where 0 means something.
	numsSnapID = []string{"-1", "0", "2^63-1"}
	// other ids: schemas, fields, specs, versions.
	numsID = []string{"-1", "2^63-1"}
	// minor: timestamps and ids nothing is computed from.
	numsMinor = []string{"2^63-1"}
	// short: the fields of the snapshots sampled less (their wrong types
	// are those of the fully walked snapshots, so not tried again).
	numsShort = []string{"-1", "2^63-1", "no-wrong-type"}
)

var numValue = map[string]string{"-1": "-1", "0": "0", "2^40": "1099511627776", "2^50": "1125899906842624", "2^63-1": "9223372036854775807"}

// fullSnapshots are the snapshots (indexes) whose every field is walked.
var fullSnapshots = map[int]bool{1: true, 2: true, len(Story) - 1: true}

// walkPlan says whether the node at p is walked and, for a number, with
// which values. Null is tried where it can mean something other than
// absent: ids, sequence numbers, row ids, paths and the operation.
func walkPlan(root any, p Path) (nums []string, ok bool) {
	idx := func() (int, int) {
		arr, _ := Get(root, p[:1])
		a, _ := arr.([]any)
		i, _ := p[1].(int)
		return i, len(a) - 1
	}
	key := p.Last()
	if key == "" && len(p) > 1 {
		key = Path(p[:len(p)-1]).Last()
	}
	switch key {
	case "first-row-id", "next-row-id", "added-rows":
		nums = numsFull
	case "sequence-number", "last-sequence-number":
		nums = numsSeq
	case "snapshot-id", "parent-snapshot-id", "current-snapshot-id":
		nums = numsSnapID
	case "timestamp-ms", "last-updated-ms", "order-id", "default-sort-order-id", "last-partition-id":
		nums = numsMinor
	default:
		nums = numsID
	}
	switch {
	case p[0] == "snapshots" && len(p) >= 3:
		i, last := idx()
		switch {
		case p[2] == "summary":
			return nums, (len(p) == 4 && p[3] == "operation") || (len(p) == 3 && i == 1)
		case p[2] == "timestamp-ms" || p[2] == "schema-id" || p[2] == "added-rows":
			return nums, i == 1 || i == last
		case fullSnapshots[i]:
			return nums, true
		}
		return numsShort, p[2] == "snapshot-id" || p[2] == "parent-snapshot-id" || p[2] == "sequence-number"
	case p[0] == "snapshot-log" || p[0] == "metadata-log":
		if len(p) == 1 {
			return nums, true
		}
		i, _ := idx()
		return numsMinor, i == 0 && len(p) > 2 && p[2] != "timestamp-ms"
	case p[0] == "schemas" && len(p) >= 5 && p[2] == "fields":
		// every column's id and type; the rest for the identifier column
		// and one optional column
		i, _ := p[3].(int)
		return nums, (p[4] == "id" && i != 2) || i <= 1 && p[4] != "required" || i == 0
	}
	return nums, true
}

var containerWalked = map[string]bool{
	"schemas[0]": true, "schemas[0].fields": true, "refs.main": true,
	"snapshots[1]": true, "snapshots[1].summary": true, fmt.Sprintf("snapshots[%d]", len(Story)-1): true,
}

// mutation is one change of one node.
type mutation struct {
	label string
	del   bool
	val   any
}

// nullMatters lists the keys whose null is tried besides their absence.
var nullMatters = map[string]bool{
	"snapshot-id": true, "parent-snapshot-id": true, "sequence-number": true, "first-row-id": true,
	"added-rows": true, "manifest-list": true, "operation": true, "current-snapshot-id": true,
	"next-row-id": true, "last-sequence-number": true, "format-version": true, "table-uuid": true,
	"schema-id": true, "current-schema-id": true, "id": true, "snapshots": true, "schemas": true, "refs": true,
}

func leafMutations(v any, nums []string, key string) []mutation {
	del, null := mutation{label: "deleted", del: true}, mutation{label: "null", val: nil}
	var ms []mutation
	if nullMatters[key] {
		ms = append(ms, null)
	}
	switch v := v.(type) {
	case json.Number:
		ms = append([]mutation{del}, ms...)
		if !slices.Contains(nums, "no-wrong-type") {
			ms = append(ms, mutation{"string " + strconv.Quote(v.String()), false, v.String()})
		}
		for _, n := range nums {
			if x, ok := numValue[n]; ok && x != v.String() {
				ms = append(ms, mutation{n, false, json.Number(x)})
			}
		}
		return ms
	case string:
		ms = append(ms, del, mutation{"number 12345", false, json.Number("12345")})
		if v != "" {
			ms = append(ms, mutation{`""`, false, ""})
		}
		return ms
	case bool:
		return append(ms, del, mutation{`string "true"`, false, "true"}, mutation{"number 1", false, json.Number("1")})
	case nil:
		return []mutation{del, {"0", false, json.Number("0")}, {`"x"`, false, "x"}}
	case map[string]any:
		return append(ms, del, mutation{`string "x"`, false, "x"}, mutation{"{}", false, map[string]any{}})
	case []any:
		return append(ms, del, mutation{`string "x"`, false, "x"}, mutation{"[]", false, []any{}})
	}
	return nil
}

// metadataFieldCases walks the fields of the base metadata.json (as
// walkPlan samples them) and mutates each: deleted, null, the wrong type,
// and for numbers -1, 0 and huge values; containers also emptied.
func metadataFieldCases(s *slot) []tcase {
	var cases []tcase
	for _, n := range Walk(s.meta) {
		p := n.Path
		nums, ok := walkPlan(s.meta, p)
		if !ok {
			continue
		}
		switch n.Value.(type) {
		case map[string]any, []any:
			// containers: the top level and the few that hold meaning
			if len(p) > 1 && !containerWalked[p.String()] {
				continue
			}
		}
		key := p.Last()
		if key == "" && len(p) > 1 {
			key = Path(p[:len(p)-1]).Last()
		}
		for _, m := range leafMutations(n.Value, nums, key) {
			cases = append(cases, tcase{
				name:  fmt.Sprintf("metadata/field %s: %s", p, m.label),
				group: "metadata.json fields",
				prep: func(w *work) error {
					w.nameField(p)
					return w.editMeta(func(root any) error {
						if m.del {
							return Delete(root, p)
						}
						return Set(root, p, m.val)
					})
				},
			})
		}
	}
	return cases
}

// nameField adds what an error about the field at p may name: the key,
// the snapshot it belongs to, the column it describes.
func (w *work) nameField(p Path) {
	key := p.Last()
	if key == "" && len(p) > 1 {
		key = Path(p[:len(p)-1]).Last()
	}
	w.name(keyNames(key)...)
	if len(p) >= 2 && (p[0] == "snapshots" || p[0] == "snapshot-log") {
		if i, ok := p[1].(int); ok && i < len(w.s.base.Snapshots) {
			w.nameSnaps(i)
		}
	}
	if p[0] == "schemas" {
		// a schema that disagrees with the data files may be reported
		// at the file it does not fit
		w.nameDataFiles()
	}
	if len(p) >= 4 && p[0] == "schemas" && p[2] == "fields" {
		if col, ok := Get(w.s.meta, append(Path{}, p[:4]...).with("name")); ok {
			w.name(fmt.Sprint(col))
		}
	}
}

// nameDataFiles adds every data file of the table to the names an error
// may give.
func (w *work) nameDataFiles() {
	for _, sn := range w.s.base.Snapshots {
		for _, m := range sn.Manifests {
			for _, e := range m.Entries {
				if e.Content == 0 {
					w.name(baseName(e.Path))
				}
			}
		}
	}
}

func (p Path) with(k any) Path { return append(append(Path{}, p...), k) }

// metadataByteCases corrupt metadata.json as a file.
func metadataByteCases() []tcase {
	bytesCase := func(name string, fn func(orig []byte) []byte) tcase {
		return tcase{name: "metadata/bytes " + name, group: "metadata.json bytes", prep: func(w *work) error {
			return w.writeMeta(fn(w.s.metaRaw))
		}}
	}
	cases := []tcase{
		bytesCase("empty file", func([]byte) []byte { return nil }),
		bytesCase("truncated to half", func(b []byte) []byte { return b[:len(b)/2] }),
		bytesCase("last byte cut", func(b []byte) []byte { return b[:len(b)-1] }),
		bytesCase("not JSON", func([]byte) []byte { return []byte("this is not a table\n") }),
		bytesCase("JSON null", func([]byte) []byte { return []byte("null") }),
		bytesCase("JSON array", func([]byte) []byte { return []byte("[]") }),
		bytesCase("empty object", func([]byte) []byte { return []byte("{}") }),
		bytesCase("random bytes of the same length", func(b []byte) []byte { return garbage(len(b), 1) }),
		bytesCase("byte flipped at the middle", func(b []byte) []byte { return flip(b, len(b)/2) }),
		bytesCase("nested 100000 deep", func([]byte) []byte {
			return []byte(`{"format-version":3,"x":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}")
		}),
		bytesCase("trailing garbage after the object", func(b []byte) []byte { return append(append([]byte{}, b...), "}{x"...) }),
		{name: "metadata/bytes 4 GiB of zeros (sparse)", group: "metadata.json bytes", prep: func(w *work) error {
			if err := w.writeMeta(nil); err != nil {
				return err
			}
			return os.Truncate(w.meta, 4<<30)
		}},
		{name: "metadata/bytes valid with an unknown 100 MiB field", group: "metadata.json bytes", prep: func(w *work) error {
			// Written in chunks: the test process must not hold it either.
			if err := w.writeMeta(nil); err != nil {
				return err
			}
			f, err := os.OpenFile(w.meta, os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			defer f.Close()
			chunk := []byte(strings.Repeat("x", 1<<20))
			f.WriteString(`{"padding":"`)
			for range 100 {
				f.Write(chunk)
			}
			f.WriteString(`",`)
			_, err = f.Write(w.s.metaRaw[1:])
			return err
		}},
		{name: "metadata/bytes re-encoded unchanged (control)", group: "metadata.json bytes", control: true, prep: func(w *work) error {
			return w.editMeta(func(any) error { return nil })
		}},
	}
	return cases
}

// garbage is n deterministic pseudo-random bytes.
func garbage(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x1ce))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// flip returns a copy of b with the byte at i inverted.
func flip(b []byte, i int) []byte {
	c := append([]byte{}, b...)
	c[i] ^= 0xff
	return c
}
