package signals

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func manyTables(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("shop.t%05d", i)
	}
	return out
}

// TestSignalLimits: a record above MaxSignalBytes, an id above
// MaxIDBytes, a data collection's regex too long or too complex and
// too many collections are each refused with one short line naming the
// signal (by its place in the topic when its id is refused), and no
// refusal lists every followed table. On main each was taken (a 20 MiB
// id was logged in full; an 11 KB regex compiled).
func TestSignalLimits(t *testing.T) {
	tables := manyTables(10_000)
	rt := &router{topic: "sig", key: "k", tables: tables, log: slog.New(slog.DiscardHandler)}
	rec := func(offset int64, v string) *kgo.Record {
		return &kgo.Record{Key: []byte("k"), Value: []byte(v), Offset: offset}
	}
	long := strings.Repeat("é", MaxIDBytes)
	cases := []struct {
		name, value, id, why string
	}{
		{"record", `{"id": "big", "type": "execute-snapshot", "data": {"data-collections": ["shop.t00001"], "pad": "` + strings.Repeat("x", MaxSignalBytes) + `"}}`,
			"sig@1", "a record of 1048"},
		{"id", `{"id": "` + long + `", "type": "stop-snapshot"}`, "sig@2", "an id of 512 bytes"},
		{"regex length", `{"id": "r1", "type": "execute-snapshot", "data": {"data-collections": ["` + strings.Repeat("a", MaxPatternBytes+1) + `"]}}`,
			"r1", "longer than 1024 bytes"},
		{"regex size", `{"id": "r2", "type": "execute-snapshot", "data": {"data-collections": ["` + complexPattern() + `"]}}`,
			"r2", "too complex a regular expression"},
		{"collections", `{"id": "r3", "type": "stop-snapshot", "data": {"data-collections": [` + strings.TrimSuffix(strings.Repeat(`"x",`, MaxCollections+1), ",") + `]}}`,
			"r3", "more than 1024 data-collections"},
		{"unknown", `{"id": "r4", "type": "execute-snapshot", "data": {"data-collections": ["shop.none"]}}`,
			"r4", "and 9990 more"},
		{"type", `{"id": "r5", "type": "` + strings.Repeat("t", 10_000) + `"}`, "r5", "(10000 bytes)"},
	}
	for i, c := range cases {
		d := rt.decode(rec(int64(i+1), c.value))
		if d.err == nil {
			t.Errorf("%s: taken, want refused", c.name)
			continue
		}
		msg := d.err.Error()
		if d.a.Signal.ID != c.id || !strings.Contains(msg, c.why) || strings.Contains(msg, "\n") || len(msg) > 1024 ||
			!strings.Contains(msg, fmt.Sprintf("(offset %d)", i+1)) {
			t.Errorf("%s: refused as %q (%d bytes) under id %.40q; want one line under 1 KiB saying %q, under id %q, with its offset", c.name, msg, len(msg), d.a.Signal.ID, c.why, c.id)
		}
	}
	// A refusal for 10,000 tables names 10 of them.
	var log strings.Builder
	n := &Notifier{Connector: "c", Log: slog.New(slog.NewJSONHandler(&log, nil))}
	n.Rejected(Signal{ID: "x"}, KindIncremental, tables, "why")
	if len(log.String()) > 2048 || !strings.Contains(log.String(), `"data_collections_more":"9990"`) {
		t.Errorf("the refusal's notice for 10,000 tables: %d bytes: %.500s", len(log.String()), log.String())
	}
	_ = io.Discard
}

// TestProgressMetadata: the committed metadata names the pending
// offsets past the committed one within maxMetaBytes, however many; a
// restart from it passes over exactly the done offsets it names, and
// reads again from the first pending one it could not name.
func TestProgressMetadata(t *testing.T) {
	for _, n := range []int{0, 1, 5, 1024, 5000} {
		var p progress
		pending := map[int64]bool{}
		for o := int64(100); o < int64(100+3*n+7); o++ {
			if o%3 == 1 && len(pending) < n || o == 100 && n > 0 {
				p.read(o)
				pending[o] = true
			} else {
				p.pass(o)
			}
		}
		at, meta := p.commit()
		if len(meta) > maxMetaBytes {
			t.Fatalf("%d pending: %d bytes of metadata", n, len(meta))
		}
		sk, err := parseSkip(at, meta)
		if err != nil {
			t.Fatalf("%d pending: %v", n, err)
		}
		if n == 0 {
			if at != p.end || sk != nil {
				t.Fatalf("none pending: commit %d %q, want %d and no metadata", at, meta, p.end)
			}
			continue
		}
		if at != 100 {
			t.Fatalf("committed %d, want the first pending, 100", at)
		}
		named := 0
		for o := at; o < p.end; o++ {
			if sk.done(o) && pending[o] {
				t.Fatalf("%d pending: offset %d passed over, but it is pending", n, o)
			}
			if sk.done(o) {
				named++
			} else if !pending[o] && o < sk.end {
				t.Fatalf("%d pending: offset %d, done, read again though named", n, o)
			}
		}
		if n <= 1024 && sk.end != p.end {
			t.Errorf("%d pending: the metadata names offsets up to %d, want %d", n, sk.end, p.end)
		}
		if named == 0 {
			t.Errorf("%d pending: no done offset named", n)
		}
	}
	for _, bad := range []string{"x", metaPrefix, metaPrefix + "zzzzzzzzzzzzzz", metaPrefix + "5,9", metaPrefix + "5,-1", metaPrefix + "5,0"} {
		if sk, err := parseSkip(10, bad); err == nil {
			t.Errorf("parseSkip(%q) = %+v, want an error", bad, sk)
		}
	}
}

// complexPattern is a short regex that compiles to more than 10,000
// instructions: 11 different classes repeated 1,000 times.
func complexPattern() string {
	var alts []string
	for c := 'a'; c <= 'k'; c++ {
		alts = append(alts, fmt.Sprintf("[%c-z]{1000}", c))
	}
	return strings.Join(alts, "|")
}

// TestClusterMark: a partition's mark is bounded however many signals
// wait (on main it listed every done offset past the first that waits,
// without bound), reads back as written, and a mark of an earlier
// icecdc is still read.
func TestClusterMark(t *testing.T) {
	ps := &partSignals{}
	ps.prog.end = 40
	for o := int64(40); o < 40+100_000; o++ {
		if o%20 == 0 {
			ps.prog.read(o)
		} else {
			ps.prog.pass(o)
		}
	}
	m := ps.mark()
	if len(m) > maxMetaBytes+len(markPrefix)+16 {
		t.Fatalf("a mark of %d bytes", len(m))
	}
	next, sk, err := parseMark(m)
	if err != nil || next != 40 {
		t.Fatalf("parseMark: %d, %v", next, err)
	}
	if sk.done(40) || sk.done(60) || !sk.done(41) || !sk.done(59) || sk.done(40+100_000) {
		t.Errorf("the mark read back: %+v", sk)
	}
	next, sk, err = parseMark(`signals:{"next":5,"done":[7,9]}`)
	if err != nil || next != 5 || !sk.done(7) || !sk.done(9) || sk.done(6) || sk.done(8) {
		t.Errorf("an earlier mark: %d, %+v, %v", next, sk, err)
	}
	if _, _, err := parseMark("signals/2 zz!"); err == nil {
		t.Error("a bad mark read")
	}
}
