package daemontest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
)

// The tests of this file drive the on-demand snapshot (POST /snapshot,
// `icecdc snapshot`) and the retention hold's removal (`icecdc reset`)
// through the binary, as an operator does.

const adhocToken = "daemontest-token-0123456789"

// snapshotStarted is the line `icecdc snapshot` prints once the read's
// start is checkpointed.
var snapshotStarted = regexp.MustCompile(`^snapshot of (\S+) started: the rows of snapshot (\d+) \(sequence number (\d+)\)`)

// askSnapshot runs `icecdc snapshot -c cfg --table table` and returns the
// snapshot id it reports.
func askSnapshot(t *testing.T, r *rig, cfg, table string) int64 {
	t.Helper()
	out, err := runIcecdc(r.bin, "snapshot", "-c", cfg, "--table", table)
	if err != nil {
		t.Fatalf("icecdc snapshot --table %s: %v: %s", table, err, out)
	}
	m := snapshotStarted.FindStringSubmatch(strings.TrimSpace(out))
	if m == nil || m[1] != table {
		t.Fatalf("icecdc snapshot --table %s printed %q", table, out)
	}
	id, _ := strconv.ParseInt(m[2], 10, 64)
	return id
}

// rEvents decodes the read's events (op r) of the table with uuid from the
// file, as a consumer does, keeping the first of each id.
func rEvents(t *testing.T, path, uuid string, killed bool) (firsts []replay.Event, total int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(raw, '\n'); killed && i < len(raw)-1 {
		// A SIGKILL can land in the middle of a write: the torn last line
		// is the unconfirmed chunk's, which the restarted daemon sends
		// again. A daemon stopped cleanly never leaves one.
		raw = raw[:i+1]
	}
	seen := map[string]bool{}
	for n, line := range bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n")) {
		if !bytes.Contains(line, []byte(`"op":"r"`)) || !bytes.Contains(line, []byte(uuid)) {
			continue
		}
		var ev replay.Event
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&ev); err != nil {
			t.Fatalf("%s line %d: %v", path, n+1, err)
		}
		total++
		id := cdc.EventID(uuid, ev.Source.Seq, ev.Source.RowID, 'r')
		if !seen[id] {
			seen[id] = true
			firsts = append(firsts, ev)
		}
	}
	return firsts, total
}

// checkRead checks a read's events (repeats dropped) against the live rows
// of the snapshot, read by the oracle: one event per live row, with its
// values, event_index 0..n-1 in order, all of that snapshot.
func checkRead(t *testing.T, r *rig, table string, snapID int64, evs []replay.Event) {
	t.Helper()
	tbl, err := r.env.LoadTable(t.Context(), catalog.ToIdentifier(table))
	if err != nil {
		t.Fatal(err)
	}
	live, err := replay.Live(t.Context(), tbl, snapID)
	if err != nil {
		t.Fatal(err)
	}
	got := replay.State{}
	for i, ev := range evs {
		if ev.Source.EventIndex != i || ev.Source.SnapshotID != snapID {
			t.Fatalf("read event %d (row %d) has event_index %d of snapshot %d; want %d of %d",
				i, ev.Source.RowID, ev.Source.EventIndex, ev.Source.SnapshotID, i, snapID)
		}
		if _, dup := got[ev.Source.RowID]; dup {
			t.Fatalf("read event %d repeats row %d under another index", i, ev.Source.RowID)
		}
		got[ev.Source.RowID] = ev.After
	}
	if d := replay.Diff(got, live); d != "" {
		t.Fatalf("the read of snapshot %d differs from its live rows:\n%.2000s", snapID, d)
	}
}

