package state

import (
	"reflect"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

func TestHistoryBounded(t *testing.T) {
	now := time.UnixMilli(1_750_000_000_000)
	s := mustOpen(t, statePath(t), Options{HistoryLimit: 3, now: func() time.Time { return now }})
	// Sequence numbers with gaps (replace snapshots are skipped elsewhere)
	// and partial saves between the done ones, which record nothing.
	for _, seq := range []int64{2, 3, 5, 8, 13, 21} {
		partial := cdc.Checkpoint{TableUUID: "u", SnapshotID: seq * 100, Seq: seq, Next: 1}
		done := cdc.Checkpoint{TableUUID: "u", SnapshotID: seq * 100, Seq: seq, Next: int(seq), Done: true, TimestampMs: seq * 1000}
		for _, cp := range []cdc.Checkpoint{partial, done} {
			if err := s.Save(ctx, "p", "t", cp); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(time.Second)
	}
	got, err := s.History("p", "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	var want []HistoryEntry
	for i, seq := range []int64{21, 13, 8} {
		want = append(want, HistoryEntry{
			SnapshotID:  seq * 100,
			Seq:         seq,
			CommitTime:  time.UnixMilli(seq * 1000),
			DeliveredAt: time.UnixMilli(1_750_000_000_000 + int64(5-i)*1000),
			Events:      int(seq),
		})
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("History =\n%v\nwant\n%v", got, want)
	}
	if got, _ := s.History("p", "t", 2); !reflect.DeepEqual(got, want[:2]) {
		t.Fatalf("History limit 2 = %v; want %v", got, want[:2])
	}
	if got, _ := s.History("p", "missing", 0); len(got) != 0 {
		t.Fatalf("History of an unknown table = %v", got)
	}
}

// Lowering the limit between runs trims the excess at the next save.
func TestHistoryLimitLowered(t *testing.T) {
	path := statePath(t)
	s, err := Open(path, Options{HistoryLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 6; seq++ {
		if err := s.Save(ctx, "p", "t", cdc.Checkpoint{TableUUID: "u", Seq: seq, Done: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, Options{HistoryLimit: 2})
	if err := s.Save(ctx, "p", "t", cdc.Checkpoint{TableUUID: "u", Seq: 7, Done: true}); err != nil {
		t.Fatal(err)
	}
	got, err := s.History("p", "t", 0)
	if err != nil || len(got) != 2 || got[0].Seq != 7 || got[1].Seq != 6 {
		t.Fatalf("History = %v, %v; want seqs 7, 6", got, err)
	}
}

func TestHistoryDisabled(t *testing.T) {
	s := mustOpen(t, statePath(t), Options{HistoryLimit: -1})
	if err := s.Save(ctx, "p", "t", cdc.Checkpoint{TableUUID: "u", Seq: 1, Done: true}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.History("p", "t", 0); err != nil || len(got) != 0 {
		t.Fatalf("History with HistoryLimit -1 = %v, %v", got, err)
	}
}
