package badinput

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// bbolt's layout: page 0 and page 1 are the two meta pages (the newer
// valid one wins); in a meta page, after the 16-byte page header, come
// magic (4), version (4), page size (4), flags (4), root bucket (16),
// freelist (8), high water mark (8), txid (8), checksum (8).
const (
	boltPage        = 4096
	boltMagicOff    = 16
	boltRootOff     = 32
	boltTxidOff     = 64
	boltMetaOneBase = boltPage
)

// stateEdit corrupts the daemon's state file (the seed checkpointed after
// snapshot midIdx).
type stateEdit struct {
	label  string
	status bool // also run `icecdc status` on it
	edit   func(s *slot) ([]byte, error)
	// absorbed: bbolt keeps two meta pages so that a torn write of one
	// falls back to the previous transaction; resuming exactly as from
	// the intact state is then harmless.
	absorbed bool
}

func seedEdit(fn func(b []byte) ([]byte, error)) func(s *slot) ([]byte, error) {
	return func(s *slot) ([]byte, error) { return fn(append([]byte{}, s.stateSeed...)) }
}

func flipOffsets(offs ...int) func(s *slot) ([]byte, error) {
	return seedEdit(func(b []byte) ([]byte, error) {
		for _, o := range offs {
			if o >= len(b) {
				return nil, fmt.Errorf("offset %d past the state file's %d bytes", o, len(b))
			}
			b[o] ^= 0xff
		}
		return b, nil
	})
}

// stateOffsets are where the live records of a state file are: bbolt
// copies pages on write, so a pattern searched in the file may well be a
// stale copy in a free page.
type stateOffsets struct {
	pipelineKey, tableKey, checkpointKey int
	checkpoint                           []byte // the live record
	checkpointAt                         int
}

// liveOffsets opens a copy of the state file read-only and finds the
// live keys and checkpoint record of pipeline/table by their addresses in
// bbolt's memory map.
func liveOffsets(seed []byte, pipeline, table string) (stateOffsets, error) {
	var o stateOffsets
	dir, err := os.MkdirTemp("", "icecdc-state-")
	if err != nil {
		return o, err
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "state.db")
	if err := os.WriteFile(p, seed, 0o600); err != nil {
		return o, err
	}
	db, err := bolt.Open(p, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return o, err
	}
	defer db.Close()
	base := db.Info().Data
	at := func(b []byte) int { return int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) - base) }
	find := func(c *bolt.Cursor, key string) ([]byte, []byte) {
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if string(k) == key {
				return k, v
			}
		}
		return nil, nil
	}
	err = db.View(func(tx *bolt.Tx) error {
		k, _ := find(tx.Cursor(), pipeline)
		pb := tx.Bucket([]byte(pipeline))
		if k == nil || pb == nil {
			return fmt.Errorf("no bucket %s", pipeline)
		}
		o.pipelineKey = at(k)
		k, _ = find(pb.Cursor(), table)
		tb := pb.Bucket([]byte(table))
		if k == nil || tb == nil {
			return fmt.Errorf("no bucket %s/%s", pipeline, table)
		}
		o.tableKey = at(k)
		k, v := find(tb.Cursor(), "checkpoint")
		if k == nil {
			return fmt.Errorf("no checkpoint in %s/%s", pipeline, table)
		}
		o.checkpointKey, o.checkpointAt = at(k), at(v)
		o.checkpoint = bytes.Clone(v)
		return nil
	})
	if err == nil && !bytes.Equal(seed[o.checkpointAt:o.checkpointAt+len(o.checkpoint)], o.checkpoint) {
		err = fmt.Errorf("checkpoint record not found at offset %d", o.checkpointAt)
	}
	return o, err
}

// liveEdit changes the byte at offset i of what pick finds in the seed.
func liveEdit(pick func(o stateOffsets) (int, error), to func(byte) byte) func(s *slot) ([]byte, error) {
	return func(s *slot) ([]byte, error) {
		at, err := pick(s.stateAt)
		if err != nil {
			return nil, err
		}
		b := append([]byte{}, s.stateSeed...)
		b[at] = to(b[at])
		return b, nil
	}
}

// inRecord is the offset of pattern's byte i in the live checkpoint record.
func inRecord(pattern string, i int) func(o stateOffsets) (int, error) {
	return func(o stateOffsets) (int, error) {
		j := bytes.Index(o.checkpoint, []byte(pattern))
		if j < 0 {
			return 0, fmt.Errorf("%q not in the checkpoint record %s", pattern, o.checkpoint)
		}
		return o.checkpointAt + j + i, nil
	}
}

