package state

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/icecdc/icecdc/cdc"
)

var ctx = context.Background()

func TestRoundTrip(t *testing.T) {
	s := mustOpen(t, statePath(t), Options{})
	if _, ok, err := s.Load(ctx, "shop-cdc", "shop.orders"); err != nil || ok {
		t.Fatalf("Load before Save = ok %v, err %v; want nothing", ok, err)
	}
	cps := map[string]cdc.Checkpoint{
		"shop.orders":    {TableUUID: "u-1", SnapshotID: 42, Seq: 7, Next: 500, TimestampMs: 1_700_000_000_123},
		"shop.customers": {TableUUID: "u-2", SnapshotID: -9, Seq: 1, Next: 3, Done: true},
	}
	for table, cp := range cps {
		if err := s.Save(ctx, "shop-cdc", table, cp); err != nil {
			t.Fatal(err)
		}
	}
	for table, want := range cps {
		got, ok, err := s.Load(ctx, "shop-cdc", table)
		if err != nil || !ok || got != want {
			t.Errorf("Load %s = %v, %v, %v; want %v", table, got, ok, err, want)
		}
		if _, ok, _ := s.Load(ctx, "other", table); ok {
			t.Errorf("Load other/%s found the shop-cdc checkpoint", table)
		}
	}
}

func TestPersistsAcrossReopen(t *testing.T) {
	path := statePath(t)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := cdc.Checkpoint{TableUUID: "u-1", SnapshotID: 42, Seq: 7, Done: true, Next: 12}
	if err := s.Save(ctx, "p", "shop.orders", want); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a second Close is harmless
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s = mustOpen(t, path, Options{})
	got, ok, err := s.Load(ctx, "p", "shop.orders")
	if err != nil || !ok || got != want {
		t.Fatalf("after reopen Load = %v, %v, %v; want %v", got, ok, err, want)
	}
	if h, err := s.History("p", "shop.orders", 0); err != nil || len(h) != 1 || h[0].Seq != 7 {
		t.Fatalf("after reopen History = %v, %v", h, err)
	}
}

func TestOpenCreatesParentDirs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "var", "lib", "icecdc", "state.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkConsistency(t, path) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// A second Open in the same process uses its own file descriptor, and flock
// locks belong to the open file, so it is refused like another process.
func TestOpenLockedInProcess(t *testing.T) {
	path := statePath(t)
	first, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{LockTimeout: 100 * time.Millisecond})
	assertLocked(t, path, err)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, path, Options{LockTimeout: 100 * time.Millisecond})
}

// The lock holds against another process, and the kernel drops it when that
// process dies without closing the store.
func TestOpenLockedByOtherProcess(t *testing.T) {
	path := statePath(t)
	child := startLockHolder(t, path)
	_, err := Open(path, Options{LockTimeout: 200 * time.Millisecond})
	assertLocked(t, path, err)

	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	s := mustOpen(t, path, Options{LockTimeout: 200 * time.Millisecond})
	got, ok, err := s.Load(ctx, "child", "shop.orders")
	if err != nil || !ok || got != childCheckpoint {
		t.Fatalf("checkpoint saved by the killed child: %v, %v, %v; want %v", got, ok, err, childCheckpoint)
	}
}

func assertLocked(t *testing.T, path string, err error) {
	t.Helper()
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v; want ErrLocked", err)
	}
	want := "state " + path + ": in use by another icecdc process (lock held)"
	if err.Error() != want {
		t.Fatalf("second Open error = %q; want %q", err, want)
	}
}

