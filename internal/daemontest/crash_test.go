package daemontest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/icecdc/icecdc/internal/scenario"
)

// Crash test shape: commits made by the writer, random SIGKILLs of the
// daemon while it writes, and the chunk size of the daemon (of every rig).
const (
	crashCommits = 44
	crashKills   = 24
	crashChunk   = 100
)

// crashSeed is the seed of the writer's commits and of the kill moments;
// ICECDC_CRASH_SEED overrides it to explore other interleavings.
func crashSeed(t *testing.T) uint64 {
	if testing.Short() {
		t.Skip("a crash test takes about 20 s; skipped with -short")
	}
	seed := uint64(20260101)
	if s := os.Getenv("ICECDC_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ICECDC_CRASH_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (set ICECDC_CRASH_SEED to change it)", seed)
	return seed
}

// crashStats is what the kill loop saw.
type crashStats struct {
	kills, midSnapshot, tornLines int
}

// killLoop runs the writer's commits while it starts the daemon, lets it
// run for a random 50–800 ms and kills it with SIGKILL, kills times. The
// writer's commit i waits for i*kills/commits kills, so the kills are
// spread over the whole write. After each kill it notes whether the
// checkpoint stands inside a snapshot and, if eventsFile is set, whether
// the file ends in a torn line. One more kill is aimed (aimedKill), so
// that at least one lands inside a snapshot. Then it lets a last daemon
// catch up and stops it with SIGINT, which must exit 0.
func (r *rig) killLoop(seed uint64, eventsFile string) crashStats {
	t := r.t
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := newWriter(ctx, r.env, r.table, seed)
	if err != nil {
		t.Fatal(err)
	}
	var killed atomic.Int32
	writerDone := make(chan error, 1)
	start := time.Now()
	go func() {
		for i := range crashCommits {
			for int(killed.Load()) < i*crashKills/crashCommits {
				select {
				case <-ctx.Done():
					writerDone <- ctx.Err()
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
			if _, err := w.step(ctx, i, i%6 == 3); err != nil {
				writerDone <- err
				return
			}
		}
		writerDone <- nil
	}()

	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var st crashStats
	for range crashKills {
		d := startDaemon(t, r.bin, r.cfg, r.log)
		time.Sleep(time.Duration(50+rng.IntN(751)) * time.Millisecond)
		if d.exited() {
			t.Fatalf("icecdc run exited by itself (%v) before kill %d", d.err, st.kills+1)
		}
		d.kill(t)
		st.kills++
		killed.Add(1)
		if cp, ok := loadCheckpoint(t, r.state, r.pipeline, r.table); ok && !cp.Done {
			if cp.Next%crashChunk != 0 {
				t.Fatalf("checkpoint %s after kill %d is not at a chunk boundary", cp, st.kills)
			}
			st.midSnapshot++
		}
		if eventsFile != "" {
			if b, err := os.ReadFile(eventsFile); err == nil && len(b) > 0 && b[len(b)-1] != '\n' {
				st.tornLines++
			}
		}
	}
	if err := <-writerDone; err != nil {
		t.Fatalf("writer: %v", err)
	}
	r.aimedKill(ctx, w)
	st.kills++
	t.Logf("%d commits and %d kills in %s; commits: %s", crashCommits+1, st.kills, time.Since(start).Round(time.Millisecond), strings.Join(w.log, "; "))

	catchUp := time.Now()
	d := r.start()
	waitCaughtUp(t, r.bin, r.cfg, r.table, d, 90*time.Second)
	if code := d.interrupt(t); code != 0 {
		t.Fatalf("icecdc run exited %d after SIGINT, want 0", code)
	}
	t.Logf("caught up and stopped in %s", time.Since(catchUp).Round(time.Millisecond))
	return st
}

// aimedRows is the size of the commit of the aimed kill: 200 chunks.
const aimedRows = 20000

// aimedKill makes sure that at least one kill lands inside a snapshot,
// whatever the timing of the random ones: it commits aimedRows rows, lets
// a daemon deliver a tenth of them and kills it then, watching its
// checkpoint over HTTP.
func (r *rig) aimedKill(ctx context.Context, w *writer) {
	t := r.t
	next, err := scenario.Append(ctx, w.tbl, w.rows(aimedRows, "new"))
	if err != nil {
		t.Fatal(err)
	}
	w.tbl = next
	big := next.CurrentSnapshot()
	w.log = append(w.log, fmt.Sprintf("seq %d: append %d (aimed kill)", big.SequenceNumber, aimedRows))
	d := r.start()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cp, _, err := daemonCheckpoint(r.listen, r.table)
		if err != nil {
			t.Fatal(err)
		}
		if cp.SnapshotID == big.SnapshotID && !cp.Done && cp.Next >= aimedRows/10 {
			break
		}
		if cp.Seq > big.SequenceNumber || cp.SnapshotID == big.SnapshotID && cp.Done {
			t.Fatalf("the daemon delivered all of snapshot %d before it could be killed in it (checkpoint %s)", big.SnapshotID, cp)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not get to snapshot %d within a minute (checkpoint %s)", big.SnapshotID, cp)
		}
		time.Sleep(2 * time.Millisecond)
	}
	d.kill(t)
	if cp, _ := loadCheckpoint(t, r.state, r.pipeline, r.table); cp.SnapshotID != big.SnapshotID || cp.Done || cp.Next%crashChunk != 0 {
		t.Fatalf("after the aimed kill the checkpoint is %s, want one inside snapshot %d at a chunk boundary", cp, big.SnapshotID)
	}
}

// TestCrashFileSink kills the daemon at random moments while a writer
// commits, then checks the file: deduplicated by event id it is exactly
// the engine's stream, and every repeat is a re-send from a chunk boundary.
func TestCrashFileSink(t *testing.T) {
	seed := crashSeed(t)
	r, events := fileRig(t)
	st := r.killLoop(seed, events)

	want, snaps, err := expectedEvents(t.Context(), r.env, r.table)
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
	t.Logf("%d snapshots, %d expected events; file: %d events, %d repeats in %d re-sends (longest %d); "+
		"after the random kills: %d checkpoints inside a snapshot, %d torn last lines",
		len(snaps), len(want), ss.Delivered, ss.Repeats, ss.Resends, ss.LongestRun, st.midSnapshot, st.tornLines)
	if len(want) < 40000 {
		t.Fatalf("only %d expected events: the writer did not make its large commits", len(want))
	}
}

// TestCrashKafkaExactlyOnce does the same against kfake with exactly-once
// delivery: a read_committed consumer must see the engine's stream exactly,
// without a single repeat, although kills left transactions open (their
// records show to a read_uncommitted consumer).
func TestCrashKafkaExactlyOnce(t *testing.T) { kafkaCrash(t, "exactly-once") }

// TestCrashKafkaAtLeastOnce does it once more with the default delivery:
// deduplicated by id the topic is the engine's stream, and repeats are
// re-sends from chunk boundaries.
func TestCrashKafkaAtLeastOnce(t *testing.T) { kafkaCrash(t, "at-least-once") }

func kafkaCrash(t *testing.T, delivery string) {
	exactlyOnce := delivery == "exactly-once"
	seed := crashSeed(t)
	c := newKfake(t)
	r := newRig(t, func(string) string { return kafkaSink(c.ListenAddrs(), delivery) })
	st := r.killLoop(seed, "")

	want, snaps, err := expectedEvents(t.Context(), r.env, r.table)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	recs, err := readTopic(ctx, c.ListenAddrs(), "icecdc.shop.orders", exactlyOnce)
	if err != nil {
		t.Fatal(err)
	}
	got, err := kafkaEvents(recs)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := checkStream(got, want, crashChunk)
	if err != nil {
		t.Fatal(err)
	}
	if !exactlyOnce {
		t.Logf("%d snapshots, %d expected events; topic: %d events, %d repeats in %d re-sends (longest %d); after the random kills: %d checkpoints inside a snapshot",
			len(snaps), len(want), ss.Delivered, ss.Repeats, ss.Resends, ss.LongestRun, st.midSnapshot)
		return
	}
	if ss.Repeats > 0 {
		t.Fatalf("read_committed consumer saw %d repeated events in %d re-sends; exactly-once allows none", ss.Repeats, ss.Resends)
	}
	all, err := readTopic(ctx, c.ListenAddrs(), "icecdc.shop.orders", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d snapshots, %d expected events; read_committed: %d events, no repeat; read_uncommitted: %d records (%d from aborted transactions); "+
		"after the random kills: %d checkpoints (bbolt) inside a snapshot",
		len(snaps), len(want), len(got), len(all), len(all)-len(got), st.midSnapshot)
}
