package daemontest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// The tests of this file check the history-loss rule of docs/delivery.md through the daemon:
// history that no longer continues from a table's checkpoint stops that
// table with an error that says what happened and what to run, and the
// other tables of the pipeline go on.

// commitAppends appends n small commits through w and returns the table.
func commitAppends(t *testing.T, w *writer, n int) *table.Table {
	t.Helper()
	for range n {
		next, err := scenario.Append(t.Context(), w.tbl, w.rows(3, "new"))
		if err != nil {
			t.Fatal(err)
		}
		w.tbl = next
	}
	return w.tbl
}

// eventsOf reads the file and keeps the events of the table with uuid.
func eventsOf(t *testing.T, path, uuid string) []event {
	t.Helper()
	all, err := readEventFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []event
	for _, e := range all {
		if strings.HasPrefix(e.ID, uuid+":") {
			out = append(out, e)
		}
	}
	return out
}

// wantStopped waits for the daemon to exit by itself and checks that it
// failed and that its log says every part of want.
func wantStopped(t *testing.T, r *rig, d *daemon, want ...string) {
	t.Helper()
	if code := d.wait(t, 60*time.Second); code == 0 {
		t.Fatalf("icecdc run exited 0; want a failure")
	}
	logText, err := os.ReadFile(r.log)
	if err != nil {
		t.Fatal(err)
	}
	last := lastLine(string(logText))
	if !strings.HasPrefix(last, "icecdc: ") {
		t.Fatalf("the daemon's last words are %q, want its error", last)
	}
	t.Logf("the daemon stopped: %s", last)
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("the daemon's error does not say %q:\n%s", w, last)
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestHistoryExpired expires the checkpoint's snapshot and its successor
// while the daemon is down: on restart the table stops, nothing more is
// delivered, and the reset the error names lets the daemon go on.
func TestHistoryExpired(t *testing.T) {
	ctx := t.Context()
	r, events := fileRig(t)
	w, err := newWriter(ctx, r.env, r.table, 1)
	if err != nil {
		t.Fatal(err)
	}
	commitAppends(t, w, 3)
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 30*time.Second)
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT: exit %d", code)
	}
	cp, _ := loadCheckpoint(t, r.state, r.pipeline, r.table)
	delivered := len(eventsOf(t, events, cp.TableUUID))

	// Three more commits; then expire all but the last two, which takes
	// the checkpoint's snapshot and its successor.
	tbl := commitAppends(t, w, 3)
	snaps := scenario.Snapshots(tbl)
	successor := snaps[len(snaps)-3].SnapshotID
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(0), table.WithRetainLast(2), table.WithPostCommit(false)); err != nil {
		t.Fatal(err)
	}
	tbl, err = tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	meta := tbl.Metadata()
	if meta.SnapshotByID(cp.SnapshotID) != nil || meta.SnapshotByID(successor) != nil || len(meta.Snapshots()) != 2 {
		t.Fatalf("expiry kept %d snapshots, the checkpoint's %v, its successor's %v", len(meta.Snapshots()),
			meta.SnapshotByID(cp.SnapshotID) != nil, meta.SnapshotByID(successor) != nil)
	}

	d = startDaemon(t, r.bin, r.cfg, r.log)
	wantStopped(t, r, d, "shop.orders", "expired", "icecdc reset")
	if n := len(eventsOf(t, events, cp.TableUUID)); n != delivered {
		t.Fatalf("the stopped table delivered %d more events", n-delivered)
	}
	if now, _ := loadCheckpoint(t, r.state, r.pipeline, r.table); now != cp {
		t.Fatalf("checkpoint moved from %s to %s", cp, now)
	}

	// What the message says to run makes the daemon go on, from the
	// oldest retained snapshot (start: earliest).
	out, err := runIcecdc(r.bin, "reset", "-c", r.cfg, "--table", r.table)
	if err != nil {
		t.Fatalf("icecdc reset: %v: %s", err, out)
	}
	d = r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 30*time.Second)
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT after reset: exit %d", code)
	}
	if n := len(eventsOf(t, events, cp.TableUUID)); n != delivered+2*3 {
		t.Fatalf("after reset the daemon delivered %d events, want the 6 inserts of the two retained snapshots", n-delivered)
	}
}

