package source

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"sync/atomic"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// A data file's Parquet footer is read once (docs/contract.md, step 7). readLayout reads
// it to plan row groups, with one ranged read of the file's tail, and keeps
// the footer bytes here; iceberg-go's reader, which parses the footer again
// each time it scans the file, opens the file through footerIO and is
// served those bytes from memory. Data files are immutable, so a path
// names one content for the life of the table.

// tailRead is how much of a data file's end readLayout reads at once: the
// footer of most files fits, so one request reads it. A file no larger is
// read whole and kept whole: its scans need no request at all.
const tailRead = 64 << 10

// wholeRead is the largest data file readLayout reads whole, from the
// stream its open began, and keeps until its first scan (footerFile.Close)
// instead of reading the tail and then the column chunks: on an object
// store a round trip (20–60 ms) costs about as much as transferring 1 MiB
// on one connection, so for such a file one request is faster than the
// three or four dependent ones a footer read and a scan make. Streaming
// writers (Flink checkpoints, small MERGE outputs) write many such files.
var wholeRead int64 = 1 << 20 // a variable for the latency benchmark only

// defaultWholeBudget bounds the bytes of files read whole and not yet
// scanned that a table keeps (a commit that touches more reads the rest
// from their footers, as larger files).
const defaultWholeBudget = 64 << 20

// defaultFooterBudget bounds the bytes of footers (and small files) a
// table keeps: enough for the files of a large commit, between reading
// their footers and scanning them, and for many later commits' footers.
const defaultFooterBudget = 16 << 20

// footer is the last bytes of a data file, from off to its end at size:
// the Thrift footer, its length and the magic.
type footer struct {
	size, off int64
	data      []byte
	// shredChecked: the file's shredded variants agree with their values
	// (shredcheck.go), so a later layout of it need not read them again.
	shredChecked atomic.Bool
}

// transient reports whether f is a whole file larger than a tail read:
// kept whole until its first scan only (wholeRead).
func (f *footer) transient() bool { return f.off == 0 && f.size > tailRead }

// tail returns f reduced to the Thrift footer, its length and the magic,
// in a copy of its own (nil when the length does not fit the bytes held).
func (f *footer) tail() *footer {
	n := int64(len(f.data))
	if n < 8 {
		return nil
	}
	need := int64(binary.LittleEndian.Uint32(f.data[n-8:])) + 8
	if need > n {
		return nil
	}
	return &footer{size: f.size, off: f.size - need, data: append([]byte(nil), f.data[n-need:]...)}
}

// footerCache keeps footers by path, least recently used out first, up to
// a budget in bytes, and apart from them, up to their own budget, the
// files read whole (wholeRead) until their first scan. It is safe for
// concurrent use.
type footerCache struct {
	mu     sync.Mutex
	lru    *simplelru.LRU[string, *footer]
	bytes  int64
	budget int64

	wholes      *simplelru.LRU[string, *footer]
	wholeBytes  int64
	wholeBudget int64
}

func newFooterCache(budget int64) *footerCache {
	c := &footerCache{budget: budget, wholeBudget: defaultWholeBudget}
	l, err := simplelru.NewLRU[string, *footer](1<<20, func(_ string, f *footer) { c.bytes -= int64(len(f.data)) })
	if err != nil {
		panic(err) // only for a size <= 0
	}
	w, err := simplelru.NewLRU[string, *footer](1<<20, func(_ string, f *footer) { c.wholeBytes -= int64(len(f.data)) })
	if err != nil {
		panic(err)
	}
	c.lru, c.wholes = l, w
	return c
}

func (c *footerCache) get(name string) *footer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.wholes.Get(name); ok {
		return f
	}
	f, _ := c.lru.Get(name)
	return f
}