// TestSnapshotCommand asks a running daemon for an on-demand snapshot with
// `icecdc snapshot`: the table's rows arrive as r events between the
// commit the checkpoint stood at and the next one, exactly the live rows,
// while the other table goes on. An unknown table and a wrong token are
// refused with one line naming them.
func TestSnapshotCommand(t *testing.T) {
	ctx := t.Context()
	r, events := fileRig(t, "shop.orders", "shop.items")
	r.conf.Token = adhocToken
	r.rewrite()
	orders, err := newWriter(ctx, r.env, "shop.orders", 1)
	if err != nil {
		t.Fatal(err)
	}
	items, err := newWriter(ctx, r.env, "shop.items", 2)
	if err != nil {
		t.Fatal(err)
	}
	commitAppends(t, orders, 2)
	if orders.tbl, err = scenario.Delete(ctx, orders.tbl, in(orders.pick(2))); err != nil {
		t.Fatal(err)
	}
	commitAppends(t, items, 2)
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, "shop.orders", d, 30*time.Second)
	waitCaughtUp(t, r.bin, r.cfg, "shop.items", d, 30*time.Second)

	at := orders.tbl.CurrentSnapshot()
	if got := askSnapshot(t, r, r.cfg, "shop.orders"); got != at.SnapshotID {
		t.Fatalf("the snapshot read is of snapshot %d, want the checkpoint's %d", got, at.SnapshotID)
	}
	// The next commits of both tables, each delivered.
	commitAppends(t, orders, 1)
	commitAppends(t, items, 1)
	waitCaughtUp(t, r.bin, r.cfg, "shop.orders", d, 30*time.Second)
	waitCaughtUp(t, r.bin, r.cfg, "shop.items", d, 30*time.Second)

	// Refusals, each one line naming what is wrong; the daemon goes on.
	out, err := runIcecdc(r.bin, "snapshot", "-c", r.cfg, "--table", "shop.nope")
	if err == nil || !strings.Contains(out, "shop.nope") || !strings.Contains(out, "404") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Errorf("icecdc snapshot of an unknown table: %v: %q; want a failure, one line naming shop.nope (404)", err, out)
	}
	wrong := *r
	wrong.cfg = r.cfg + ".wrong-token.yaml"
	wrong.conf.Token = "not-" + adhocToken
	wrong.rewrite()
	out, err = runIcecdc(r.bin, "snapshot", "-c", wrong.cfg, "--table", "shop.orders")
	if err == nil || !strings.Contains(out, "401") || !strings.Contains(out, "token") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Errorf("icecdc snapshot with a wrong token: %v: %q; want a failure, one line saying 401 and token", err, out)
	}
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT: exit %d", code)
	}

	uuid := orders.tbl.Metadata().TableUUID().String()
	reads, total := rEvents(t, events, uuid, false)
	if total != len(reads) {
		t.Fatalf("the read repeated %d events without a crash", total-len(reads))
	}
	checkRead(t, r, "shop.orders", at.SnapshotID, reads)

	// Where the read sits: after every event of the commits up to the
	// checkpoint's snapshot, before every event of the next commit.
	stream := eventsOf(t, events, uuid)
	want, _, err := expectedEvents(ctx, r.env, "shop.orders")
	if err != nil {
		t.Fatal(err)
	}
	var changes []event
	first, last := -1, -1
	for i, e := range stream {
		if e.Op == "r" {
			if first < 0 {
				first = i
			}
			last = i
			continue
		}
		changes = append(changes, e)
		if first >= 0 && e.Seq <= at.SequenceNumber {
			t.Fatalf("event %s of a commit up to the read's snapshot comes after the read", e)
		}
		if first < 0 && e.Seq > at.SequenceNumber {
			t.Fatalf("event %s of a later commit comes before the read", e)
		}
	}
	if first < 0 || last-first+1 != len(reads) {
		t.Fatalf("the read's %d events are not one block of the stream (from %d to %d)", len(reads), first, last)
	}
	if _, err := checkStream(changes, want, crashChunk); err != nil {
		t.Fatalf("shop.orders, the read left out: %v", err)
	}
	itemsWant, _, err := expectedEvents(ctx, r.env, "shop.items")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkStream(eventsOf(t, events, items.tbl.Metadata().TableUUID().String()), itemsWant, crashChunk); err != nil {
		t.Fatalf("shop.items: %v", err)
	}
	t.Logf("shop.orders: %d change events, a read of %d rows between seq %d and the next commit", len(changes), len(reads), at.SequenceNumber)
}

