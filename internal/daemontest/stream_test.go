package daemontest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/changes"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/source"
)

// event is one event as a consumer identifies and compares it.
type event struct {
	ID         string // <table_uuid>:<sequence_number>:<row_id>:<op>
	Op         string
	Seq        int64
	SnapshotID int64
	Index      int    // source.event_index: position inside its snapshot
	Before     string // the row images as encoded JSON
	After      string
}

func (e event) String() string {
	return fmt.Sprintf("%s (snapshot %d, event_index %d)", e.ID, e.SnapshotID, e.Index)
}

// envelope is the part of a debezium-json value the tests look at.
type envelope struct {
	Op     string          `json:"op"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
	Source struct {
		TableUUID  string `json:"table_uuid"`
		SnapshotID int64  `json:"snapshot_id"`
		Seq        int64  `json:"sequence_number"`
		RowID      int64  `json:"row_id"`
		EventIndex int    `json:"event_index"`
	} `json:"source"`
}

// decodeEvent reads a debezium-json value and builds its event id from its
// source fields, as a consumer of the file sink does.
func decodeEvent(b []byte) (event, error) {
	// Kafka's default format wraps the envelope as Kafka Connect's
	// JsonConverter does: {"schema": …, "payload": <envelope>}.
	var wrapped struct {
		Schema  json.RawMessage `json:"schema"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &wrapped); err == nil && wrapped.Schema != nil && wrapped.Payload != nil {
		b = wrapped.Payload
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return event{}, err
	}
	s := env.Source
	if s.TableUUID == "" || env.Op == "" {
		return event{}, fmt.Errorf("no source.table_uuid or op")
	}
	return event{
		ID: cdc.EventID(s.TableUUID, s.Seq, s.RowID, cdc.Op(env.Op[0])),
		Op: env.Op, Seq: s.Seq, SnapshotID: s.SnapshotID, Index: s.EventIndex,
		Before: string(env.Before), After: string(env.After),
	}, nil
}

