package badinput

import (
	"encoding/binary"
	"fmt"
	"os"
)

// fileTarget is one file of the base table to corrupt as bytes.
type fileTarget struct {
	label string
	group string
	path  func(b *Base) string
	// names beyond the file itself that an error may give (the manifest
	// that lists it, for instance)
	extra func(b *Base) []string
}

// byteEdit corrupts the bytes of a file.
type byteEdit struct {
	label string
	edit  func(b []byte) []byte // nil with sparse set
	// sparse replaces the file with this many zero bytes (a sparse file:
	// no disk used) to test that sizes are bounded before reading.
	sparse int64
}

func flipAt(label string, at func(b []byte) int) byteEdit {
	return byteEdit{label: "byte flipped at " + label, edit: func(b []byte) []byte {
		i := at(b)
		if i < 0 || i >= len(b) {
			return b
		}
		return flip(b, i)
	}}
}

// commonEdits apply to any file format.
func commonEdits() []byteEdit {
	return []byteEdit{
		{label: "zero length", edit: func([]byte) []byte { return nil }},
		{label: "truncated to half", edit: func(b []byte) []byte { return b[:len(b)/2] }},
		{label: "last byte cut", edit: func(b []byte) []byte { return b[:len(b)-1] }},
		{label: "random bytes of the same length", edit: func(b []byte) []byte { return garbage(len(b), 2) }},
		{label: "4 GiB of zeros (sparse)", sparse: 4 << 30},
	}
}

func byteCases(targets []fileTarget, edits []byteEdit) []tcase {
	var cases []tcase
	for _, t := range targets {
		for _, e := range edits {
			cases = append(cases, tcase{
				name:  fmt.Sprintf("%s/%s: %s", t.group, t.label, e.label),
				group: t.group + " bytes",
				prep: func(w *work) error {
					p := t.path(w.s.base)
					w.name(p, baseName(p))
					if t.extra != nil {
						w.name(t.extra(w.s.base)...)
					}
					if e.sparse > 0 {
						return w.sparse(p, e.sparse)
					}
					orig, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					return w.replace(p, e.edit(orig))
				},
			})
		}
	}
	return cases
}

// avroByteCases corrupt manifest lists and manifests as files.
func avroByteCases() []tcase {
	list := func(k int) func(b *Base) string { return func(b *Base) string { return b.Snapshots[k].ManifestList } }
	man := func(k, content int) func(b *Base) string {
		return func(b *Base) string { m, _, _ := b.Find(k, content); return m.Path }
	}
	// a manifest may be reported at a list that references it
	lists := func(b *Base) []string {
		var out []string
		for _, sn := range b.Snapshots {
			out = append(out, baseName(sn.ManifestList))
		}
		return out
	}
	last := len(Story) - 1
	targets := []fileTarget{
		{label: "snapshot 1 manifest list", group: "manifest-list", path: list(0)},
		{label: "head manifest list", group: "manifest-list", path: list(last)},
		{label: "snapshot 1 data manifest", group: "manifest", path: man(0, 0), extra: lists},
		{label: "snapshot 2 deletion-vector manifest", group: "manifest", path: man(1, 1), extra: lists},
	}
	edits := append(commonEdits(),
		flipAt("0 (magic)", func([]byte) int { return 0 }),
		flipAt("40 (header schema)", func([]byte) int { return 40 }),
		flipAt("3/4 (data block)", func(b []byte) int { return len(b) * 3 / 4 }),
		flipAt("the last byte (sync marker)", func(b []byte) int { return len(b) - 1 }),
	)
	return byteCases(targets, edits)
}