func TestSaveRefusesBackwards(t *testing.T) {
	s := mustOpen(t, statePath(t), Options{})
	stored := cdc.Checkpoint{TableUUID: "u-1", SnapshotID: 50, Seq: 5, Next: 10, Done: true}
	if err := s.Save(ctx, "p", "t", stored); err != nil {
		t.Fatal(err)
	}
	for _, cp := range []cdc.Checkpoint{
		{TableUUID: "u-1", SnapshotID: 50, Seq: 5, Next: 3},
		{TableUUID: "u-1", SnapshotID: 40, Seq: 4, Next: 1, Done: true},
		{TableUUID: "u-1", SnapshotID: 50, Seq: 5, Next: 9, Done: true},
	} {
		err := s.Save(ctx, "p", "t", cp)
		if !errors.Is(err, ErrBackwards) {
			t.Fatalf("Save %v after %v = %v; want ErrBackwards", cp, stored, err)
		}
		for _, pos := range []string{"p/t", stored.String(), cp.String()} {
			if !strings.Contains(err.Error(), pos) {
				t.Errorf("error %q does not name %q", err, pos)
			}
		}
	}
	if got, _, _ := s.Load(ctx, "p", "t"); got != stored {
		t.Fatalf("a refused Save changed the checkpoint to %v", got)
	}

	// Saving the same position again is not a move: a retried Save after
	// an ambiguous failure must succeed.
	if err := s.Save(ctx, "p", "t", stored); err != nil {
		t.Fatalf("re-Save of the stored checkpoint: %v", err)
	}
	if h, _ := s.History("p", "t", 0); len(h) != 1 {
		t.Fatalf("re-Save of a done checkpoint: history has %d entries, want 1", len(h))
	}

	// A re-created table has a new uuid and starts over; its predecessor's
	// history goes with it.
	recreated := cdc.Checkpoint{TableUUID: "u-2", SnapshotID: 1, Seq: 1, Next: 1}
	if err := s.Save(ctx, "p", "t", recreated); err != nil {
		t.Fatalf("Save for a new table uuid: %v", err)
	}
	if got, _, _ := s.Load(ctx, "p", "t"); got != recreated {
		t.Fatalf("Load = %v; want %v", got, recreated)
	}
	if h, _ := s.History("p", "t", 0); len(h) != 0 {
		t.Fatalf("history of the re-created table = %v; want empty", h)
	}
}

func TestSaveRejectsInvalid(t *testing.T) {
	s := mustOpen(t, statePath(t), Options{})
	ok := cdc.Checkpoint{TableUUID: "u", Seq: 1}
	for name, call := range map[string]func() error{
		"empty pipeline": func() error { return s.Save(ctx, "", "t", ok) },
		"empty table":    func() error { return s.Save(ctx, "p", "", ok) },
		"negative seq":   func() error { return s.Save(ctx, "p", "t", cdc.Checkpoint{TableUUID: "u", Seq: -1}) },
		"negative next":  func() error { return s.Save(ctx, "p", "t", cdc.Checkpoint{TableUUID: "u", Next: -1}) },
	} {
		if err := call(); err == nil {
			t.Errorf("%s: Save succeeded", name)
		}
	}
	if tables, err := s.Tables("p"); err != nil || len(tables) != 0 {
		t.Fatalf("Tables after invalid saves = %v, %v", tables, err)
	}
}

func TestCanceledContext(t *testing.T) {
	s := mustOpen(t, statePath(t), Options{})
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	cp := cdc.Checkpoint{TableUUID: "u", Seq: 1}
	if err := s.Save(canceled, "p", "t", cp); !errors.Is(err, context.Canceled) {
		t.Fatalf("Save with a canceled context = %v", err)
	}
	if _, _, err := s.Load(canceled, "p", "t"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with a canceled context = %v", err)
	}
	if _, ok, _ := s.Load(ctx, "p", "t"); ok {
		t.Fatal("Save with a canceled context stored the checkpoint")
	}
}

