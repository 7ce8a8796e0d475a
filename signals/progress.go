package signals

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// progress is how far a channel read its partition: every record below
// end was read, and each is done but those in pending. The committed
// offset is the first pending one (end when none is), and the commit's
// metadata names the records past it that are pending still, so that a
// restart passes over those done (those in [committed, end) not
// pending). The metadata is bounded (maxMetaBytes): where the pending
// offsets do not fit, end is lowered to the first that does not, and
// the records from there on are read again after a restart — which the
// tables' checkpoints recognise (snapreq.SignalMark).
type progress struct {
	end     int64
	pending []int64 // sorted
}

// metaPrefix tells the channel's metadata from another use of it.
const metaPrefix = "icecdc-signals/1 "

// maxMetaBytes keeps the metadata under Kafka's default
// offset.metadata.max.bytes (4096).
const maxMetaBytes = 3072

// read adds offset o, read and not done.
func (p *progress) read(o int64) {
	p.pending = append(p.pending, o)
	p.end = o + 1
}

// pass records offset o as read and done.
func (p *progress) pass(o int64) { p.end = o + 1 }

// done marks pending offset o done.
func (p *progress) done(o int64) {
	if i, ok := slices.BinarySearch(p.pending, o); ok {
		p.pending = slices.Delete(p.pending, i, i+1)
	}
}

// commit returns the offset to commit and its metadata.
func (p *progress) commit() (int64, string) {
	if len(p.pending) == 0 {
		return p.end, ""
	}
	base := p.pending[0]
	var b strings.Builder
	b.WriteString(metaPrefix)
	end := p.end
	prev := base
	for i, o := range p.pending[1:] {
		field := strconv.FormatInt(o-prev, 36)
		if b.Len()+len(field)+16 > maxMetaBytes {
			end = p.pending[i+1] // read again from this pending one on
			break
		}
		b.WriteByte(',')
		b.WriteString(field)
		prev = o
	}
	head := strconv.FormatInt(end-base, 36)
	return base, metaPrefix + head + strings.TrimPrefix(b.String(), metaPrefix)
}

// skip is what a restart passes over: the records at or past the
// committed offset (base) that its metadata says are done.
type skip struct {
	base, end int64
	pending   map[int64]bool
	listed    map[int64]bool // instead: the done offsets (an older mark)
}

// done reports whether the record at o was done before the restart.
func (s *skip) done(o int64) bool {
	if s == nil || o < s.base {
		return false
	}
	if s.listed != nil {
		return s.listed[o]
	}
	return o < s.end && !s.pending[o]
}

// parseSkip reads the metadata committed with offset base; nil (with
// the reason) when it is not the channel's.
func parseSkip(base int64, meta string) (*skip, error) {
	if meta == "" {
		return nil, nil
	}
	rest, ok := strings.CutPrefix(meta, metaPrefix)
	if !ok {
		return nil, fmt.Errorf("not a signal channel's metadata")
	}
	if len(meta) > maxMetaBytes {
		return nil, fmt.Errorf("%d bytes, more than %d", len(meta), maxMetaBytes)
	}
	fields := strings.Split(rest, ",")
	n, err := strconv.ParseInt(fields[0], 36, 64)
	if err != nil || n < 1 || base > 1<<62 || n > 1<<62 {
		return nil, fmt.Errorf("end %q: not a length", fields[0])
	}
	s := &skip{base: base, end: base + n, pending: map[int64]bool{base: true}}
	at := base
	for _, f := range fields[1:] {
		d, err := strconv.ParseInt(f, 36, 64)
		if err != nil || d < 1 || d >= s.end-at {
			return nil, fmt.Errorf("offset %q: not a step within the end", f)
		}
		at += d
		s.pending[at] = true
	}
	return s, nil
}
