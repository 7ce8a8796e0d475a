package cdc

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// Progress shows how far a long run is, on one line rewritten in place
// (snapshots, files and rows done, the rate, an estimate of the time
// left), for a person watching a terminal. A Progress made with a nil
// writer does nothing: callers give it their stderr only when it is a
// terminal, so logs and pipes never see it. Lines are drawn at most every
// Every (default 200ms), and Done clears the line. Safe for concurrent use.
type Progress struct {
	w     io.Writer
	Every time.Duration
	now   func() time.Time

	mu                sync.Mutex
	what              string
	start, drawn      time.Time
	snaps, snapsTotal int
	files, filesTotal int
	fileEnds          []int // see FilesByRows
	rows, rowsTotal   int64
	visible           bool
}

// NewProgress returns a Progress drawing on w, or a silent one when w is nil.
func NewProgress(w io.Writer) *Progress {
	return &Progress{w: w, Every: 200 * time.Millisecond, now: time.Now}
}

// Begin starts a run of what (e.g. "changes", "initial read of shop.orders")
// over snapshots snapshots, files files and rowsTotal rows (each 0 when
// unknown or not counted).
func (p *Progress) Begin(what string, snapshots, files int, rowsTotal int64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.what, p.snapsTotal, p.filesTotal, p.rowsTotal = what, snapshots, files, rowsTotal
	p.snaps, p.files, p.rows, p.fileEnds = 0, 0, 0, nil
	p.start, p.drawn = p.now(), time.Time{}
}

// FilesByRows makes the files done follow the rows done, for a read whose
// rows come file after file: file i is done once ends[i] rows are (see
// Commit.FileEnds). It sets the files of the run to len(ends).
func (p *Progress) FilesByRows(ends []int) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fileEnds, p.filesTotal = ends, len(ends)
}

// Add records snapshots, files and rows done, and redraws when it is time.
func (p *Progress) Add(snapshots, files int, rows int64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snaps += snapshots
	p.files += files
	p.rows += rows
	if p.fileEnds != nil {
		// The files whose rows are all done: those with ends[i] <= rows
		// (ascending, so they come first).
		p.files, _ = slices.BinarySearch(p.fileEnds, int(p.rows)+1)
	}
	if now := p.now(); now.Sub(p.drawn) >= p.Every {
		p.drawn = now
		p.draw(now)
	}
}

// Done clears the progress line.
func (p *Progress) Done() {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.visible {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.visible = false
	}
}

func (p *Progress) draw(now time.Time) {
	elapsed := now.Sub(p.start)
	line := p.what + ":"
	if p.snapsTotal > 0 {
		line += fmt.Sprintf(" %d/%d snapshots,", p.snaps, p.snapsTotal)
	}
	if p.filesTotal > 0 {
		line += fmt.Sprintf(" %d/%d files,", p.files, p.filesTotal)
	}
	if p.rowsTotal > 0 {
		line += fmt.Sprintf(" %d/%d rows", p.rows, p.rowsTotal)
	} else {
		line += fmt.Sprintf(" %d rows", p.rows)
	}
	if s := elapsed.Seconds(); s > 0 {
		line += fmt.Sprintf(", %.0f rows/s", float64(p.rows)/s)
	}
	// Time left, from the share done: of rows when their total is known,
	// else of files, else of snapshots.
	frac := 0.0
	switch {
	case p.rowsTotal > 0:
		frac = float64(p.rows) / float64(p.rowsTotal)
	case p.filesTotal > 0:
		frac = float64(p.files) / float64(p.filesTotal)
	case p.snapsTotal > 0:
		frac = float64(p.snaps) / float64(p.snapsTotal)
	}
	if frac > 0 && frac < 1 {
		left := time.Duration(float64(elapsed) * (1 - frac) / frac)
		line += ", ETA " + left.Round(time.Second).String()
	}
	fmt.Fprint(p.w, "\r\x1b[K"+line)
	p.visible = true
}
