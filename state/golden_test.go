package state

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/icecdc/icecdc/cdc"
)

// The golden files pin the bytes stored for a checkpoint and a history
// entry. If this test fails, the on-disk format changed: existing state
// files must still load, so either keep the old encoding or bump
// formatVersion and read both, then rerun with -update.
func TestGolden(t *testing.T) {
	cp := cdc.Checkpoint{
		TableUUID:   "5f0c2b9e-4c1a-4a9e-9d2b-1f6f3f1e8c7a",
		SnapshotID:  3051729675574597004,
		Seq:         17,
		Next:        250,
		Done:        true,
		TimestampMs: 1_767_225_600_123,
	}
	savedAt := time.UnixMilli(1_767_225_601_456)
	s := mustOpen(t, statePath(t), Options{now: fixedClock(savedAt)})
	if err := s.Save(ctx, "shop-cdc", "shop.orders", cp); err != nil {
		t.Fatal(err)
	}
	var stored, history []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		tb := tableBucket(tx, "shop-cdc", "shop.orders")
		stored = bytes.Clone(tb.Get(keyCheckpoint))
		history = bytes.Clone(tb.Bucket(keyHistory).Get(seqKey(cp.Seq)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "checkpoint.golden", stored)
	compareGolden(t, "history.golden", history)

	// What the golden files hold must decode to the values they were made
	// from: this is what a state file written by an older build contains.
	golden, err := os.ReadFile(filepath.Join("testdata", "checkpoint.golden"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := decodeCheckpoint(bytes.TrimSuffix(golden, []byte("\n")))
	if err != nil || rec.Checkpoint != cp || rec.SavedAtMs != savedAt.UnixMilli() {
		t.Fatalf("decode checkpoint.golden = %+v, %v; want %v saved at %d", rec, err, cp, savedAt.UnixMilli())
	}
	golden, err = os.ReadFile(filepath.Join("testdata", "history.golden"))
	if err != nil {
		t.Fatal(err)
	}
	hrec, err := decodeHistory(bytes.TrimSuffix(golden, []byte("\n")))
	want := historyRecord{V: 1, SnapshotID: cp.SnapshotID, Seq: cp.Seq, CommitTsMs: cp.TimestampMs, DeliveredAtMs: savedAt.UnixMilli(), Events: cp.Next}
	if err != nil || hrec != want {
		t.Fatalf("decode history.golden = %+v, %v; want %+v", hrec, err, want)
	}
}

// The meta records describe the file and its owners; a file made by this
// build must stay readable by the next.
func TestGoldenMeta(t *testing.T) {
	createdAt := time.UnixMilli(1_767_225_601_456)
	s := mustOpen(t, statePath(t), Options{Pipeline: "shop-cdc", now: fixedClock(createdAt)})
	var file, owner []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		file = bytes.Clone(meta.Get(keyFile))
		owner = bytes.Clone(meta.Bucket(keyPipelines).Get([]byte("shop-cdc")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, "file.golden", file)
	compareGolden(t, "pipeline.golden", owner)
	golden, err := os.ReadFile(filepath.Join("testdata", "file.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := decodeFile(bytes.TrimSuffix(golden, []byte("\n"))); err != nil || rec != (fileRecord{V: 1, CreatedAtMs: createdAt.UnixMilli()}) {
		t.Fatalf("decode file.golden = %+v, %v", rec, err)
	}
	golden, err = os.ReadFile(filepath.Join("testdata", "pipeline.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := decodePipeline(bytes.TrimSuffix(golden, []byte("\n"))); err != nil || rec != (pipelineRecord{V: 1, SinceMs: createdAt.UnixMilli(), How: howCreated}) {
		t.Fatalf("decode pipeline.golden = %+v, %v", rec, err)
	}
}

func compareGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	// A trailing newline keeps the files friendly to diff and editors; the
	// stored bytes have none.
	got = append(bytes.Clone(got), '\n')
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("stored %s changed:\n got %s\nwant %s", name, got, want)
	}
}

// A checkpoint inside a filtered or paused on-demand snapshot is stored
// as format 3, which a build that ignored the filter or the pause refuses
// instead of misreading; this build reads it back whole, and refuses a
// format 3 record without either.
func TestReadCheckpointVersion(t *testing.T) {
	now := time.UnixMilli(1_767_225_601_456)
	for _, cp := range []cdc.Checkpoint{
		{TableUUID: "u", SnapshotID: 7, Seq: 3, Next: 40, Initial: true, Epoch: 2, Signal: "s-1", Kind: "incremental", Filter: "id > 3"},
		{TableUUID: "u", SnapshotID: 7, Seq: 3, Next: 40, Initial: true, Epoch: 2, Signal: "s-2", Kind: "blocking", Paused: true},
	} {
		raw := encodeCheckpoint(cp, now)
		if !bytes.HasPrefix(raw, []byte(`{"v":3,`)) {
			t.Fatalf("stored %s, want format 3", raw)
		}
		rec, err := decodeCheckpoint(raw)
		if err != nil || rec.Checkpoint != cp {
			t.Fatalf("decode %s = %+v, %v", raw, rec.Checkpoint, err)
		}
	}
	if raw := encodeCheckpoint(cdc.Checkpoint{TableUUID: "u", Done: true, Signal: "s-1"}, now); !bytes.HasPrefix(raw, []byte(`{"v":1,`)) {
		t.Fatalf("a checkpoint that only names its signal is stored as %s, want format 1", raw)
	}
	if _, err := decodeCheckpoint([]byte(`{"v":3,"table_uuid":"u","done":true}`)); err == nil {
		t.Fatal("a format 3 record without a filter or a pause was read")
	}
}