// puffinCases corrupt the Puffin files holding deletion vectors. Layout:
// "PFA1", blobs (each: 4-byte big-endian length, magic D1 D3 39 64,
// roaring bitmap, CRC-32), footer ("PFA1", JSON payload, 4-byte payload
// length, 4 flag bytes, "PFA1").
func puffinCases() []tcase {
	dv := func(k int) func(b *Base) string {
		return func(b *Base) string { _, e, _ := b.Find(k, 1); return e.Path }
	}
	manifestOfDV := func(k int) func(b *Base) []string {
		return func(b *Base) []string { m, _, _ := b.Find(k, 1); return []string{baseName(m.Path)} }
	}
	le32 := func(label string, fromEnd int, v func(n int) uint32) byteEdit {
		return byteEdit{label: label, edit: func(b []byte) []byte {
			c := append([]byte{}, b...)
			binary.LittleEndian.PutUint32(c[len(c)-fromEnd:], v(len(c)))
			return c
		}}
	}
	edits := append(commonEdits(),
		flipAt("0 (file magic)", func([]byte) int { return 0 }),
		byteEdit{label: "blob length 0x7fffffff", edit: func(b []byte) []byte {
			c := append([]byte{}, b...)
			binary.BigEndian.PutUint32(c[4:], 0x7fffffff)
			return c
		}},
		flipAt("9 (blob magic)", func([]byte) int { return 9 }),
		flipAt("14 (inside the bitmap)", func([]byte) int { return 14 }),
		flipAt("the blob's CRC", func(b []byte) int { return blobEnd(b) - 1 }),
		flipAt("the footer's first magic", func(b []byte) int { return blobEnd(b) }),
		flipAt("the last byte (footer magic)", func(b []byte) int { return len(b) - 1 }),
		flipAt("the footer flags", func(b []byte) int { return len(b) - 8 }),
		le32("footer payload length 0", 12, func(int) uint32 { return 0 }),
		le32("footer payload length 0x7fffffff", 12, func(int) uint32 { return 0x7fffffff }),
		le32("footer payload length past the start", 12, func(n int) uint32 { return uint32(n) }),
		flipAt("the middle of the footer JSON", func(b []byte) int { return (blobEnd(b) + len(b) - 12) / 2 }),
		byteEdit{label: "footer cut (blob only)", edit: func(b []byte) []byte { return b[:blobEnd(b)] }},
	)
	targets := []fileTarget{
		{label: "snapshot 2 deletion vector", group: "puffin", path: dv(1), extra: manifestOfDV(1)},
	}
	cases := byteCases(targets, edits)
	targets = []fileTarget{{label: "snapshot 6 deletion vector (compacted file)", group: "puffin", path: dv(5), extra: manifestOfDV(5)}}
	return append(cases, byteCases(targets, []byteEdit{
		flipAt("14 (inside the bitmap)", func([]byte) int { return 14 }),
		{label: "truncated to half", edit: func(b []byte) []byte { return b[:len(b)/2] }},
	})...)
}

// blobEnd is where the first blob of a Puffin file ends: it starts at 4,
// its 4-byte big-endian length counts magic and bitmap, then comes a
// 4-byte CRC.
func blobEnd(b []byte) int {
	if len(b) < 8 {
		return len(b)
	}
	return min(len(b), 8+int(binary.BigEndian.Uint32(b[4:8]))+4)
}

// parquetCases corrupt data and delete files. Layout: "PAR1", column
// chunks, footer (thrift), 4-byte little-endian footer length, "PAR1".
func parquetCases() []tcase {
	data := func(k, content int) func(b *Base) string {
		return func(b *Base) string { _, e, _ := b.Find(k, content); return e.Path }
	}
	footerLen := func(b []byte) int { return int(binary.LittleEndian.Uint32(b[len(b)-8:])) }
	setLen := func(label string, v func(b []byte) uint32) byteEdit {
		return byteEdit{label: label, edit: func(b []byte) []byte {
			c := append([]byte{}, b...)
			binary.LittleEndian.PutUint32(c[len(c)-8:], v(b))
			return c
		}}
	}
	edits := append(commonEdits(),
		flipAt("0 (leading magic)", func([]byte) int { return 0 }),
		flipAt("20 (first column chunk)", func([]byte) int { return 20 }),
		setLen("footer length 0", func([]byte) uint32 { return 0 }),
		setLen("footer length 0x7ffffff0", func([]byte) uint32 { return 0x7ffffff0 }),
		setLen("footer length past the start", func(b []byte) uint32 { return uint32(len(b)) }),
		setLen("footer length one short", func(b []byte) uint32 { return uint32(footerLen(b) - 1) }),
		byteEdit{label: "footer: first byte flipped", edit: func(b []byte) []byte { return flip(b, len(b)-8-footerLen(b)) }},
		byteEdit{label: "footer: middle byte flipped", edit: func(b []byte) []byte { return flip(b, len(b)-8-footerLen(b)/2) }},
		byteEdit{label: "footer: last byte flipped", edit: func(b []byte) []byte { return flip(b, len(b)-9) }},
	)
	cases := byteCases([]fileTarget{{label: "snapshot 1 data file", group: "parquet", path: data(0, 0)}}, edits)
	cases = append(cases, byteCases([]fileTarget{{label: "snapshot 4 compacted data file", group: "parquet", path: data(3, 0)}}, []byteEdit{
		{label: "truncated to half", edit: func(b []byte) []byte { return b[:len(b)/2] }},
		{label: "4 GiB of zeros (sparse)", sparse: 4 << 30},
		setLen("footer length 0x7ffffff0", func([]byte) uint32 { return 0x7ffffff0 }),
		byteEdit{label: "footer: middle byte flipped", edit: func(b []byte) []byte { return flip(b, len(b)-8-footerLen(b)/2) }},
		flipAt("20 (first column chunk)", func([]byte) int { return 20 }),
	})...)
	return append(cases, byteCases([]fileTarget{{label: "snapshot 5 equality-delete file", group: "parquet", path: data(4, 2)}}, []byteEdit{
		{label: "zero length", edit: func([]byte) []byte { return nil }},
		{label: "truncated to half", edit: func(b []byte) []byte { return b[:len(b)/2] }},
		setLen("footer length 0x7ffffff0", func([]byte) uint32 { return 0x7ffffff0 }),
		byteEdit{label: "footer: middle byte flipped", edit: func(b []byte) []byte { return flip(b, len(b)-8-footerLen(b)/2) }},
	})...)
}
