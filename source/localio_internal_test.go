package source

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLocalReadBounded: a read the file system does not answer returns an
// error naming the file after localTimeout, instead of blocking; the call
// left running never writes into the caller's buffer, and later calls
// fail at once. A named pipe with no writer stands in for a file system
// that stopped answering: its read blocks in the same way (localIO itself
// never opens one: it is opened here directly).
func TestLocalReadBounded(t *testing.T) {
	old := localTimeout
	localTimeout = 200 * time.Millisecond
	defer func() { localTimeout = old }()
	p := filepath.Join(t.TempDir(), "stuck")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	// Read and write: the open does not wait for a writer.
	fifo, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fifo.Close()
	f := &localFile{f: fifo, name: p}
	buf := bytes.Repeat([]byte{'.'}, 16)
	done := make(chan error, 1)
	go func() { _, err := f.Read(buf); done <- err }()
	select {
	case err := <-done:
		var stuck *errStuck
		if !errors.As(err, &stuck) || !isTimeout(err) || err.Error() != "read "+p+": no answer from the file system within 200ms" {
			t.Fatalf("got %v", err)
		}
	case <-time.After(20 * time.Second): // a hang guard only
		t.Fatal("the read blocked")
	}
	for _, call := range []func() error{
		func() error { _, err := f.ReadAt(buf, 0); return err },
		func() error { _, err := f.Stat(); return err },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "no answer") {
			t.Fatalf("a call after the stuck one: %v, want its error", err)
		}
	}
	// The stuck read now gets its bytes; the caller's buffer keeps its own.
	if _, err := fifo.Write([]byte("0123456789abcdef")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if string(buf) != strings.Repeat(".", 16) {
		t.Fatalf("the abandoned read wrote into the caller's buffer: %q", buf)
	}
}

// TestLocalReadAtChunks: a read larger than a chunk is read whole.
func TestLocalReadAtChunks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	want := bytes.Repeat([]byte("0123456789"), localChunk/4)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := localIO{}.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := make([]byte, len(want)-7)
	if n, err := f.ReadAt(got, 7); err != nil || n != len(got) || !bytes.Equal(got, want[7:]) {
		t.Fatalf("ReadAt: %d, %v", n, err)
	}
	if n, err := f.ReadAt(make([]byte, 10), int64(len(want)-5)); n != 5 || err == nil {
		t.Fatalf("ReadAt past the end: %d, %v", n, err)
	}
}
