package cdc

import (
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	var out strings.Builder
	p := NewProgress(&out)
	clock := time.Unix(1000, 0)
	p.now = func() time.Time { return clock }
	p.Begin("changes", 4, 0)
	clock = clock.Add(2 * time.Second)
	p.Add(1, 500)
	clock = clock.Add(50 * time.Millisecond)
	p.Add(1, 500) // within Every of the last line: not drawn
	if got := out.String(); got != "\r\x1b[Kchanges: 1/4 snapshots, 500 rows, 250 rows/s, ETA 6s" {
		t.Fatalf("progress line %q", got)
	}
	clock = clock.Add(time.Second)
	out.Reset()
	p.Add(0, 0)
	if got := out.String(); !strings.Contains(got, "2/4 snapshots, 1000 rows") || !strings.Contains(got, "ETA 3s") {
		t.Fatalf("progress line %q", got)
	}
	out.Reset()
	p.Done()
	if out.String() != "\r\x1b[K" {
		t.Fatalf("Done wrote %q, want the line cleared", out.String())
	}

	// Without a terminal nothing is drawn, ever.
	silent := NewProgress(nil)
	silent.Begin("initial read", 0, 10)
	silent.Add(1, 10)
	silent.Done()
	var nilP *Progress
	nilP.Add(1, 1)
}
