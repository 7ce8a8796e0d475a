package cdc

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress shows how far a long run is, on one line rewritten in place
// (snapshots and rows done, the rate, an estimate of the time left), for a
// person watching a terminal. A Progress made with a nil writer does
// nothing: callers give it their stderr only when it is a terminal, so
// logs and pipes never see it. Lines are drawn at most every Every
// (default 200ms), and Done clears the line. Safe for concurrent use.
type Progress struct {
	w     io.Writer
	Every time.Duration
	now   func() time.Time

	mu                sync.Mutex
	what              string
	start, drawn      time.Time
	snaps, snapsTotal int
	rows, rowsTotal   int64
	visible           bool
}

// NewProgress returns a Progress drawing on w, or a silent one when w is nil.
func NewProgress(w io.Writer) *Progress {
	return &Progress{w: w, Every: 200 * time.Millisecond, now: time.Now}
}

// Begin starts a run of what (e.g. "changes", "initial read of shop.orders")
// over snapshots snapshots and rowsTotal rows (0 when unknown).
func (p *Progress) Begin(what string, snapshots int, rowsTotal int64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.what, p.snapsTotal, p.rowsTotal = what, snapshots, rowsTotal
	p.snaps, p.rows = 0, 0
	p.start, p.drawn = p.now(), time.Time{}
}

// Add records snapshots and rows done, and redraws when it is time.
func (p *Progress) Add(snapshots int, rows int64) {
	if p == nil || p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snaps += snapshots
	p.rows += rows
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
	if p.rowsTotal > 0 {
		line += fmt.Sprintf(" %d/%d rows", p.rows, p.rowsTotal)
	} else {
		line += fmt.Sprintf(" %d rows", p.rows)
	}
	if s := elapsed.Seconds(); s > 0 {
		line += fmt.Sprintf(", %.0f rows/s", float64(p.rows)/s)
	}
	// Time left, from the share done: of rows when their total is known,
	// else of snapshots.
	frac := 0.0
	switch {
	case p.rowsTotal > 0:
		frac = float64(p.rows) / float64(p.rowsTotal)
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
