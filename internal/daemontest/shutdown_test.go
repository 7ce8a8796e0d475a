package daemontest

import (
	"os"
	"testing"
	"time"

	"github.com/icecdc/icecdc/internal/scenario"
)

// shutdownRows is the size of the commit the daemon is stopped in: 600
// chunks of 100, which take the daemon a good half second to deliver.
const shutdownRows = 60000

// TestGracefulShutdown stops the daemon with SIGINT while it delivers a
// large commit. It must exit 0 with its checkpoint at a chunk boundary
// inside the snapshot and the file holding exactly the events up to it:
// a clean stop leaves nothing unconfirmed behind, so the restart goes on
// without losing or repeating a single event.
func TestGracefulShutdown(t *testing.T) {
	ctx := t.Context()
	r, events := fileRig(t)
	w, err := newWriter(ctx, r.env, r.table, 1)
	if err != nil {
		t.Fatal(err)
	}
	commitAppends(t, w, 2)
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 30*time.Second)
	st, err := os.Stat(events)
	if err != nil {
		t.Fatal(err)
	}
	base := st.Size()

	if w.tbl, err = scenario.Append(ctx, w.tbl, w.rows(shutdownRows, "new")); err != nil {
		t.Fatal(err)
	}
	big := w.tbl.CurrentSnapshot()
	// Stop once a tenth of the commit is in the file.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if st, err := os.Stat(events); err == nil && st.Size() > base+shutdownRows/10*500 {
			break
		}
		if time.Now().After(deadline) || d.exited() {
			t.Fatalf("the daemon did not start delivering the large commit (exited: %v)", d.exited())
		}
	}
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT during a large commit: exit %d, want 0", code)
	}
	cp, _ := loadCheckpoint(t, r.state, r.pipeline, r.table)
	if cp.SnapshotID != big.SnapshotID || cp.Done || cp.Next == 0 || cp.Next%crashChunk != 0 {
		t.Fatalf("checkpoint after SIGINT is %s; want inside snapshot %d at a multiple of %d", cp, big.SnapshotID, crashChunk)
	}
	n := 0
	for _, e := range eventsOf(t, events, cp.TableUUID) {
		if e.SnapshotID == big.SnapshotID {
			n++
		}
	}
	if n != cp.Next {
		t.Errorf("the file holds %d events of the snapshot, the checkpoint says %d were delivered: "+
			"a clean stop left %d events unconfirmed, which the restart sends again", n, cp.Next, n-cp.Next)
	}
	t.Logf("stopped at %s with %d of its %d events in the file", cp, n, shutdownRows)

	d = r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 60*time.Second)
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT after catching up: exit %d", code)
	}
	want, _, err := expectedEvents(ctx, r.env, r.table)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readEventFile(events)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := checkStream(got, want, crashChunk)
	if err != nil {
		t.Fatal(err)
	}
	if ss.Repeats > 0 {
		t.Fatalf("after a clean stop and restart the file repeats %d events (%d re-sends)", ss.Repeats, ss.Resends)
	}
}
