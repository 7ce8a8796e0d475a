package source

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
)

// spills counts the commits that spilled their before images (for tests).
var spills atomic.Int64

// imageChunk is the unit in which a store holds images in memory: chunks
// are allocated whole and never grown, so that what is held is what was
// counted, with no copy in flight.
const imageChunk = 1 << 20

// imageStore holds encoded row images by slot (an update's rank among the
// commit's updated row ids), written in one order and read in another. It
// keeps them in memory up to budget bytes, counted as chunks are
// allocated, and past that moves them to a temporary file, read back by
// offset. An offset is the record's place in the sequence of all bytes
// written, in memory (chunk starts, then position in the chunk) or file.
type imageStore struct {
	budget int64
	dir    string  // for the temporary file; "" is the system's
	offs   []int64 // slot → offset of its record, -1 when empty
	chunks [][]byte
	starts []int64 // offset of each chunk's first byte
	held   int64   // bytes of chunks allocated
	f      *os.File
	w      *bufio.Writer
	size   int64 // bytes written, in memory or file
	buf    []byte
}

// newImageStore makes a store of n slots. The slot index itself counts
// against budget.
func newImageStore(n int, budget int64, dir string) *imageStore {
	s := &imageStore{budget: budget - 8*int64(n), dir: dir, offs: make([]int64, n)}
	for i := range s.offs {
		s.offs[i] = -1
	}
	return s
}

// spilled reports whether the images went to a file.
func (s *imageStore) spilled() bool { return s.f != nil }

// put stores rec in slot.
func (s *imageStore) put(slot int, rec []byte) error {
	if s.offs[slot] >= 0 {
		return fmt.Errorf("row image slot %d written twice", slot)
	}
	s.buf = binary.AppendUvarint(s.buf[:0], uint64(len(rec)))
	n := len(s.buf) + len(rec)
	if s.f == nil {
		k := len(s.chunks) - 1
		if k < 0 || len(s.chunks[k])+n > cap(s.chunks[k]) {
			size := max(imageChunk, n)
			if s.held+int64(size) > s.budget {
				if err := s.spill(); err != nil {
					return err
				}
			} else {
				s.chunks = append(s.chunks, make([]byte, 0, size))
				s.starts = append(s.starts, s.size)
				s.held += int64(size)
				k++
			}
		}
		if s.f == nil {
			s.chunks[k] = append(append(s.chunks[k], s.buf...), rec...)
			s.offs[slot] = s.size
			s.size += int64(n)
			return nil
		}
	}
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("spill row images to %s: %w", s.f.Name(), err)
	}
	if _, err := s.w.Write(rec); err != nil {
		return fmt.Errorf("spill row images to %s: %w", s.f.Name(), err)
	}
	s.offs[slot] = s.size
	s.size += int64(n)
	return nil
}

// spill moves the images held so far to a temporary file, which is
// unlinked at once on systems that allow it: it disappears with the
// process, whatever happens.
func (s *imageStore) spill() error {
	f, err := os.CreateTemp(s.dir, "icecdc-images-*")
	if err != nil {
		return fmt.Errorf("spill row images: %w", err)
	}
	_ = os.Remove(f.Name()) // best effort: where it fails, close removes it
	spills.Add(1)
	s.f, s.w = f, bufio.NewWriterSize(f, 1<<16)
	for _, c := range s.chunks {
		if _, err := s.w.Write(c); err != nil {
			return fmt.Errorf("spill row images to %s: %w", f.Name(), err)
		}
	}
	s.chunks, s.starts, s.held = nil, nil, 0
	return nil
}

// done ends the writes; the store is read from here on.
func (s *imageStore) done() error {
	if s.w == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("spill row images to %s: %w", s.f.Name(), err)
	}
	s.w = nil
	return nil
}

// get returns the record of slot (nil, false when empty). The bytes are
// valid until the next get.
func (s *imageStore) get(slot int) ([]byte, bool, error) {
	off := s.offs[slot]
	if off < 0 {
		return nil, false, nil
	}
	if s.f == nil {
		k := sort.Search(len(s.starts), func(i int) bool { return s.starts[i] > off }) - 1
		c := s.chunks[k][off-s.starts[k]:]
		n, w := binary.Uvarint(c)
		if w <= 0 || uint64(len(c)-w) < n {
			return nil, false, errShortImage
		}
		return c[w : w+int(n)], true, nil
	}
	// One read fetches the length and, for most rows, the whole record.
	const guess = 512
	if cap(s.buf) < guess {
		s.buf = make([]byte, guess)
	}
	b := s.buf[:min(guess, s.size-off)]
	if _, err := s.f.ReadAt(b, off); err != nil {
		return nil, false, fmt.Errorf("read spilled row images %s: %w", s.f.Name(), err)
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || int64(n) > s.size-off-int64(k) {
		return nil, false, fmt.Errorf("spilled row images %s, offset %d: %w", s.f.Name(), off, errShortImage)
	}
	if int64(k)+int64(n) <= int64(len(b)) {
		return b[k : k+int(n)], true, nil
	}
	rec := make([]byte, n)
	if _, err := s.f.ReadAt(rec, off+int64(k)); err != nil {
		return nil, false, fmt.Errorf("read spilled row images %s: %w", s.f.Name(), err)
	}
	return rec, true, nil
}

// close releases the memory and the file.
func (s *imageStore) close() {
	s.chunks, s.starts, s.offs = nil, nil, nil
	if s.f != nil {
		name := s.f.Name()
		_ = s.f.Close()
		_ = os.Remove(name) // already gone where unlinking an open file works
		s.f = nil
	}
}
