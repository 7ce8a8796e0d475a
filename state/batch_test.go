package state

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// TestConcurrentSavesShareTransactions: the saves of a hundred tables at
// once (which share fsynced transactions) each persist, and one refused
// among them (a checkpoint going backwards) fails alone, with its error,
// leaving the stored one.
func TestConcurrentSavesShareTransactions(t *testing.T) {
	path := statePath(t)
	s := mustOpen(t, path, Options{})
	stored := cdc.Checkpoint{TableUUID: "u-back", SnapshotID: 50, Seq: 5, Done: true}
	if err := s.Save(ctx, "p", "t-back", stored); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 100)
	for i := range errs {
		wg.Go(func() {
			table, cp := fmt.Sprintf("t%03d", i), cdc.Checkpoint{TableUUID: fmt.Sprintf("u%d", i), SnapshotID: int64(i + 1), Seq: int64(i + 1), Done: true}
			if i == 50 {
				table, cp = "t-back", cdc.Checkpoint{TableUUID: "u-back", SnapshotID: 40, Seq: 4, Done: true}
			}
			errs[i] = s.Save(ctx, "p", table, cp)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 50) != errors.Is(err, ErrBackwards) {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, Options{})
	for i := range errs {
		table, want := fmt.Sprintf("t%03d", i), int64(i+1)
		if i == 50 {
			table, want = "t-back", 5
		}
		cp, ok, err := s.Load(ctx, "p", table)
		if err != nil || !ok || cp.Seq != want {
			t.Fatalf("after reopen %s = %v, %v, %v; want sequence number %d", table, cp, ok, err, want)
		}
	}
}