func (c *footerCache) put(name string, f *footer) {
	n := int64(len(f.data))
	if f.transient() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if n > c.wholeBudget {
			return
		}
		c.wholes.Add(name, f)
		c.wholeBytes += n
		for c.wholeBytes > c.wholeBudget {
			if k, old, ok := c.wholes.RemoveOldest(); ok {
				c.putLocked(k, old.tail())
			}
		}
		return
	}
	if n > c.budget/8 {
		return // a huge footer would push out many others
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(name, f)
}

func (c *footerCache) putLocked(name string, f *footer) {
	if f == nil || int64(len(f.data)) > c.budget/8 {
		return
	}
	if old, ok := c.lru.Peek(name); ok {
		c.bytes -= int64(len(old.data))
	}
	c.lru.Add(name, f)
	c.bytes += int64(len(f.data))
	for c.bytes > c.budget {
		c.lru.RemoveOldest()
	}
}

// holdsWhole reports whether the cache holds all size bytes of name.
func (c *footerCache) holdsWhole(name string, size int64) bool {
	f := c.get(name)
	return f != nil && f.off == 0 && f.size == size && int64(len(f.data)) == size
}

// scanned is told that a scan of name ended: a file kept whole only until
// then (transient) is reduced to its footer.
func (c *footerCache) scanned(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.wholes.Peek(name)
	if !ok {
		return
	}
	c.wholes.Remove(name)
	c.putLocked(name, f.tail())
}

// readFooter reads the footer of the Parquet file f of size bytes: its tail
// in one ranged read, and the rest of the footer in a second one only when
// the footer is larger than that. A length that does not fit the file is
// left for the Parquet reader to refuse; nothing is read for it. A file
// no larger than wholeRead, still at its start, is read whole from the
// stream its open began: an object store's open is a GET of the whole
// object, so the file costs one request.
func readFooter(f iceio.File, size int64, atStart bool) (*footer, error) {
	if atStart && size > tailRead && size <= wholeRead {
		buf := make([]byte, size)
		if _, err := io.ReadFull(f, buf); err != nil {
			return nil, err
		}
		return &footer{size: size, data: buf}, nil
	}
	n := min(size, tailRead)
	buf := make([]byte, n)
	var err error
	if atStart && n == size {
		_, err = io.ReadFull(f, buf)
	} else {
		_, err = f.ReadAt(buf, size-n)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	out := &footer{size: size, off: size - n, data: buf}
	if n < 8 {
		return out, nil
	}
	need := int64(binary.LittleEndian.Uint32(buf[n-8:])) + 8
	if need <= n || need > size {
		if need <= n && n < size {
			// Keep the footer only; a file read whole is kept whole, so
			// that its scans read nothing more.
			out.off, out.data = size-need, buf[n-need:]
		}
		return out, nil
	}
	head := make([]byte, need-n)
	if _, err := f.ReadAt(head, size-need); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	out.off, out.data = size-need, append(head, buf...)
	return out, nil
}

// has reports whether the footer holds the bytes [off, off+n).
func (f *footer) has(off int64, n int) bool {
	return off >= f.off && off+int64(n) <= f.size
}

// readAt serves p from the footer; has(off, len(p)) must hold.
func (f *footer) readAt(p []byte, off int64) int {
	return copy(p, f.data[off-f.off:])
}

// footerReader is a file of which only the footer is known: enough for
// the Parquet reader to parse the file's metadata, and nothing else.
type footerReader struct {
	f   *footer
	pos int64
}

func (r *footerReader) ReadAt(p []byte, off int64) (int, error) {
	if !r.f.has(off, len(p)) {
		return 0, fmt.Errorf("bytes %d..%d are outside the footer read (%d..%d)", off, off+int64(len(p)), r.f.off, r.f.size)
	}
	return r.f.readAt(p, off), nil
}

func (r *footerReader) Read(p []byte) (int, error) {
	n, err := r.ReadAt(p, r.pos)
	r.pos += int64(n)
	return n, err
}

func (r *footerReader) Seek(offset int64, whence int) (int64, error) {
	return seek(&r.pos, r.f.size, offset, whence)
}

func seek(pos *int64, size, offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += *pos
	case io.SeekEnd:
		offset += size
	default:
		return *pos, errors.New("seek: bad whence")
	}
	if offset < 0 {
		return *pos, errors.New("seek: negative position")
	}
	*pos = offset
	return offset, nil
}