func TestTablesAndReset(t *testing.T) {
	now := time.UnixMilli(1_750_000_000_000)
	s := mustOpen(t, statePath(t), Options{now: fixedClock(now)})
	a := cdc.Checkpoint{TableUUID: "a", SnapshotID: 1, Seq: 1, Next: 4, Done: true}
	b := cdc.Checkpoint{TableUUID: "b", SnapshotID: 2, Seq: 9, Next: 100}
	for table, cp := range map[string]cdc.Checkpoint{"shop.orders": a, "shop.books": b} {
		if err := s.Save(ctx, "shop-cdc", table, cp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(ctx, "other", "shop.orders", b); err != nil {
		t.Fatal(err)
	}
	got, err := s.Tables("shop-cdc")
	want := []TableState{
		{Table: "shop.books", Checkpoint: b, SavedAt: now},
		{Table: "shop.orders", Checkpoint: a, SavedAt: now},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Tables = %v, %v; want %v", got, err, want)
	}
	if got, err := s.Tables("nope"); err != nil || len(got) != 0 {
		t.Fatalf("Tables of an unknown pipeline = %v, %v", got, err)
	}

	if err := s.Reset("shop-cdc", "shop.orders"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Load(ctx, "shop-cdc", "shop.orders"); ok {
		t.Fatal("checkpoint survived Reset")
	}
	if h, _ := s.History("shop-cdc", "shop.orders", 0); len(h) != 0 {
		t.Fatalf("history survived Reset: %v", h)
	}
	if _, ok, _ := s.Load(ctx, "other", "shop.orders"); !ok {
		t.Fatal("Reset reached into another pipeline")
	}
	if got, _ := s.Tables("shop-cdc"); len(got) != 1 || got[0].Table != "shop.books" {
		t.Fatalf("Tables after Reset = %v", got)
	}
	for _, args := range [][2]string{{"shop-cdc", "shop.orders"}, {"nope", "shop.orders"}} {
		if err := s.Reset(args[0], args[1]); !errors.Is(err, ErrNotFound) {
			t.Errorf("Reset %s/%s with nothing stored = %v; want ErrNotFound", args[0], args[1], err)
		}
	}
	// A reset table starts over without tripping the backwards check.
	restart := cdc.Checkpoint{TableUUID: "a", Seq: 0}
	if err := s.Save(ctx, "shop-cdc", "shop.orders", restart); err != nil {
		t.Fatalf("Save after Reset: %v", err)
	}
}

func TestCorruptRecords(t *testing.T) {
	good := cdc.Checkpoint{TableUUID: "u", SnapshotID: 1, Seq: 5, Next: 2, Done: true}
	for _, tc := range []struct {
		name, value, key string
		history          bool
		keyBytes         []byte
	}{
		{name: "garbage checkpoint", key: "checkpoint", value: "{not json"},
		{name: "wrong type", key: "checkpoint", value: `{"v":1,"sequence_number":"five"}`},
		{name: "future version", key: "checkpoint", value: `{"v":2,"table_uuid":"u"}`},
		{name: "missing version", key: "checkpoint", value: `{"table_uuid":"u"}`},
		{name: "history value", key: "history/0000000000000005", history: true, keyBytes: seqKey(5), value: "]"},
		{name: "history key", key: "history/05", history: true, keyBytes: []byte{5}, value: `{"v":1,"seq":5}`},
		{name: "history seq", key: "history/0000000000000005", history: true, keyBytes: seqKey(5), value: `{"v":1,"seq":6}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustOpen(t, statePath(t), Options{})
			if err := s.Save(ctx, "shop-cdc", "shop.orders", good); err != nil {
				t.Fatal(err)
			}
			err := s.db.Update(func(tx *bolt.Tx) error {
				tb := tableBucket(tx, "shop-cdc", "shop.orders")
				if tc.history {
					return tb.Bucket(keyHistory).Put(tc.keyBytes, []byte(tc.value))
				}
				return tb.Put(keyCheckpoint, []byte(tc.value))
			})
			if err != nil {
				t.Fatal(err)
			}
			var errs []error
			if tc.history {
				_, err := s.History("shop-cdc", "shop.orders", 0)
				errs = append(errs, err)
			} else {
				_, _, err := s.Load(ctx, "shop-cdc", "shop.orders")
				_, terr := s.Tables("shop-cdc")
				errs = append(errs, err, terr, s.Save(ctx, "shop-cdc", "shop.orders", good))
			}
			for _, err := range errs {
				if !errors.Is(err, ErrCorrupt) || !errors.Is(err, cdc.ErrPermanent) {
					t.Fatalf("got %v; want ErrCorrupt", err)
				}
				for _, name := range []string{"shop-cdc", "shop.orders", `"` + tc.key + `"`} {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("error %q does not name %s", err, name)
					}
				}
			}
		})
	}
}
