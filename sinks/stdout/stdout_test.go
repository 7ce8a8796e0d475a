package stdout

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
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
		if want := fmt.Sprintf(`{"n":%d}`, i); l != want {
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
		{Value: []byte(`{"a":1}`)},
		{Value: nil},
		{Value: []byte("{\n  \"b\": \"x\\ny\"\n}")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\"a\":1}\nnull\n{\"b\":\"x\\ny\"}\n"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	_, err = AppendLines(nil, []cdc.Message{{ID: "e1", Value: []byte("not\njson")}})
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
// compares, rebuilding each event id from the value's source block.
func readLines(data []byte) ([]sinktest.Received, error) {
	var out []sinktest.Received
	for line := range bytes.Lines(data) {
		if !bytes.HasSuffix(line, []byte("\n")) {
			return nil, fmt.Errorf("torn last line %.80q", line)
		}
		v := bytes.TrimSuffix(line, []byte("\n"))
		var d struct {
			Op     string `json:"op"`
			Source struct {
				TableUUID string      `json:"table_uuid"`
				Seq       json.Number `json:"sequence_number"`
				RowID     json.Number `json:"row_id"`
			} `json:"source"`
		}
		if err := json.Unmarshal(v, &d); err != nil || len(d.Op) != 1 {
			return nil, fmt.Errorf("not a debezium value: %.80q", v)
		}
		seq, err1 := strconv.ParseInt(string(d.Source.Seq), 10, 64)
		row, err2 := strconv.ParseInt(string(d.Source.RowID), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		op := cdc.Op(d.Op[0])
		out = append(out, sinktest.Received{ID: cdc.EventID(d.Source.TableUUID, seq, row, op), Op: op, Value: bytes.Clone(v)})
	}
	return out, nil
}
