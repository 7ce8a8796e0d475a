package file

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

func batch(from, n int) *cdc.Batch {
	b := &cdc.Batch{}
	for i := from; i < from+n; i++ {
		b.Messages = append(b.Messages, cdc.Message{ID: fmt.Sprint(i), Value: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	return b
}

func wantLines(n int) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "{\"n\":%d,\"__event_id\":\"%d\"}\n", i, i)
	}
	return sb.String()
}

func TestAppendSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "events.jsonl")
	if _, err := Open(path); err == nil {
		t.Fatal("Open in a missing directory: no error")
	}
	path = filepath.Join(t.TempDir(), "events.jsonl")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i += 10 {
		if err := s.Write(t.Context(), batch(i, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), batch(0, 1)); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close = %v, want os.ErrClosed", err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != Perm {
		t.Fatalf("stat: %v, mode %v", err, st.Mode())
	}

	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), batch(30, 10)); err != nil {
		t.Fatal(err)
	}
	// Read while still open: confirmed writes are in the file already.
	if got, _ := os.ReadFile(path); string(got) != wantLines(40) {
		t.Fatalf("file holds\n%s\nwant 40 lines in order", got)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCutsTornLine(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"torn after lines", wantLines(3) + `{"n":3,"pa`, wantLines(3)},
		{"only a torn line", `{"n":0`, ""},
		{"torn line longer than a read", wantLines(2) + strings.Repeat("x", 10000), wantLines(2)},
		{"whole lines", wantLines(2), wantLines(2)},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			n := strings.Count(tc.want, "\n")
			if err := s.Write(t.Context(), batch(n, 2)); err != nil {
				t.Fatal(err)
			}
			s.Close(t.Context())
			if got, _ := os.ReadFile(path); string(got) != wantLines(n+2) {
				t.Fatalf("file holds %q, want %q", got, wantLines(n+2))
			}
		})
	}
}

func TestFailedWriteIsCutBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	r := &fileReader{path: path, s: s}
	if err := s.Write(t.Context(), batch(0, 3)); err != nil {
		t.Fatal(err)
	}
	r.FailTransiently(1)
	err = s.Write(t.Context(), batch(3, 3))
	if err == nil || errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("partial write: %v, want a retryable error", err)
	}
	if got, _ := os.ReadFile(path); string(got) != wantLines(3) {
		t.Fatalf("after a partial write the file holds %q, want the 3 confirmed lines", got)
	}
	if err := s.Write(t.Context(), batch(3, 3)); err != nil {
		t.Fatal(err)
	}
	r.FailPermanently()
	if err := s.Write(t.Context(), batch(6, 1)); !errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("failed fsync: %v, want ErrPermanent", err)
	}
	r.s.sync = s.f.Sync
	if err := s.Write(t.Context(), batch(7, 1)); !errors.Is(err, cdc.ErrPermanent) {
		t.Fatalf("Write after a failed fsync: %v, want the sticky permanent error", err)
	}
}

// TestContract runs the sink contract suite on a file in a temporary
// directory; the Reader reads the file back.
func TestContract(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
		path := filepath.Join(t.TempDir(), "events.jsonl")
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return s, &fileReader{path: path, s: s}
	})
}

// fileReader reads the event file as a consumer would, and makes the
// sink's writes fail: transiently with a partial write (a full disk), which
// the sink must cut back, permanently with a failed fsync.
type fileReader struct {
	path string
	s    *Sink
}

func (r *fileReader) TotalOrder() bool { return true }

func (r *fileReader) FailTransiently(n int) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	write := r.s.f.Write
	r.s.write = func(p []byte) (int, error) {
		if n == 0 {
			return write(p)
		}
		n--
		k, _ := write(p[:len(p)/2])
		return k, &os.PathError{Op: "write", Path: r.path, Err: syscall.ENOSPC}
	}
}

func (r *fileReader) FailPermanently() {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.s.sync = func() error { return &os.PathError{Op: "sync", Path: r.path, Err: syscall.EIO} }
}

func (r *fileReader) ReadAll(context.Context) ([]sinktest.Received, error) {
	data, err := os.ReadFile(r.path)
	if err != nil {
		return nil, err
	}
	var out []sinktest.Received
	for line := range bytes.Lines(data) {
		if !bytes.HasSuffix(line, []byte("\n")) {
			return nil, fmt.Errorf("torn last line %.80q", line)
		}
		rec, err := sinktest.ReadEnvelopeLine(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}