// TestSnapshotResumesAfterKill SIGKILLs the daemon in the middle of an
// on-demand snapshot's read: the restarted daemon resumes the read from
// its checkpointed index, so that with repeated ids dropped the read is
// every live row once, by index, the repeats are only the unconfirmed
// chunk, and the stream then goes on with the next commit.
func TestSnapshotResumesAfterKill(t *testing.T) {
	ctx := t.Context()
	r, events := fileRig(t)
	r.conf.Token = adhocToken
	r.rewrite()
	w, err := newWriter(ctx, r.env, r.table, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Enough rows that the read takes hundreds of chunks.
	const rows = 30000
	if w.tbl, err = scenario.Append(ctx, w.tbl, w.rows(rows, "new")); err != nil {
		t.Fatal(err)
	}
	if w.tbl, err = scenario.Delete(ctx, w.tbl, in(w.span(500))); err != nil {
		t.Fatal(err)
	}
	at := w.tbl.CurrentSnapshot()
	uuid := w.tbl.Metadata().TableUUID().String()
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 60*time.Second)
	if got := askSnapshot(t, r, r.cfg, r.table); got != at.SnapshotID {
		t.Fatalf("the snapshot read is of snapshot %d, want %d", got, at.SnapshotID)
	}
	// Kill once a few chunks of the read are in the file (nothing else
	// is written to it after the request), far from its end.
	size0 := fileSize(t, events)
	for deadline := time.Now().Add(60 * time.Second); linesAfter(t, events, size0) < 5*crashChunk; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) || d.exited() {
			t.Fatalf("not %d read events within 60s (daemon exited: %v)", 5*crashChunk, d.exited())
		}
	}
	d.kill(t)
	_, before := rEvents(t, events, uuid, true)
	live := rows - 500
	if before >= live {
		t.Fatalf("the kill came after the whole read (%d events): the test proves nothing; make the table larger", before)
	}
	cp, _ := loadCheckpoint(t, r.state, r.pipeline, r.table)
	if !cp.Initial || cp.Done || cp.SnapshotID != at.SnapshotID || cp.Next == 0 {
		t.Fatalf("after the kill the checkpoint is %s, want one inside the read of snapshot %d, past its start", cp, at.SnapshotID)
	}

	d = r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 60*time.Second)
	commitAppends(t, w, 1)
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 60*time.Second)
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT: exit %d", code)
	}
	reads, total := rEvents(t, events, uuid, false)
	checkRead(t, r, r.table, at.SnapshotID, reads)
	if repeats := total - len(reads); repeats > crashChunk {
		t.Fatalf("the restart re-sent %d read events, more than the one unconfirmed chunk (%d)", repeats, crashChunk)
	}

	// The whole stream: the changes, the read (as first delivered, by
	// index) and the commit after it, with only chunk re-sends repeated.
	want, _, err := expectedEvents(ctx, r.env, r.table)
	if err != nil {
		t.Fatal(err)
	}
	firstR := map[int]event{}
	all := eventsOf(t, events, uuid)
	for _, e := range all {
		if _, ok := firstR[e.Index]; e.Op == "r" && !ok {
			firstR[e.Index] = e
		}
	}
	var full []event
	for _, e := range want {
		if e.Seq <= at.SequenceNumber {
			full = append(full, e)
		}
	}
	for i := range len(firstR) { // checkRead found indexes 0..n-1
		full = append(full, firstR[i])
	}
	for _, e := range want {
		if e.Seq > at.SequenceNumber {
			full = append(full, e)
		}
	}
	st, err := checkStream(all, full, crashChunk)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed after %d of %d read events (checkpoint at index %d); %d repeated after the restart, in %d re-send",
		before, live, cp.Next, st.Repeats, st.Resends)
}

