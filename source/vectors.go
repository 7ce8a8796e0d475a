package source

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/icecdc/icecdc/dv"
)

// A writer puts the vectors of one commit into few Puffin files (Spark: one
// per task), side by side. So the vectors of a commit are read by Puffin
// file: one open, and one ranged read per run of blobs lying close
// together, instead of one open and one read per vector.
const (
	dvGap    = 64 << 10 // blobs this close share a read
	dvRunMax = 8 << 20  // a shared read is no larger, unless one blob is
)

// readDV reads the deletion vector of entry e (see readDVs).
func readDV(fs iceio.IO, e iceberg.ManifestEntry, recordCount int64) (*roaring64.Bitmap, error) {
	r := readDVs(fs, e.DataFile().FilePath(), []dvRead{{e, recordCount}})[0]
	return r.bm, r.err
}

// readDVs reads vectors of the Puffin file path, each checked against the
// manifest's cardinality and its data file's record count (which the
// caller has checked against the file). A vector's range must lie inside
// the Puffin file and be no larger than its positions can need, so a
// corrupt manifest cannot make it allocate more; a read shared by blobs
// spans no more than dvRunMax bytes beyond what they hold. Each vector
// gets its own result: one vector's error is not another's.
func readDVs(fs iceio.IO, path string, reads []dvRead) []dvResult {
	out := make([]dvResult, len(reads))
	var todo []int
	for i, d := range reads {
		if err := checkDV(d.e, d.count); err != nil {
			out[i].err = err
		} else {
			todo = append(todo, i)
		}
	}
	fail := func(idx []int, err func(df iceberg.DataFile) error) {
		for _, i := range idx {
			out[i].err = err(reads[i].e.DataFile())
		}
	}
	if len(todo) == 0 {
		return out
	}
	f, err := fs.Open(path)
	if err != nil {
		fail(todo, func(iceberg.DataFile) error { return fileError("open", "deletion vector file", path, err) })
		return out
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		fail(todo, func(iceberg.DataFile) error { return fmt.Errorf("stat deletion vector file %s: %w", path, err) })
		return out
	}
	end := st.Size()
	inside := todo[:0]
	for _, i := range todo {
		off, size := dvRange(reads[i].e.DataFile())
		if off > end || size > end-off {
			out[i].err = fmt.Errorf("deletion vector file %s: content_offset %d + content_size_in_bytes %d past the end of the file (%d bytes)", path, off, size, end)
			continue
		}
		inside = append(inside, i)
	}
	slices.SortFunc(inside, func(a, b int) int {
		oa, _ := dvRange(reads[a].e.DataFile())
		ob, _ := dvRange(reads[b].e.DataFile())
		return cmp.Compare(oa, ob)
	})
	for len(inside) > 0 {
		// A run: blobs in offset order while the next one is close and the
		// read stays within dvRunMax.
		lo, hi := dvRange(reads[inside[0]].e.DataFile())
		hi += lo
		n := 1
		for ; n < len(inside); n++ {
			off, size := dvRange(reads[inside[n]].e.DataFile())
			if off-hi > dvGap || max(hi, off+size)-lo > dvRunMax {
				break
			}
			hi = max(hi, off+size)
		}
		run := inside[:n]
		inside = inside[n:]
		buf := make([]byte, hi-lo)
		if k, err := f.ReadAt(buf, lo); k < len(buf) {
			if err == nil {
				err = fmt.Errorf("read %d bytes at offset %d: got %d", len(buf), lo, k)
			}
			fail(run, func(df iceberg.DataFile) error {
				return fmt.Errorf("read deletion vector %s at offset %d for data file %s: %w", path, *df.ContentOffset(), *df.ReferencedDataFile(), err)
			})
			continue
		}
		src := bytes.NewReader(buf)
		for _, i := range run {
			df := reads[i].e.DataFile()
			off, size := dvRange(df)
			bm, err := dv.ReadAt(src, off-lo, size, df.Count(), reads[i].count)
			if err != nil {
				out[i].err = fmt.Errorf("read deletion vector %s at offset %d for data file %s: %w", path, off, *df.ReferencedDataFile(), err)
				continue
			}
			out[i].bm = bm
		}
	}
	return out
}

// checkDV checks what the manifest says of a vector before it is read.
func checkDV(e iceberg.ManifestEntry, recordCount int64) error {
	df := e.DataFile()
	if df.ContentOffset() == nil || df.ContentSizeInBytes() == nil {
		return fmt.Errorf("deletion vector in %s: manifest has no content_offset/content_size_in_bytes", df.FilePath())
	}
	if err := checkEntry(e, -1); err != nil {
		return err
	}
	size, card := *df.ContentSizeInBytes(), df.Count()
	if card > recordCount {
		return fmt.Errorf("deletion vector file %s: record_count %d above the %d rows of data file %s", df.FilePath(), card, recordCount, *df.ReferencedDataFile())
	}
	if most := dv.MaxSize(card, recordCount); size > most {
		return fmt.Errorf("deletion vector file %s: content_size_in_bytes %d for %d positions of data file %s, which need at most %d bytes", df.FilePath(), size, card, *df.ReferencedDataFile(), most)
	}
	return nil
}

// dvRange is a checked vector's byte range in its Puffin file.
func dvRange(df iceberg.DataFile) (off, size int64) {
	return *df.ContentOffset(), *df.ContentSizeInBytes()
}
