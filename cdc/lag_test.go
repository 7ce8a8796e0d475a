package cdc

import "testing"

// TestLagAfterACheckpoint: /status counts a checkpoint read after the lag
// was measured against what is really left, wherever the checkpoint
// stands in the pending list, not only at the head.
func TestLagAfterACheckpoint(t *testing.T) {
	pending := []SnapshotInfo{{ID: 2, SequenceNumber: 2, TimestampMs: 2000}, {ID: 3, SequenceNumber: 3, TimestampMs: 3000}, {ID: 4, SequenceNumber: 4, TimestampMs: 4000}}
	l := tableLag(pending[2], pending)
	for _, c := range []struct {
		seq        int64
		done       bool
		n          int
		oldest     int64
		whatItSays string
	}{
		{1, true, 3, 2000, "the checkpoint the lag was measured at"},
		{2, false, 3, 2000, "inside the first pending commit"},
		{2, true, 2, 3000, "one commit delivered since"},
		{3, false, 2, 3000, "inside the second"},
		{4, true, 0, 0, "at the head"},
		{9, true, 0, 0, "past the head the lag saw"},
	} {
		n, oldest := l.Behind(c.seq, c.done)
		if n != c.n || oldest != c.oldest {
			t.Errorf("%s (seq %d, done %v): %d behind, oldest %d; want %d, %d", c.whatItSays, c.seq, c.done, n, oldest, c.n, c.oldest)
		}
	}
	if l := tableLag(pending[2], nil); l.After != nil {
		t.Error("a table caught up keeps its pending list")
	}
}