// TestHistoryRolledBack rolls main back behind the checkpoint and commits
// on top while the daemon runs: the table stops before it delivers the
// new commit.
func TestHistoryRolledBack(t *testing.T) {
	ctx := t.Context()
	r, events := fileRig(t)
	w, err := newWriter(ctx, r.env, r.table, 1)
	if err != nil {
		t.Fatal(err)
	}
	tbl := commitAppends(t, w, 3)
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 30*time.Second)
	cp := tbl.CurrentSnapshot()

	// While the daemon runs: main back to the first snapshot, then a new
	// commit on top of it, with the sequence number after the checkpoint's.
	snaps := scenario.Snapshots(tbl)
	tx := tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(snaps[0].SnapshotID); err != nil {
		t.Fatal(err)
	}
	if w.tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl = commitAppends(t, w, 1)
	if p := tbl.CurrentSnapshot().ParentSnapshotID; p == nil || *p != snaps[0].SnapshotID {
		t.Fatalf("the new head's parent is %v, want %d", p, snaps[0].SnapshotID)
	}

	wantStopped(t, r, d, "shop.orders", "rolled back", "icecdc reset")
	uuid := tbl.Metadata().TableUUID().String()
	for _, e := range eventsOf(t, events, uuid) {
		if e.Seq > cp.SequenceNumber {
			t.Fatalf("event %s of the commit after the rollback was delivered", e)
		}
	}
}

// TestHistoryRecreated drops the table and creates one of the same name
// while the daemon runs: the table stops, naming both uuids, and none of
// the new table's events are delivered.
func TestHistoryRecreated(t *testing.T) {
	ctx := t.Context()
	r, events := fileRig(t)
	w, err := newWriter(ctx, r.env, r.table, 1)
	if err != nil {
		t.Fatal(err)
	}
	old := commitAppends(t, w, 2)
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 30*time.Second)

	// While the daemon runs: drop the table and create one of the same
	// name, with a commit of its own.
	if err := r.env.Catalog.DropTable(ctx, catalog.ToIdentifier(r.table)); err != nil {
		t.Fatal(err)
	}
	w2, err := newWriter(ctx, r.env, r.table, 2)
	if err != nil {
		t.Fatal(err)
	}
	fresh := commitAppends(t, w2, 1)
	oldUUID, newUUID := old.Metadata().TableUUID().String(), fresh.Metadata().TableUUID().String()
	if oldUUID == newUUID {
		t.Fatal("the re-created table has the old uuid")
	}

	wantStopped(t, r, d, "shop.orders", "re-created", oldUUID, newUUID, "icecdc reset")
	if evs := eventsOf(t, events, newUUID); len(evs) > 0 {
		t.Fatalf("%d events of the new table were delivered, the first %s", len(evs), evs[0])
	}
}

// TestOneTableStopsOthersGoOn rolls back one of two tables while the daemon
// runs: that table stops, the other keeps delivering.
func TestOneTableStopsOthersGoOn(t *testing.T) {
	ctx := t.Context()
	r, events := fileRig(t, "shop.orders", "shop.items")
	orders, err := newWriter(ctx, r.env, "shop.orders", 1)
	if err != nil {
		t.Fatal(err)
	}
	items, err := newWriter(ctx, r.env, "shop.items", 2)
	if err != nil {
		t.Fatal(err)
	}
	commitAppends(t, orders, 3)
	commitAppends(t, items, 2)
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, "shop.orders", d, 30*time.Second)
	waitCaughtUp(t, r.bin, r.cfg, "shop.items", d, 30*time.Second)

	snaps := scenario.Snapshots(orders.tbl)
	tx := orders.tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(snaps[1].SnapshotID); err != nil {
		t.Fatal(err)
	}
	if orders.tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitLog(t, r.log, `"msg":"table stopped","table":"shop.orders"`, 30*time.Second)

	// Still running, and shop.items goes on: two commits, each waited for.
	for range 2 {
		commitAppends(t, items, 1)
		waitCaughtUp(t, r.bin, r.cfg, "shop.items", d, 30*time.Second)
	}
	if d.exited() {
		t.Fatalf("icecdc run exited (%v) when one of its two tables stopped", d.err)
	}
	want, _, err := expectedEvents(ctx, r.env, "shop.items")
	if err != nil {
		t.Fatal(err)
	}
	got := eventsOf(t, events, items.tbl.Metadata().TableUUID().String())
	if st, err := checkStream(got, want, crashChunk); err != nil || st.Repeats > 0 {
		t.Fatalf("shop.items: %v (%d repeats)", err, st.Repeats)
	}

	// At the end the daemon reports the stopped table: exit code 1.
	if code := d.interrupt(t); code != 1 {
		t.Fatalf("SIGINT: exit %d, want 1 for the stopped table", code)
	}
	logText, _ := os.ReadFile(r.log)
	if last := lastLine(string(logText)); !strings.Contains(last, "table shop.orders") || !strings.Contains(last, "rolled back") ||
		strings.Contains(last, "shop.items") {
		t.Fatalf("the daemon's error should name shop.orders only: %s", last)
	}
}

// waitLog waits until the daemon's log contains s.
func waitLog(t *testing.T, path, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon log does not say %s within %s:\n%s", s, timeout, tail(path, 20))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runIcecdc runs a short icecdc command and returns its combined output.
func runIcecdc(bin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}
