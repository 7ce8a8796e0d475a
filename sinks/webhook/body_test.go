package webhook

import (
	"sync/atomic"
	"testing"
)

// A request's body buffer is reused for the next request only once the
// transport closed every reader of it, and only when it is large enough.
func TestSpareBodyTake(t *testing.T) {
	open := new(atomic.Int32)
	r := request{body: make([]byte, 10, 100), open: open}
	b1, b2 := openBody(r), openBody(r) // a first attempt and its rewind
	sp := spareBody{buf: r.body, open: open}
	if got := sp.take(50); cap(got) == 100 {
		t.Fatal("reused a body two readers still read")
	}
	b1.Close()
	b1.Close() // a second Close counts once
	sp = spareBody{buf: r.body, open: open}
	if got := sp.take(50); cap(got) == 100 {
		t.Fatal("reused a body one reader still reads")
	}
	b2.Close()
	sp = spareBody{buf: r.body, open: open}
	if got := sp.take(200); cap(got) == 100 {
		t.Fatal("reused a body smaller than asked for")
	}
	sp = spareBody{buf: r.body, open: open}
	if got := sp.take(50); cap(got) != 100 || len(got) != 0 {
		t.Fatalf("got len %d cap %d, want the spare buffer emptied", len(got), cap(got))
	}
	if sp.buf != nil {
		t.Fatal("the spare buffer is still held after it was taken")
	}
}
