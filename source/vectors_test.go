package source

import (
	"fmt"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/icecdc/icecdc/dv"
)

// vectorEntry is a manifest entry of a vector in a Puffin file.
type vectorEntry struct {
	iceberg.ManifestEntry
	f fakeFile
}

func (e vectorEntry) DataFile() iceberg.DataFile { return vectorFile{e.f} }

// vectorFile names the data file the vector is for.
type vectorFile struct{ fakeFile }

func (vectorFile) ReferencedDataFile() *string { s := "s3://b/t/data.parquet"; return &s }

// countingIO counts opens and ranged reads.
type countingIO struct {
	iceio.IO
	opens, reads int
}

func (c *countingIO) Open(name string) (iceio.File, error) {
	c.opens++
	f, err := c.IO.Open(name)
	return countingFile{f, c}, err
}

type countingFile struct {
	iceio.File
	c *countingIO
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	f.c.reads++
	return f.File.ReadAt(p, off)
}

// TestReadDVs: vectors of one Puffin file lying close together share one
// read, one far away gets its own, and each vector gets its own result: a
// corrupt blob or a range past the end fails that vector alone.
func TestReadDVs(t *testing.T) {
	var file []byte
	var reads []dvRead
	add := func(gap int, positions ...uint64) {
		file = append(file, make([]byte, gap)...)
		blob, err := dv.Encode(roaring64.BitmapOf(positions...))
		if err != nil {
			t.Fatal(err)
		}
		off, size := int64(len(file)), int64(len(blob))
		file = append(file, blob...)
		reads = append(reads, dvRead{vectorEntry{f: fakeFile{content: iceberg.EntryContentPosDeletes, count: int64(len(positions)), offset: &off, bytes: &size}}, 100})
	}
	add(4, 1, 2)
	add(0, 3)
	add(10, 4, 5, 6)
	add(dvGap+1, 7) // far: a second read
	add(0, 8)
	file[len(file)-3] ^= 0xff // the last blob's CRC no longer matches
	past, size := int64(len(file)-4), int64(20)
	reads = append(reads, dvRead{vectorEntry{f: fakeFile{content: iceberg.EntryContentPosDeletes, count: 1, offset: &past, bytes: &size}}, 100})
	mem := iceio.NewMemFS()
	if err := mem.WriteFile("s3://b/t/f", file); err != nil {
		t.Fatal(err)
	}
	fs := &countingIO{IO: mem}
	res := readDVs(fs, "s3://b/t/f", reads)
	if fs.opens != 1 || fs.reads != 2 {
		t.Errorf("%d opens and %d reads, want 1 and 2", fs.opens, fs.reads)
	}
	for i, want := range []string{"[1 2]", "[3]", "[4 5 6]", "[7]"} {
		if res[i].err != nil || fmt.Sprint(res[i].bm.ToArray()) != want {
			t.Errorf("vector %d: %v %v, want %s", i, res[i].bm, res[i].err, want)
		}
	}
	if res[4].err == nil || !strings.Contains(res[4].err.Error(), "read deletion vector s3://b/t/f") {
		t.Errorf("corrupt vector: %v", res[4].err)
	}
	if res[5].err == nil || !strings.Contains(res[5].err.Error(), "past the end of the file") {
		t.Errorf("vector past the end: %v", res[5].err)
	}
}
