package daemontest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
)

// TestSignalSnapshotResumesAfterKill asks the daemon for an incremental
// snapshot with a row filter through Debezium's signal topic (on kfake),
// SIGKILLs it in the middle of the read, and restarts it: the read
// resumes from its checkpointed index, is not started a second time for
// the signal, and delivers exactly the live rows the filter holds for,
// each once but for the one unconfirmed chunk; the notifications (log
// channel) go from STARTED to COMPLETED; the stream then goes on. The
// signal topic is on kfake, or on the real broker of ICECDC_KAFKA_BROKERS
// (the interop stage sets it), under a topic and group of its own.
func TestSignalSnapshotResumesAfterKill(t *testing.T) {
	ctx := t.Context()
	var brokers []string
	if env := os.Getenv("ICECDC_KAFKA_BROKERS"); env != "" && env != "kfake" {
		brokers = strings.Split(env, ",")
	} else {
		brokers = newKfake(t).ListenAddrs()
	}
	topic := fmt.Sprintf("icecdc-signal-%d", time.Now().UnixNano())
	r, events := fileRig(t)
	r.conf.Extra = fmt.Sprintf("debezium:\n  signal.enabled.channels: kafka\n  signal.kafka.bootstrap.servers: %q\n  signal.kafka.topic: %s\n  signal.kafka.groupId: %s\n  notification.enabled.channels: log\n",
		strings.Join(brokers, ","), topic, topic)
	r.rewrite()
	w, err := newWriter(ctx, r.env, r.table, 1)
	if err != nil {
		t.Fatal(err)
	}
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

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const filter = "amount >= 500 AND status = 'new'"
	signal := fmt.Sprintf(`{"id": "d-1", "type": "execute-snapshot", "data": {"data-collections": [%q], "type": "incremental",
		"additional-conditions": [{"data-collection": %q, "filter": %q}]}}`, r.table, r.table, filter)
	size0 := fileSize(t, events)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("icecdc"), Value: []byte(signal)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); linesAfter(t, events, size0) < 5*crashChunk; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) || d.exited() {
			t.Fatalf("not %d read events within 60s of the signal (daemon exited: %v)", 5*crashChunk, d.exited())
		}
	}
	d.kill(t)
	cp, _ := loadCheckpoint(t, r.state, r.pipeline, r.table)
	if !cp.Initial || cp.Done || cp.SnapshotID != at.SnapshotID || cp.Next == 0 || cp.Signal != "d-1" || cp.Filter != filter {
		t.Fatalf("after the kill the checkpoint is %s (signal %q, filter %q), want one inside the read of snapshot %d for d-1 with its filter",
			cp, cp.Signal, cp.Filter, at.SnapshotID)
	}
	_, before := rEvents(t, events, uuid, true)

	d = r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 60*time.Second)
	commitAppends(t, w, 1)
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 60*time.Second)
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("SIGINT: exit %d", code)
	}

	tbl, err := r.env.LoadTable(ctx, catalog.ToIdentifier(r.table))
	if err != nil {
		t.Fatal(err)
	}
	live, err := replay.Live(ctx, tbl, at.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	want := replay.State{}
	for id, row := range live {
		amount, _ := strconv.ParseFloat(fmt.Sprint(row["amount"]), 64)
		if amount >= 500 && fmt.Sprint(row["status"]) == "new" {
			want[id] = row
		}
	}
	reads, total := rEvents(t, events, uuid, false)
	got := replay.State{}
	last := -1
	for _, ev := range reads {
		if ev.Source.SnapshotID != at.SnapshotID || ev.Source.EventIndex <= last {
			t.Fatalf("read event of row %d: snapshot %d, event_index %d after %d; want snapshot %d, indexes ascending",
				ev.Source.RowID, ev.Source.SnapshotID, ev.Source.EventIndex, last, at.SnapshotID)
		}
		last = ev.Source.EventIndex
		got[ev.Source.RowID] = ev.After
	}
	if len(want) == 0 || len(want) == len(live) {
		t.Fatalf("the filter keeps %d of %d rows: the test proves nothing", len(want), len(live))
	}
	if dd := replay.Diff(got, want); dd != "" {
		t.Fatalf("the signal's read differs from the live rows the filter keeps:\n%.2000s", dd)
	}
	if repeats := total - len(reads); repeats > crashChunk {
		t.Fatalf("the restart re-sent %d read events, more than the one unconfirmed chunk (%d)", repeats, crashChunk)
	}
	if before >= len(want) {
		t.Fatalf("the kill came after the whole read (%d events): the test proves nothing", before)
	}
	log := tail(r.log, 1<<20)
	if n := strings.Count(log, `"msg":"on-demand snapshot: emitting the table's rows"`); n != 1 {
		t.Fatalf("the read was started %d times; once for the signal, resumed after the kill", n)
	}
	for _, typ := range []string{"STARTED", "TABLE_SCAN_COMPLETED", "COMPLETED"} {
		if n := strings.Count(log, `"msg":"notification","id":"d-1","aggregate_type":"Incremental Snapshot","type":"`+typ+`"`); n != 1 {
			t.Errorf("%d %s notifications for d-1 in the log, want 1", n, typ)
		}
	}
	t.Logf("killed after %d read events (checkpoint at index %d); %d rows of %d kept by the filter, %d repeated after the restart",
		before, cp.Next, len(want), len(live), total-len(reads))
}
