package source

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// IndexStore keeps a table's data-file index between runs (state.Store
// implements it per pipeline and table). Records are opaque to it: the
// source encodes, versions and checks them, and a record that fails the
// check makes the source rebuild the index, never trust it.
type IndexStore interface {
	// LoadFileIndex returns the records stored for the table with uuid
	// tableUUID, by key; none when the stored index is another table's.
	LoadFileIndex(tableUUID string) (map[string][]byte, error)
	// StageFileIndex queues records to store (put) and keys to delete
	// (drop) for the table; with reset, every record stored before goes.
	// They are written with the table's next checkpoint, in its
	// transaction: the index never costs a write of its own.
	StageFileIndex(tableUUID string, put map[string][]byte, drop []string, reset bool)
}

// indexRecordVersion is the first byte of every stored manifest record.
// Bump it for any change of the encoding: records of another version are
// dropped and rebuilt.
const indexRecordVersion = 1

var errIndexRecord = errors.New("bad data-file index record")

// encode is a manifest's stored record: version, the manifest's length,
// sequence number and first_row_id (+1, 0 for none), its files (path,
// first_row_id, data sequence number, record count), and a CRC-32C of
// all that.
func (im *indexedManifest) encode() []byte {
	b := []byte{indexRecordVersion}
	b = binary.AppendVarint(b, im.length)
	b = binary.AppendVarint(b, im.seq)
	b = binary.AppendVarint(b, im.firstRowID+1)
	b = binary.AppendUvarint(b, uint64(len(im.files)))
	for _, f := range im.files {
		b = binary.AppendUvarint(b, uint64(len(f.path)))
		b = append(b, f.path...)
		b = binary.AppendVarint(b, f.firstRowID)
		b = binary.AppendVarint(b, f.dataSeq)
		b = binary.AppendVarint(b, f.count)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func decodeIndexRecord(path string, raw []byte) (*indexedManifest, error) {
	if len(raw) < 5 || raw[0] != indexRecordVersion {
		return nil, fmt.Errorf("%w: manifest %s: unknown version", errIndexRecord, path)
	}
	body, sum := raw[:len(raw)-4], binary.BigEndian.Uint32(raw[len(raw)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return nil, fmt.Errorf("%w: manifest %s: checksum mismatch", errIndexRecord, path)
	}
	r := body[1:]
	bad := false
	varint := func() int64 {
		v, n := binary.Varint(r)
		if n <= 0 {
			bad = true
			return 0
		}
		r = r[n:]
		return v
	}
	uvarint := func() uint64 {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			bad = true
			return 0
		}
		r = r[n:]
		return v
	}
	im := &indexedManifest{path: path, length: varint(), seq: varint(), firstRowID: varint() - 1}
	n := uvarint()
	if bad || n > uint64(len(r)) {
		return nil, fmt.Errorf("%w: manifest %s: truncated", errIndexRecord, path)
	}
	im.files = make([]indexedFile, 0, n)
	for range n {
		l := uvarint()
		if bad || l > uint64(len(r)) {
			return nil, fmt.Errorf("%w: manifest %s: truncated", errIndexRecord, path)
		}
		f := indexedFile{path: string(r[:l])}
		r = r[l:]
		f.firstRowID, f.dataSeq, f.count = varint(), varint(), varint()
		if bad || f.firstRowID < 0 || f.count < 0 {
			return nil, fmt.Errorf("%w: manifest %s: file %s", errIndexRecord, path, f.path)
		}
		im.files = append(im.files, f)
	}
	if len(r) != 0 {
		return nil, fmt.Errorf("%w: manifest %s: %d trailing bytes", errIndexRecord, path, len(r))
	}
	return im, nil
}

// loadIndex reads the stored index once per table uuid. A record that
// does not decode drops the whole stored index, which is then rebuilt.
func (t *Table) loadIndex() {
	fi := t.files
	if fi.store == nil || t.tbl == nil {
		return
	}
	uuid := t.tbl.Metadata().TableUUID().String()
	if fi.storeUUID == uuid {
		return
	}
	fi.storeUUID = uuid
	fi.clear()
	fi.reset = false
	recs, err := fi.store.LoadFileIndex(uuid)
	if err != nil {
		t.log().Warn("read the stored data-file index: rebuilding it", "table", t.name(t.tbl), "err", err)
		fi.reset = true
		return
	}
	for path, raw := range recs {
		im, err := decodeIndexRecord(path, raw)
		if err != nil {
			t.log().Warn("the stored data-file index is damaged: rebuilding it", "table", t.name(t.tbl), "err", err)
			fi.clear()
			return
		}
		fi.add(im)
	}
	clear(fi.staged) // loaded, not new
}
