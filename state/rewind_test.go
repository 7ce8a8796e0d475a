package state

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// TestRewind: Save refuses to move back, Rewind does, and forgets the
// history after the position it moves to.
func TestRewind(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const uuid = "00000000-0000-4000-8000-000000000001"
	for seq := int64(1); seq <= 4; seq++ {
		if err := s.Save(ctx, "p", "t", cdc.Checkpoint{TableUUID: uuid, SnapshotID: seq, Seq: seq, Done: true}); err != nil {
			t.Fatal(err)
		}
	}
	back := cdc.Checkpoint{TableUUID: uuid, SnapshotID: 2, Seq: 2, Done: true}
	if err := s.Save(ctx, "p", "t", back); !errors.Is(err, ErrBackwards) {
		t.Fatalf("save backwards: %v", err)
	}
	if err := s.Rewind(ctx, "p", "t", back); err != nil {
		t.Fatal(err)
	}
	cp, ok, err := s.Load(ctx, "p", "t")
	if err != nil || !ok || cp.Seq != 2 || !cp.Done {
		t.Fatalf("after the rewind: %s %v %v", cp, ok, err)
	}
	h, err := s.History("p", "t", 10)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range h {
		seqs = append(seqs, e.Seq)
	}
	if len(seqs) != 2 || !(seqs[0] == 1 && seqs[1] == 2 || seqs[0] == 2 && seqs[1] == 1) {
		t.Fatalf("history after the rewind: %v, want 1 and 2", seqs)
	}
	// Mid-snapshot: snapshot 2 is no longer delivered whole.
	if err := s.Rewind(ctx, "p", "t", cdc.Checkpoint{TableUUID: uuid, SnapshotID: 2, Seq: 2, Next: 5}); err != nil {
		t.Fatal(err)
	}
	if h, _ = s.History("p", "t", 10); len(h) != 1 || h[0].Seq != 1 {
		t.Fatalf("history after a rewind into snapshot 2: %+v", h)
	}
}
