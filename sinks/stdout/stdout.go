package stdout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/icecdc/icecdc/cdc"
)

var _ cdc.Sink = (*Sink)(nil)

var errClosed = errors.New("stdout sink is closed")

// maxKeptBuffer is the largest encoding buffer kept between writes: above
// a default batch's lines (about 4 MiB of values, chunk_bytes, plus the
// event ids), or the buffer is grown again from nothing every write, as
// the file sink's was.
const maxKeptBuffer = 16 << 20

// Sink writes JSON lines to an io.Writer. It is safe for concurrent use.
type Sink struct {
	// Encoding says where a value carries its event id (AppendLines).
	Encoding cdc.Encoding

	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	closed bool
}

// New returns a Sink writing to w, or to os.Stdout when w is nil. Close
// does not close w: the caller owns it.
func New(w io.Writer) *Sink {
	if w == nil {
		w = os.Stdout
	}
	return &Sink{w: w}
}

// flusher is what buffered writers (bufio.Writer) offer; a batch is only
// confirmed once it left the buffer.
type flusher interface{ Flush() error }

// Write writes b's messages as lines, in order, in one call to the writer.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if b == nil || len(b.Messages) == 0 {
		return nil
	}
	buf, err := AppendLines(s.buf[:0], b.Messages, s.Encoding)
	if err != nil {
		return err
	}
	// Keep the buffer for the next batch unless one huge batch made it
	// large: a daemon should not hold its peak forever.
	if cap(buf) <= maxKeptBuffer {
		s.buf = buf
	}
	if _, err := s.w.Write(buf); err != nil {
		return writeError("write events", err)
	}
	if f, ok := s.w.(flusher); ok {
		if err := f.Flush(); err != nil {
			return writeError("flush events", err)
		}
	}
	return nil
}

// writeError marks the failures that no retry can fix as permanent: the
// reader of the pipe went away (`icecdc changes | head`), or the writer was
// closed under the sink.
func writeError(op string, err error) error {
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		return cdc.Permanent(fmt.Errorf("%s: %w", op, err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// Close flushes a buffering writer and stops further writes; it does not
// close the writer.
func (s *Sink) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if f, ok := s.w.(flusher); ok {
		if err := f.Flush(); err != nil {
			return writeError("flush events", err)
		}
	}
	return nil
}

// AppendLines appends the JSON-lines form of msgs to dst: each Value with
// its event id as the member cdc.EventIDField (enc.AppendValueWithID),
// then '\n'. A nil Value (a Kafka-style tombstone) is written as null, and
// a value holding line breaks (indented JSON) is compacted, so that one
// event is always exactly one line. A value that spans lines and is not
// JSON cannot be framed: the error names the event and wraps
// cdc.ErrPermanent, since sending it again cannot help. The file sink
// shares this encoding.
func AppendLines(dst []byte, msgs []cdc.Message, enc cdc.Encoding) ([]byte, error) {
	for i := range msgs {
		m := &msgs[i]
		switch v := m.Value; {
		case v == nil:
			dst = append(dst, "null"...)
		case bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0:
			start := len(dst)
			c := bytes.NewBuffer(dst)
			if err := json.Compact(c, v); err != nil {
				return dst, cdc.Permanent(fmt.Errorf("event %s: value spans lines and is not JSON (%w)", m.ID, err))
			}
			dst = enc.AddEventID(c.Bytes(), start, m.ID)
		default:
			dst = enc.AppendValueWithID(dst, m)
		}
		dst = append(dst, '\n')
	}
	return dst, nil
}

// RetainsNoBatch says that Write keeps nothing of a batch: the writer
// must not retain what it is given (io.Writer's contract).
func (s *Sink) RetainsNoBatch() {}