// linesAfter counts the lines of the file after byte offset off.
func linesAfter(t *testing.T, path string, off int64) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, off, 1<<40))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestResetRemovesHold: `icecdc reset --table` removes the retention branch
// the daemon placed on a table of a SQL catalog, and says so.
func TestResetRemovesHold(t *testing.T) {
	ctx := t.Context()
	r, _ := fileRig(t)
	r.conf.Tables[0].Hold = true
	r.conf.HoldInterval = 10 * time.Millisecond
	r.rewrite()
	w, err := newWriter(ctx, r.env, r.table, 1)
	if err != nil {
		t.Fatal(err)
	}
	tbl := commitAppends(t, w, 3)
	head := tbl.CurrentSnapshot().SnapshotID
	ref := cdc.HoldRef(r.pipeline)
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 30*time.Second)
	held := func() (int64, bool) {
		tbl, err := r.env.LoadTable(ctx, catalog.ToIdentifier(r.table))
		if err != nil {
			t.Fatal(err)
		}
		for name, rf := range tbl.Metadata().Refs() {
			if name == ref {
				return rf.SnapshotID, true
			}
		}
		return 0, false
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if id, ok := held(); ok && id == head {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ref %s at the head %d within 30s", ref, head)
		}
	}
	// A reset while the daemon runs is refused (the state file is locked)
	// and leaves the hold.
	if out, err := runIcecdc(r.bin, "reset", "-c", r.cfg, "--table", r.table); err == nil {
		t.Fatalf("icecdc reset while the daemon runs: %s", out)
	}
	if _, ok := held(); !ok {
		t.Fatal("a refused reset removed the hold")
	}
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT: exit %d", code)
	}
	if _, ok := held(); !ok {
		t.Fatal("the daemon's shutdown removed the hold: it must outlive the process")
	}
	out, err := runIcecdc(r.bin, "reset", "-c", r.cfg, "--table", r.table)
	if err != nil {
		t.Fatalf("icecdc reset: %v: %s", err, out)
	}
	if want := fmt.Sprintf("reset %s/%s: removed its retention hold %s", r.pipeline, r.table, ref); !strings.Contains(out, want) {
		t.Errorf("icecdc reset printed %q, want %q", out, want)
	}
	if _, ok := held(); ok {
		t.Fatalf("after icecdc reset the table still has %s", ref)
	}
	if got := tbl.CurrentSnapshot().SnapshotID; got != head {
		t.Fatalf("main moved to %d", got)
	}
}

// TestHoldMovesAfterIntervalOnQuietTable: a commit made within
// hold_interval of the hold's last move is delivered at once while the
// move waits for the interval; the move is then made when the interval
// has passed, although no other commit comes and the SQL catalog checks
// the table in bulk (its follower parks until the catalog says it
// changed, or a safety reload minutes away).
func TestHoldMovesAfterIntervalOnQuietTable(t *testing.T) {
	ctx := t.Context()
	const interval = 3 * time.Second
	r, events := fileRig(t)
	r.conf.Tables[0].Hold = true
	r.conf.HoldInterval = interval
	r.rewrite()
	w, err := newWriter(ctx, r.env, r.table, 1)
	if err != nil {
		t.Fatal(err)
	}
	head := commitAppends(t, w, 2).CurrentSnapshot().SnapshotID
	ref := cdc.HoldRef(r.pipeline)
	load := func() *table.Table {
		tbl, err := r.env.LoadTable(ctx, catalog.ToIdentifier(r.table))
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	waitRef := func(want int64, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			for name, rf := range load().Metadata().Refs() {
				if name == ref && rf.SnapshotID == want {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("ref %s not at snapshot %d within %s", ref, want, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	d := r.start()
	waitRef(head, 30*time.Second)
	placed := time.Now()
	// The next commit, within the interval of that move. The hold's
	// commits move the table's metadata: the writer loads it first, and
	// loads again and retries if a hold commit came between (as any
	// writer to a held table must; docs/operations.md).
	var next int64
	for {
		got, err := scenario.Append(ctx, load(), w.rows(3, "new"))
		if errors.Is(err, table.ErrCommitFailed) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		w.tbl, next = got, got.CurrentSnapshot().SnapshotID
		break
	}
	if time.Since(placed) >= interval {
		t.Logf("the commit came %s after the hold's move, not within hold_interval %s: this run does not check the held-back move", time.Since(placed), interval)
	}
	for deadline := time.Now().Add(30 * time.Second); linesAfter(t, events, 0) < 9; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the third commit was not delivered within 30s (%d events)", linesAfter(t, events, 0))
		}
	}
	// Due at placed+interval; a few polls' slack beyond it.
	waitRef(next, interval+10*time.Second)
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT: exit %d", code)
	}
}