// footerIO serves the footers in its cache: a file whose footer is known
// is opened lazily, on the first read outside it, so that re-reading the
// footer costs no request at all.
type footerIO struct {
	inner iceio.IO
	cache *footerCache
}

var _ iceio.IO = (*footerIO)(nil)

func (f *footerIO) Open(name string) (iceio.File, error) {
	if ft := f.cache.get(name); ft != nil {
		return &footerFile{io: f.inner, cache: f.cache, name: name, f: ft}, nil
	}
	return f.inner.Open(name)
}

func (f *footerIO) Remove(name string) error { return f.inner.Remove(name) }

// footerFile is a data file whose footer is in memory; the file itself is
// opened when a read needs bytes before the footer.
type footerFile struct {
	io    iceio.IO
	cache *footerCache
	name  string
	f     *footer

	mu    sync.Mutex
	inner iceio.File
	whole *footer // the file read whole (wholeFile)
	err   error
	pos   int64 // for Read and Seek
}

var _ iceio.File = (*footerFile)(nil)

func (f *footerFile) open() (iceio.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inner == nil && f.err == nil {
		f.inner, f.err = f.io.Open(f.name)
	}
	return f.inner, f.err
}

func (f *footerFile) ReadAt(p []byte, off int64) (int, error) {
	if f.f.has(off, len(p)) {
		return f.f.readAt(p, off), nil
	}
	if w, err := f.wholeFile(); w != nil || err != nil {
		if err != nil {
			return 0, err
		}
		if off < 0 || off+int64(len(p)) > w.size {
			return 0, fmt.Errorf("bytes %d..%d are outside the file's %d bytes", off, off+int64(len(p)), w.size)
		}
		return w.readAt(p, off), nil
	}
	in, err := f.open()
	if err != nil {
		return 0, err
	}
	return in.ReadAt(p, off)
}

// wholeFile returns the whole file when it is no larger than wholeRead
// (nil otherwise): read from the stream its open began, in the one
// request of the open, and kept until Close, instead of a ranged read per
// column chunk.
func (f *footerFile) wholeFile() (*footer, error) {
	if f.f.size > wholeRead {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.whole != nil || f.err != nil {
		return f.whole, f.err
	}
	if f.inner != nil {
		return nil, nil // opened before, not at its start
	}
	in, err := f.io.Open(f.name)
	if err != nil {
		f.err = err
		return nil, err
	}
	defer in.Close()
	buf := make([]byte, f.f.size)
	if _, err := io.ReadFull(in, buf); err != nil {
		f.err = err
		return nil, err
	}
	f.whole = &footer{size: f.f.size, data: buf}
	return f.whole, nil
}

func (f *footerFile) Read(p []byte) (int, error) {
	if f.pos >= f.f.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), f.f.size-f.pos)]
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *footerFile) Seek(offset int64, whence int) (int64, error) {
	return seek(&f.pos, f.f.size, offset, whence)
}

func (f *footerFile) Stat() (fs.FileInfo, error) { return footerInfo{f}, nil }

func (f *footerFile) Close() error {
	if f.f.transient() {
		f.cache.scanned(f.name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inner == nil {
		return nil
	}
	err := f.inner.Close()
	f.inner, f.err = nil, errors.New("file already closed")
	return err
}

// footerInfo describes a footerFile from what its footer read learnt.
type footerInfo struct{ f *footerFile }

func (i footerInfo) Name() string       { return path.Base(i.f.name) }
func (i footerInfo) Size() int64        { return i.f.f.size }
func (i footerInfo) Mode() fs.FileMode  { return 0o444 }
func (i footerInfo) ModTime() time.Time { return time.Time{} }
func (i footerInfo) IsDir() bool        { return false }
func (i footerInfo) Sys() any           { return nil }