// readEventFile decodes every line of a file sink's output. The daemon was
// stopped cleanly before, so a line that does not decode, including a torn
// last line, is an error.
func readEventFile(path string) ([]event, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		return nil, fmt.Errorf("%s ends in a torn line", path)
	}
	var out []event
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		e, err := decodeEvent(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %v: %.200s", path, n, err, sc.Bytes())
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// expectedEvents computes the events of every snapshot of a table with
// the engine (source.Open + changes.Changes), encoded as the daemon encodes
// them. It also replays them over an empty map keyed by row id, as a
// consumer would (internal/replay), and compares the result with the
// head's live rows read by the oracle, so that the expected stream is
// itself checked against the change contract. (Checking at every
// snapshot, as replay.Check does, costs a scan of the table per snapshot,
// too slow for tables of a hundred thousand rows.)
func expectedEvents(ctx context.Context, env *scenario.Env, table string) ([]event, []cdc.SnapshotInfo, error) {
	src, err := source.Open(ctx, source.Options{
		CatalogName: scenario.CatalogName, CatalogType: "sql", CatalogURI: env.CatalogURI + busyTimeout,
		Warehouse: env.Warehouse, Table: table,
	})
	if err != nil {
		return nil, nil, err
	}
	var (
		enc      = &debezium.JSON{}
		out      []event
		snaps    []cdc.SnapshotInfo
		consumer = replay.State{}
	)
	err = changes.Changes(ctx, src, 0, 0, nil, func(c *cdc.Commit) error {
		if len(c.Anomalies) > 0 {
			return fmt.Errorf("snapshot %d: lineage anomalies %v", c.Snapshot.ID, c.Anomalies)
		}
		snaps = append(snaps, c.Snapshot)
		for i := range c.Events {
			b, err := enc.AppendValue(nil, c, &c.Events[i], 0)
			if err != nil {
				return err
			}
			e, err := decodeEvent(b)
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		evs, err := replay.Encode(c)
		if err != nil {
			return err
		}
		if err := consumer.Apply(evs); err != nil {
			return fmt.Errorf("replay snapshot %d (seq %d): %w", c.Snapshot.ID, c.Snapshot.SequenceNumber, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if head, ok := src.Head(); ok {
		live, err := replay.Live(ctx, src.Iceberg(), head.ID)
		if err != nil {
			return nil, nil, err
		}
		if d := replay.Diff(consumer, live); d != "" {
			return nil, nil, fmt.Errorf("the replayed stream of %s differs from the live rows of its head:\n%.2000s", table, d)
		}
	}
	return out, snaps, nil
}

// streamStats describes how a delivered stream relates to the expected one.
type streamStats struct {
	Delivered  int // events read, repeats included
	Repeats    int // events whose id was delivered before
	Resends    int // runs of repeats, each starting at a chunk boundary
	LongestRun int
}

// checkStream checks a delivered stream against the expected one for an
// at-least-once sink that resumes from chunk checkpoints:
//
//   - with repeated ids dropped (first occurrence kept), it is want exactly:
//     the same ids in the same order with the same row images;
//   - every repeat belongs to a re-send: a run that starts at an event
//     whose event_index is a multiple of chunk, inside the last chunk
//     delivered so far (the one whose checkpoint a crash may have lost),
//     and continues contiguously up to the first new event, or until a
//     later crash starts the re-send again.
func checkStream(got, want []event, chunk int) (streamStats, error) {
	st := streamStats{Delivered: len(got)}
	pos := make(map[string]int, len(want))
	for i, e := range want {
		if _, dup := pos[e.ID]; dup {
			return st, fmt.Errorf("the expected stream repeats event id %s", e.ID)
		}
		pos[e.ID] = i
	}
	next := 0 // want[:next] has been delivered
	cur := -1 // inside a re-send: the index in want of the last repeated event
	run := 0
	for i, g := range got {
		j, ok := pos[g.ID]
		if !ok {
			return st, fmt.Errorf("delivered event %d, %s, is not in the expected stream", i, g)
		}
		if g != want[j] {
			return st, fmt.Errorf("delivered event %d differs from the expected one:\n got %+v\nwant %+v", i, g, want[j])
		}
		switch {
		case j == next && (cur < 0 || cur+1 == next):
			next++
			cur, run = -1, 0
		case j == next:
			return st, fmt.Errorf("delivered event %d, %s, is new, but the re-send before it stopped at %s, short of %s: part of a chunk was skipped",
				i, g, want[cur], want[next-1])
		case j > next:
			return st, fmt.Errorf("delivered event %d, %s, skips %d expected events from %s on", i, g, j-next, want[next])
		case cur >= 0 && j == cur+1:
			cur, run = j, run+1
			st.Repeats++
		default: // j < next: a re-send starts
			last := want[next-1]
			switch {
			case g.Index%chunk != 0:
				return st, fmt.Errorf("delivered event %d, %s, repeats an event that is not at a chunk boundary (chunk %d); %d events delivered so far, the last new one %s",
					i, g, chunk, next, last)
			case g.SnapshotID != last.SnapshotID || next-j > chunk:
				return st, fmt.Errorf("delivered event %d, %s, re-sends from before the last chunk delivered (%d events back; last new event %s)",
					i, g, next-j, last)
			}
			cur, run = j, 1
			st.Repeats++
			st.Resends++
		}
		st.LongestRun = max(st.LongestRun, run)
	}
	if next < len(want) {
		return st, fmt.Errorf("%d of %d expected events never delivered, from %s on", len(want)-next, len(want), want[next])
	}
	if cur >= 0 && cur+1 != next {
		return st, fmt.Errorf("the stream ends inside a re-send, at %s", want[cur])
	}
	return st, nil
}

// TestCheckStream makes sure the checker of the crash tests accepts the
// re-sends a crash may cause and nothing else.
func TestCheckStream(t *testing.T) {
	// Two snapshots of 5 and 4 events (0-4 and 5-8), chunk 2: boundaries
	// at event_index 0, 2, 4 of the first and 0, 2 of the second.
	var want []event
	for i := range 9 {
		seq, idx := int64(1), i
		if i >= 5 {
			seq, idx = 2, i-5
		}
		want = append(want, event{ID: fmt.Sprintf("u:%d:%d:c", seq, i), Op: "c", Seq: seq, SnapshotID: seq * 10, Index: idx, After: fmt.Sprintf(`{"n":%d}`, i)})
	}
	pick := func(idx ...int) []event {
		out := make([]event, len(idx))
		for i, j := range idx {
			out[i] = want[j]
		}
		return out
	}
	changed := slices.Clone(want)
	changed[3].After = `{"n":-1}`
	for _, tc := range []struct {
		name    string
		got     []event
		repeats int
		err     string // "" if the stream is fine
	}{
		{"exact", pick(0, 1, 2, 3, 4, 5, 6, 7, 8), 0, ""},
		{"chunk re-sent", pick(0, 1, 2, 3, 2, 3, 4, 5, 6, 7, 8), 2, ""},
		{"part of a chunk, then the chunk re-sent", pick(0, 1, 2, 2, 3, 4, 5, 6, 7, 8), 1, ""},
		{"re-send cut short by a crash, then again", pick(0, 1, 2, 3, 2, 2, 3, 4, 5, 6, 7, 8), 3, ""},
		{"last chunk of a snapshot re-sent", pick(0, 1, 2, 3, 4, 4, 5, 6, 7, 8), 1, ""},
		{"last chunk of the stream re-sent", pick(0, 1, 2, 3, 4, 5, 6, 7, 8, 7, 8), 2, ""},
		{"re-send not at a chunk boundary", pick(0, 1, 2, 3, 3, 4, 5, 6, 7, 8), 0, "not at a chunk boundary"},
		{"re-send from an older chunk", pick(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 8), 0, "before the last chunk"},
		{"re-send from the previous snapshot", pick(0, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8), 0, "before the last chunk"},
		{"re-send stops short", pick(0, 1, 2, 3, 2, 4, 5, 6, 7, 8), 0, "was skipped"},
		{"event lost", pick(0, 1, 2, 4, 5, 6, 7, 8), 0, "skips 1"},
		{"tail lost", pick(0, 1, 2, 3, 4, 5), 0, "never delivered"},
		{"ends inside a re-send", pick(0, 1, 2, 3, 4, 5, 6, 7, 8, 7), 0, "ends inside a re-send"},
		{"values differ", changed, 0, "differs"},
		{"unknown id", append(pick(0, 1), event{ID: "x"}), 0, "not in the expected stream"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := checkStream(tc.got, want, 2)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			case tc.err == "" && st.Repeats != tc.repeats:
				t.Fatalf("%d repeats counted, want %d", st.Repeats, tc.repeats)
			}
		})
	}
}
