package source

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// parquetLike returns size bytes ending as a Parquet file does: a footer
// of footerLen bytes, its length, and the magic.
func parquetLike(size, footerLen int) []byte {
	b := bytes.Repeat([]byte{7}, size)
	binary.LittleEndian.PutUint32(b[size-8:], uint32(footerLen))
	copy(b[size-4:], "PAR1")
	return b
}

// TestWholeFilesUntilScanned: a file read whole is kept whole until its
// first scan ends, then only its footer is; past the whole-file budget the
// oldest whole files are reduced to their footers, never dropped with
// their footers.
func TestWholeFilesUntilScanned(t *testing.T) {
	c := newFooterCache(1 << 20)
	c.wholeBudget = 300 << 10
	const size, flen = 100 << 10, 500
	for _, name := range []string{"a", "b", "c", "d"} {
		c.put(name, &footer{size: size, data: parquetLike(size, flen)})
	}
	// 400 KiB of whole files over a 300 KiB budget: "a" is reduced.
	if f := c.get("a"); f == nil || f.off != size-flen-8 || len(f.data) != flen+8 {
		t.Fatalf("oldest whole file over the budget: %+v, want its footer only", f)
	}
	if c.wholeBytes != 3*size {
		t.Fatalf("whole bytes %d, want %d", c.wholeBytes, 3*size)
	}
	for _, name := range []string{"b", "c", "d"} {
		if f := c.get(name); f == nil || f.off != 0 || int64(len(f.data)) != size {
			t.Fatalf("whole file %s not kept whole before its scan", name)
		}
	}
	(&footerFile{cache: c, name: "b", f: c.get("b")}).Close()
	if f := c.get("b"); f == nil || f.off != size-flen-8 {
		t.Fatalf("scanned whole file: %+v, want its footer only", f)
	}
	if c.wholeBytes != 2*size {
		t.Fatalf("whole bytes after a scan %d, want %d", c.wholeBytes, 2*size)
	}
	// A footer length that does not fit leaves nothing cached, rather than
	// a footer the Parquet reader would misread.
	c.put("e", &footer{size: size, data: parquetLike(size, size)})
	c.scanned("e")
	if f := c.get("e"); f != nil {
		t.Fatalf("a file whose footer length does not fit kept %+v", f)
	}
}
