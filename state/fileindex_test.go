package state

import (
	"context"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// The data-file index is written with the table's next checkpoint, read
// back only for the same table uuid, and a reset or a new uuid replaces it.
func TestFileIndexStagedWithCheckpoint(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	s := mustOpen(t, path, Options{})
	fi := s.FileIndex("p", "shop.orders")
	fi.StageFileIndex("u1", map[string][]byte{"m1.avro": []byte("a"), "m2.avro": []byte("b")}, nil, false)
	if got, err := fi.LoadFileIndex("u1"); err != nil || len(got) != 0 {
		t.Fatalf("before a checkpoint: %v, %v; want nothing stored", got, err)
	}
	if err := s.Save(ctx, "p", "shop.orders", cdc.Checkpoint{TableUUID: "u1", SnapshotID: 1, Seq: 1, Done: true}); err != nil {
		t.Fatal(err)
	}
	got, err := fi.LoadFileIndex("u1")
	if err != nil || len(got) != 2 || string(got["m1.avro"]) != "a" || string(got["m2.avro"]) != "b" {
		t.Fatalf("after the checkpoint: %v, %v", got, err)
	}
	if got, _ := fi.LoadFileIndex("u2"); len(got) != 0 {
		t.Fatalf("another table uuid reads %v, want nothing", got)
	}
	fi.StageFileIndex("u1", map[string][]byte{"m3.avro": []byte("c")}, []string{"m1.avro"}, false)
	if err := s.Save(ctx, "p", "shop.orders", cdc.Checkpoint{TableUUID: "u1", SnapshotID: 2, Seq: 2, Done: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := fi.LoadFileIndex("u1"); len(got) != 2 || got["m1.avro"] != nil || string(got["m3.avro"]) != "c" {
		t.Fatalf("after a drop and a put: %v", got)
	}
	fi.StageFileIndex("u1", map[string][]byte{"m4.avro": []byte("d")}, nil, true)
	if err := s.Save(ctx, "p", "shop.orders", cdc.Checkpoint{TableUUID: "u1", SnapshotID: 3, Seq: 3, Done: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := fi.LoadFileIndex("u1"); len(got) != 1 || string(got["m4.avro"]) != "d" {
		t.Fatalf("after a reset: %v", got)
	}
	// A failed Save keeps the staged changes for the next one.
	fi.StageFileIndex("u1", map[string][]byte{"m5.avro": []byte("e")}, nil, false)
	if err := s.Save(ctx, "p", "shop.orders", cdc.Checkpoint{TableUUID: "u1", SnapshotID: 1, Seq: 1, Done: true}); err == nil {
		t.Fatal("a checkpoint moving backwards was saved")
	}
	if err := s.Save(ctx, "p", "shop.orders", cdc.Checkpoint{TableUUID: "u1", SnapshotID: 4, Seq: 4, Done: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := fi.LoadFileIndex("u1"); len(got) != 2 || string(got["m5.avro"]) != "e" {
		t.Fatalf("after a failed and a good save: %v", got)
	}
	// Reset of the table drops its index with its checkpoint.
	if err := s.Reset("p", "shop.orders"); err != nil {
		t.Fatal(err)
	}
	if got, _ := fi.LoadFileIndex("u1"); len(got) != 0 {
		t.Fatalf("after reset: %v", got)
	}
	s.Close()
	checkConsistency(t, path)
}
