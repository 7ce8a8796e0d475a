// Package slowio is a test helper that stands in for a proxy in front of
// an object store: a local file IO that waits a fixed delay on every
// request an object store serves with a round trip, and counts them.
//
// The requests are those of iceberg-go's object-store IO (io/gocloud): an
// Open is a GET whose body is streamed, so reading the file from its start
// costs nothing more; every ReadAt is a ranged GET; a Read after a Seek
// that moved is a new ranged GET; ReadFile is one GET. Stat answers from
// the Open (the GET's headers). Writes are not delayed: the helper is for
// readers.
package slowio

import (
	"context"
	"io"
	"io/fs"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// IO is the delaying file IO over local files.
type IO struct {
	iceio.LocalFS
	delay    atomic.Int64 // nanoseconds
	requests atomic.Int64
	opens    atomic.Int64

	mu    sync.Mutex
	reads []Read // with Record
	rec   bool
}

// Read is one ranged read of a file, or with Len -1 its open.
type Read struct {
	Name     string
	Off, Len int64
}

// Record starts or stops keeping every open and ranged read, for Reads.
func (s *IO) Record(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec, s.reads = on, nil
}

// Reads returns the ranged reads made since Record(true).
func (s *IO) Reads() []Read {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Read(nil), s.reads...)
}

// SetDelay sets the delay every request waits from now on.
func (s *IO) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// Requests returns how many requests were made so far, and how many of
// them were Opens (or ReadFiles).
func (s *IO) Requests() (total, opens int64) { return s.requests.Load(), s.opens.Load() }

// Reset sets the counts to zero.
func (s *IO) Reset() { s.requests.Store(0); s.opens.Store(0) }

func (s *IO) request() {
	s.requests.Add(1)
	if d := s.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
}

func (s *IO) Open(name string) (iceio.File, error) {
	s.opens.Add(1)
	s.request()
	s.record(Read{Name: name, Len: -1})
	f, err := s.LocalFS.Open(name)
	if err != nil {
		return nil, err
	}
	return &file{File: f, io: s, name: name}, nil
}

func (s *IO) ReadFile(name string) ([]byte, error) {
	s.opens.Add(1)
	s.request()
	return s.LocalFS.ReadFile(name)
}

// file counts the ranged reads of one open file.
type file struct {
	iceio.File
	io   *IO
	name string

	mu    sync.Mutex
	moved bool // a Seek moved the stream: the next Read is a new request
}

func (s *IO) record(r Read) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec {
		s.reads = append(s.reads, r)
	}
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	f.io.request()
	f.io.record(Read{Name: f.name, Off: off, Len: int64(len(p))})
	return f.File.ReadAt(p, off)
}

func (f *file) Read(p []byte) (int, error) {
	f.mu.Lock()
	moved := f.moved
	f.moved = false
	f.mu.Unlock()
	if moved {
		f.io.request()
	}
	return f.File.Read(p)
}

func (f *file) Seek(offset int64, whence int) (int64, error) {
	cur, err := f.File.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	n, err := f.File.Seek(offset, whence)
	if err == nil && n != cur {
		f.mu.Lock()
		f.moved = true
		f.mu.Unlock()
	}
	return n, err
}

func (f *file) Stat() (fs.FileInfo, error) { return f.File.Stat() }

// Install makes every local file IO that iceberg-go creates from now on
// (the "file" scheme and plain paths) the returned IO, until restore is
// called. Tests and benchmarks that install it must not run in parallel
// with others that read local tables.
func Install() (s *IO, restore func()) {
	s = &IO{}
	factory := func(context.Context, *url.URL, map[string]string) (iceio.IO, error) { return s, nil }
	swap := func(f iceio.SchemeFactory) {
		for _, scheme := range []string{"file", ""} {
			iceio.Unregister(scheme)
			iceio.Register(scheme, f)
		}
	}
	swap(factory)
	return s, func() {
		swap(func(context.Context, *url.URL, map[string]string) (iceio.IO, error) { return iceio.LocalFS{}, nil })
	}
}
