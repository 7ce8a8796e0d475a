package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/stdout"
)

var _ cdc.Sink = (*Sink)(nil)

// Perm is the mode of a file Open creates: owner read/write only, since
// events carry row values. An existing file keeps its mode.
const Perm fs.FileMode = 0o600

// maxKeptBuffer is the largest encoding buffer kept between writes. A
// batch holds about chunk_bytes (4 MiB by default) of values, and its
// lines add the event ids: a 4 MiB bound dropped the buffer after every
// default batch, and growing it again from nothing was 7% of a
// debezium-json delivery's CPU.
const maxKeptBuffer = 16 << 20

// Sink appends JSON lines to one file. It is safe for concurrent use.
type Sink struct {
	// Encoding says where a value carries its event id
	// (stdout.AppendLines).
	Encoding cdc.Encoding

	mu     sync.Mutex
	f      *os.File
	path   string
	size   int64 // bytes confirmed so far: the file is cut back here after a failed write
	buf    []byte
	broken error // set after a failed fsync; every later Write returns it

	// Seams for tests, to make writes and syncs fail: f.Write and f.Sync.
	write func([]byte) (int, error)
	sync  func() error
}

// Open opens path for appending, creating it (and syncing its directory,
// so that the new name survives a crash) when it does not exist, and cuts
// off a torn last line left by a crash.
func Open(path string) (*Sink, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, Perm)
	created := err == nil
	if errors.Is(err, fs.ErrExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, Perm)
	}
	if err != nil {
		return nil, fmt.Errorf("open event file: %w", err)
	}
	s := &Sink{f: f, path: path, write: f.Write, sync: f.Sync}
	if created {
		err = syncDir(filepath.Dir(path))
	} else {
		err = s.cutTornLine()
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// cutTornLine truncates the file after its last newline.
func (s *Sink) cutTornLine() error {
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("stat event file: %w", err)
	}
	end := st.Size()
	buf := make([]byte, 4096)
	keep := int64(0)
	for pos := end; pos > 0; {
		n := min(pos, int64(len(buf)))
		pos -= n
		if _, err := s.f.ReadAt(buf[:n], pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read event file %s: %w", s.path, err)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep = pos + int64(i) + 1
			break
		}
	}
	if keep < end {
		if err := s.f.Truncate(keep); err != nil {
			return fmt.Errorf("cut torn line of event file %s: %w", s.path, err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("sync event file %s: %w", s.path, err)
		}
	}
	s.size = keep
	return nil
}

// Write appends b's messages as lines, in order, and fsyncs the file.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("write event file %s: %w", s.path, os.ErrClosed)
	}
	if s.broken != nil {
		return s.broken
	}
	if b == nil || len(b.Messages) == 0 {
		return nil
	}
	buf, err := stdout.AppendLines(s.buf[:0], b.Messages, s.Encoding)
	if err != nil {
		return fmt.Errorf("write event file %s: %w", s.path, err)
	}
	if cap(buf) <= maxKeptBuffer {
		s.buf = buf
	}
	if _, err := s.write(buf); err != nil {
		// Cut a partial write back so that the pipeline's retry does not
		// append after a torn line.
		if terr := s.f.Truncate(s.size); terr != nil {
			s.broken = cdc.Permanent(fmt.Errorf("write event file %s: %w (and cutting back the partial write failed: %v)", s.path, err, terr))
			return s.broken
		}
		return fmt.Errorf("write event file %s: %w", s.path, err)
	}
	if err := s.sync(); err != nil {
		s.broken = cdc.Permanent(fmt.Errorf("sync event file %s: %w; reopen it to continue", s.path, err))
		return s.broken
	}
	s.size += int64(len(buf))
	return nil
}

// Close syncs and closes the file. Writes after Close fail.
func (s *Sink) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	f := s.f
	s.f = nil
	// Every confirmed write was synced already; this only matters for a
	// cut-back after a failed write.
	serr := f.Sync()
	if err := f.Close(); err != nil {
		return fmt.Errorf("close event file %s: %w", s.path, err)
	}
	if serr != nil && s.broken == nil {
		return fmt.Errorf("sync event file %s: %w", s.path, serr)
	}
	return nil
}

// syncDir fsyncs a directory, which makes a new entry in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// RetainsNoBatch says that Write keeps nothing of a batch once written.
func (s *Sink) RetainsNoBatch() {}
