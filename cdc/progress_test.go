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

	// changes: snapshots and the files their summaries count are known
	// ahead, rows are not; the time left follows the files.
	p.Begin("changes", 4, 10, 0)
	clock = clock.Add(2 * time.Second)
	p.Add(1, 2, 500)
	clock = clock.Add(50 * time.Millisecond)
	p.Add(1, 3, 500) // within Every of the last line: not drawn
	if got := out.String(); got != "\r\x1b[Kchanges: 1/4 snapshots, 2/10 files, 500 rows, 250 rows/s, ETA 8s" {
		t.Fatalf("progress line %q", got)
	}
	clock = clock.Add(950 * time.Millisecond)
	out.Reset()
	p.Add(0, 0, 0)
	if got := out.String(); got != "\r\x1b[Kchanges: 2/4 snapshots, 5/10 files, 1000 rows, 333 rows/s, ETA 3s" {
		t.Fatalf("progress line %q", got)
	}
	out.Reset()
	p.Done()
	if out.String() != "\r\x1b[K" {
		t.Fatalf("Done wrote %q, want the line cleared", out.String())
	}

	// Files not counted (a summary without counts): no files, and the
	// time left follows the snapshots.
	out.Reset()
	p.Begin("changes", 4, 0, 0)
	clock = clock.Add(2 * time.Second)
	p.Add(1, 0, 500)
	if got := out.String(); got != "\r\x1b[Kchanges: 1/4 snapshots, 500 rows, 250 rows/s, ETA 6s" {
		t.Fatalf("progress line %q", got)
	}

	// An initial read: its files are done as their rows are (ends 3, 3
	// (a file without live rows), 7, 10), resumed after 2 rows; the time
	// left follows the rows.
	out.Reset()
	p.Begin("initial read of shop.orders", 0, 0, 10)
	p.FilesByRows([]int{3, 3, 7, 10})
	p.Add(0, 0, 2)
	for _, step := range []struct {
		rows int64
		want string
	}{
		{0, "0/4 files, 2/10 rows, 2 rows/s, ETA 4s"},
		{1, "2/4 files, 3/10 rows"},
		{3, "2/4 files, 6/10 rows"},
		{1, "3/4 files, 7/10 rows"},
		{3, "4/4 files, 10/10 rows"},
	} {
		out.Reset()
		clock = clock.Add(time.Second)
		p.Add(0, 0, step.rows)
		if got := out.String(); !strings.HasPrefix(got, "\r\x1b[Kinitial read of shop.orders: "+step.want) {
			t.Fatalf("progress line %q, want it to start with %q", got, step.want)
		}
	}
	p.Done()

	// Without a terminal nothing is drawn, ever.
	silent := NewProgress(nil)
	silent.Begin("initial read", 0, 0, 10)
	silent.FilesByRows([]int{10})
	silent.Add(1, 0, 10)
	silent.Done()
	var nilP *Progress
	nilP.FilesByRows(nil)
	nilP.Add(1, 1, 1)
}