func set(b byte) func(byte) byte { return func(byte) byte { return b } }

func invert(b byte) byte { return b ^ 0xff }

func stateEdits() []stateEdit {
	return []stateEdit{
		{"empty (0 bytes)", true, func(*slot) ([]byte, error) { return []byte{}, nil }, false},
		{"truncated to its first page", false, seedEdit(func(b []byte) ([]byte, error) { return b[:boltPage], nil }), false},
		{"truncated to half", true, seedEdit(func(b []byte) ([]byte, error) { return b[:len(b)/2], nil }), false},
		{"truncated by one byte", false, seedEdit(func(b []byte) ([]byte, error) { return b[:len(b)-1], nil }), false},
		{"random bytes (64 KiB)", true, func(*slot) ([]byte, error) { return garbage(64<<10, 3), nil }, false},
		{"bit flipped in the first meta page's magic", false, flipOffsets(boltMagicOff), true},
		{"bit flipped in both meta pages' magic", true, flipOffsets(boltMagicOff, boltMetaOneBase+boltMagicOff), false},
		{"bit flipped in the first meta page's txid", false, flipOffsets(boltTxidOff), true},
		{"bit flipped in both meta pages' root page id", false, flipOffsets(boltRootOff, boltMetaOneBase+boltRootOff), false},
		{"bit flipped in the pipeline bucket's name", true, liveEdit(func(o stateOffsets) (int, error) { return o.pipelineKey, nil }, invert), false},
		{"bit flipped in the table bucket's name", false, liveEdit(func(o stateOffsets) (int, error) { return o.tableKey, nil }, invert), false},
		{"bit flipped in the key \"checkpoint\"", false, liveEdit(func(o stateOffsets) (int, error) { return o.checkpointKey, nil }, invert), false},
		{"checkpoint record: '{' flipped", true, liveEdit(inRecord(`{`, 0), invert), false},
		{"checkpoint record: format version 1 -> 7", false, liveEdit(inRecord(`"v":1`, 4), set('7')), false},
		{"checkpoint record: a snapshot_id digit changed", false, liveEdit(inRecord(`"snapshot_id":`, len(`"snapshot_id":`)+3), func(b byte) byte { return '0' + (b-'0'+1)%10 }), false},
		{"checkpoint record: seq 3 -> 2", false, liveEdit(inRecord(`"sequence_number":3`, len(`"sequence_number":`)), set('2')), false},
		{"checkpoint record: seq 3 -> 9 (ahead of the head)", false, liveEdit(inRecord(`"sequence_number":3`, len(`"sequence_number":`)), set('9')), false},
		{"checkpoint record: a table_uuid character changed", false, liveEdit(inRecord(`"table_uuid":"`, len(`"table_uuid":"`)+1), func(b byte) byte {
			if b == 'a' {
				return 'b'
			}
			return 'a'
		}), false},
		{"a valid state of another pipeline (foreign)", true, func(s *slot) ([]byte, error) { return s.foreignSeed, nil }, false},
	}
}

// stateCases run the daemon (and `icecdc status`) on corrupt state files:
// each must be refused with one line naming the state file.
func stateCases() []tcase {
	prep := func(e stateEdit, corrupt bool) func(w *work) error {
		return func(w *work) error {
			b, err := e.edit(w.s)
			if err != nil {
				return err
			}
			state := filepath.Join(w.dir, "state.db")
			w.name(state, "state.db")
			w.corruptState, w.absorbed = corrupt, e.absorbed
			return os.WriteFile(state, b, 0o600)
		}
	}
	intact := stateEdit{label: "intact (control)", status: true, edit: func(s *slot) ([]byte, error) { return s.stateSeed, nil }}
	cases := []tcase{
		{name: "state/run: " + intact.label, group: "state file", kind: kindRun, control: true, prep: prep(intact, false)},
		{name: "state/status: " + intact.label, group: "state file", kind: kindStatus, control: true, prep: prep(intact, false)},
	}
	for _, e := range stateEdits() {
		cases = append(cases, tcase{name: "state/run: " + e.label, group: "state file", kind: kindRun, prep: prep(e, true)})
		if e.status {
			cases = append(cases, tcase{name: "state/status: " + e.label, group: "state file", kind: kindStatus, prep: prep(e, true)})
		}
	}
	return cases
}
