package source

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// Local files: iceberg-go's LocalFS opens with os.Open and reads without
// bound, so a named pipe as a manifest list blocks the open for ever (a
// FIFO's open waits for a writer), a directory or device is read as if it
// were a file, and a file system that stops answering (a hung NFS mount)
// stalls the table with no error while the daemon reports itself ready.
// localIO replaces it: every open refuses what is not a regular file
// without waiting on it, and every call into the file system is bounded in
// time the way an object store's requests are (s3.request-timeout).

// localTimeout bounds one call into the local file system: an open with
// its path resolution, one read, a stat or a seek. A local disk answers in
// milliseconds; a minute is the object stores' read timeout.
var localTimeout = 60 * time.Second

// localChunk is the most one bounded read asks of the file system: each
// read goes into a buffer of the file's own (see bounded), taken from
// chunks, and is copied to the caller's.
const localChunk = 1 << 20

var chunks = sync.Pool{New: func() any { b := make([]byte, localChunk); return &b }}

// errStuck says a call into the local file system did not return in time.
type errStuck struct{ after time.Duration }

func (e *errStuck) Error() string {
	return fmt.Sprintf("no answer from the file system within %s", e.after)
}

func (e *errStuck) Timeout() bool { return true }

// errNotRegular refuses a file that is not a regular file.
type errNotRegular struct{ kind string }

func (e *errNotRegular) Error() string { return "not a regular file: " + e.kind }

// kindOf names a file mode for errNotRegular.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}

// localIO is the file IO of a table on the local file system.
type localIO struct{}

var _ iceio.IO = localIO{}

// Open opens a regular file, following symbolic links.
func (localIO) Open(name string) (iceio.File, error) { return openLocal(name, nil) }

// Remove removes name; icecdc itself never removes files.
func (localIO) Remove(name string) error {
	p, err := localPath(name)
	if err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return os.Remove(p)
}

// localPath is the path the local file system knows name by, as
// iceberg-go's LocalFS resolves it (file: URIs unescaped) and cleaned as
// the allowed locations compare it: the file checked is the file opened.
func localPath(name string) (string, error) {
	if isObjectStore(name) {
		return "", errors.New("not a local file")
	}
	return normalise(name)
}

// openLocal opens name, refusing anything but a regular file. With locs,
// the path is first resolved through every symbolic link and the result
// checked against them (see locations.checkResolved). The whole is bounded
// by localTimeout: resolving and opening a file on a file system that does
// not answer blocks in the kernel, out of reach of a context.
func openLocal(name string, locs *locations) (iceio.File, error) {
	p, err := localPath(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	type opened struct {
		f   *os.File
		err error
	}
	done := make(chan opened, 1)
	go func() {
		f, err := openResolved(p, locs)
		done <- opened{f, err}
	}()
	t := time.NewTimer(localTimeout)
	defer t.Stop()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, o.err
		}
		return &localFile{f: o.f, name: p}, nil
	case <-t.C:
		// The open may still succeed: its file is closed then.
		go func() {
			if o := <-done; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, &fs.PathError{Op: "open", Path: p, Err: &errStuck{localTimeout}}
	}
}

func openResolved(p string, locs *locations) (*os.File, error) {
	if locs == nil {
		return openRegular(p, p, false)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	if err := locs.checkResolved(real); err != nil {
		return nil, err
	}
	// Not following a link at the last step refuses one put in place
	// after the path was resolved.
	return openRegular(p, real, true)
}

// localFile is an open local file whose every call is bounded by
// localTimeout. Once a call has timed out the file answers every later one
// with that error: the call still blocked holds it.
type localFile struct {
	f     *os.File
	name  string
	stuck atomic.Pointer[fs.PathError]
}

var _ iceio.File = (*localFile)(nil)

// bounded runs call on a buffer of its own, len(p) bytes at most
// localChunk, and copies what it read into p. A call that does not return
// in time is left running on its buffer, never on the caller's, which the
// caller may reuse as soon as bounded returns.
func (f *localFile) bounded(op string, p []byte, call func([]byte) (int, error)) (int, error) {
	if e := f.stuck.Load(); e != nil {
		return 0, e
	}
	var bp *[]byte
	var buf []byte
	if len(p) > 0 {
		bp = chunks.Get().(*[]byte)
		buf = (*bp)[:min(len(p), localChunk)]
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := call(buf)
		done <- result{n, err}
	}()
	t := time.NewTimer(localTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		if bp != nil {
			copy(p, buf[:r.n])
			chunks.Put(bp)
		}
		return r.n, r.err
	case <-t.C:
		e := &fs.PathError{Op: op, Path: f.name, Err: &errStuck{localTimeout}}
		f.stuck.CompareAndSwap(nil, e)
		return 0, e
	}
}

func (f *localFile) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return f.bounded("read", p, f.f.Read)
}

// ReadAt reads len(p) bytes, a chunk at a time, each bounded.
func (f *localFile) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		at := off + int64(n)
		m, err := f.bounded("read", p[n:], func(b []byte) (int, error) { return f.f.ReadAt(b, at) })
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Seek and Stat read what their call set only when it returned in time:
// one left running may still set it.
func (f *localFile) Seek(offset int64, whence int) (int64, error) {
	var pos int64
	if _, err := f.bounded("seek", nil, func([]byte) (int, error) {
		var err error
		pos, err = f.f.Seek(offset, whence)
		return 0, err
	}); err != nil {
		return 0, err
	}
	return pos, nil
}

func (f *localFile) Stat() (fs.FileInfo, error) {
	var fi fs.FileInfo
	if _, err := f.bounded("stat", nil, func([]byte) (int, error) {
		var err error
		fi, err = f.f.Stat()
		return 0, err
	}); err != nil {
		return nil, err
	}
	return fi, nil
}

// Close does not wait for a call still blocked: the descriptor is released
// when that call returns.
func (f *localFile) Close() error { return f.f.Close() }

var _ io.ReaderAt = (*localFile)(nil)
