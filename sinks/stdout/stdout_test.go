package stdout

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
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

func TestLinesInOrder(t *testing.T) {
	var out bytes.Buffer
	bw := bufio.NewWriterSize(&out, 1<<16)
	s := New(bw)
	for i := 0; i < 100; i += 10 {
		if err := s.Write(t.Context(), batch(i, 10)); err != nil {
			t.Fatal(err)
		}
		// Confirmed means out of the buffer.
		if got := strings.Count(out.String(), "\n"); got != i+10 {
			t.Fatalf("after batch %d: %d lines reached the writer, want %d", i/10, got, i+10)
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for i, l := range lines {
		if want := fmt.Sprintf(`{"n":%d,"__event_id":"%d"}`, i, i); l != want {
			t.Fatalf("line %d = %s, want %s", i, l, want)
		}
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(t.Context(), batch(0, 1)); err == nil {
		t.Fatal("Write after Close: no error")
	}
}

func TestAppendLines(t *testing.T) {
	got, err := AppendLines(nil, []cdc.Message{
		{ID: "u:1:0:c", Value: []byte(`{"a":1}`)},
		{ID: "u:1:0:d", Value: nil},
		{ID: "u:1:1:c", Value: []byte("{\n  \"b\": \"x\\ny\"\n}\n")},
		{ID: "u:1:2:c", Value: []byte(`{}`)},
		{ID: "u:1:3:c", Value: []byte(`[1]`)},
	}, cdc.Encoding{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":1,"__event_id":"u:1:0:c"}` + "\nnull\n" + `{"b":"x\ny","__event_id":"u:1:1:c"}` + "\n" +
		`{"__event_id":"u:1:2:c"}` + "\n[1]\n"
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	// A Connect value carries it in its payload, the envelope.
	got, err = AppendLines(nil, []cdc.Message{{ID: "u:1:0:c", Value: []byte("{\"schema\":{},\n\"payload\":{\"op\":\"c\"}}")}}, cdc.Encoding{ValuePayload: true})
	if want := `{"schema":{},"payload":{"op":"c","__event_id":"u:1:0:c"}}` + "\n"; err != nil || string(got) != want {
		t.Fatalf("connect value: %q, %v; want %q", got, err, want)
	}
	_, err = AppendLines(nil, []cdc.Message{{ID: "e1", Value: []byte("not\njson")}}, cdc.Encoding{})
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "e1") {
		t.Fatalf("multi-line non-JSON: %v, want a permanent error naming the event", err)
	}
}

// TestContract runs the sink contract suite on a buffer.
func TestContract(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
		w := &lockedBuffer{}
		return New(w), w
	})
}

// lockedBuffer is a writer the suite can read while the sink writes, and
// make fail: transiently like a full non-blocking pipe (nothing written,
// EAGAIN), permanently like a pipe whose reader left (EPIPE).
type lockedBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	transient int
	permanent bool
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.permanent:
		return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EPIPE}
	case b.transient > 0:
		b.transient--
		return 0, &os.PathError{Op: "write", Path: "/dev/stdout", Err: syscall.EAGAIN}
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) FailPermanently() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.permanent = true
}

func (b *lockedBuffer) FailTransiently(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.transient = n
}

func (b *lockedBuffer) ReadAll(context.Context) ([]sinktest.Received, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return readLines(b.buf.Bytes())
}

func (b *lockedBuffer) TotalOrder() bool { return true }

// readLines parses JSON lines of Debezium values back into what the suite
// compares: the event id each line carries, which must be the id of the
// event its envelope describes, and the value without it.
func readLines(data []byte) ([]sinktest.Received, error) {
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
