package state

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/icecdc/icecdc/cdc"
)

// wantRefused checks that Open failed with an error of kind that is one
// line, begins with "state <path>: " and says everything in want.
func wantRefused(t *testing.T, err error, kind error, path string, want ...string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("Open = %v; want an error matching %v", err, kind)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "state "+path+": ") || strings.Contains(msg, "\n") {
		t.Fatalf("error %q is not one line beginning with %q", msg, "state "+path+": ")
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
}

var ordersCP = cdc.Checkpoint{TableUUID: "u-orders", SnapshotID: 77, Seq: 300, Next: 12, Done: true}

// realStateFile writes a state file shaped like a daemon's after a while:
// one table whose history spans several pages (so the file has branch
// pages), and two small ones.
func realStateFile(tb testing.TB, path string) {
	tb.Helper()
	s, err := Open(path, Options{Pipeline: "shop-cdc"})
	if err != nil {
		tb.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		cp := cdc.Checkpoint{TableUUID: "u-orders", Next: 12, Done: true}
		for seq := int64(1); seq <= 300; seq++ {
			cp.Seq, cp.SnapshotID = seq, seq*7
			if seq == 300 {
				cp = ordersCP
			}
			if err := s.save(tx, "shop-cdc", "shop.orders", cp, s.now()); err != nil {
				return err
			}
		}
		for _, table := range []string{"shop.books", "shop.returns"} {
			if err := s.save(tx, "shop-cdc", table, cdc.Checkpoint{TableUUID: "u-" + table, Seq: 3, SnapshotID: 9}, s.now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	// One more commit: whichever meta page a test damages, the other
	// one's transaction holds the orders checkpoint too.
	if err := s.Save(ctx, "shop-cdc", "shop.books", cdc.Checkpoint{TableUUID: "u-shop.books", Seq: 4, SnapshotID: 10}); err != nil {
		tb.Fatal(err)
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
}

func TestOpenFreshPath(t *testing.T) {
	path := statePath(t)
	s, err := Open(path, Options{Pipeline: "shop-cdc"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Opened(); !got.Created || got.Adopted || len(got.Others) != 0 {
		t.Fatalf("Opened of a new file = %+v", got)
	}
	// Made under a temporary name and linked into place: nothing else
	// is left in the directory.
	if entries, err := os.ReadDir(filepath.Dir(path)); err != nil || len(entries) != 1 || entries[0].Name() != "state.db" {
		t.Fatalf("the directory holds %v, %v; want only state.db", entries, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Stopped before any table stored a position: the file is still the
	// pipeline's, because Open recorded that it created it.
	s = mustOpen(t, path, Options{Pipeline: "shop-cdc"})
	if got := s.Opened(); got.Created || got.Adopted {
		t.Fatalf("Opened on reopening = %+v", got)
	}
}

// Two daemons started on one new path: one creates the file, the other
// finds it in use, and neither replaces the other's file.
func TestOpenCreateRace(t *testing.T) {
	for range 5 {
		path := statePath(t)
		errs := make(chan error, 2)
		stores := make(chan *Store, 2)
		for range 2 {
			go func() {
				s, err := Open(path, Options{Pipeline: "shop-cdc", LockTimeout: 50 * time.Millisecond})
				stores <- s
				errs <- err
			}()
		}
		var opened []*Store
		for range 2 {
			if s := <-stores; s != nil {
				opened = append(opened, s)
			}
			if err := <-errs; err != nil && !errors.Is(err, ErrLocked) {
				t.Fatalf("Open: %v", err)
			}
		}
		if len(opened) != 1 {
			t.Fatalf("%d of two concurrent Opens of a new file succeeded", len(opened))
		}
		if err := opened[0].Save(ctx, "shop-cdc", "t", oldCP); err != nil {
			t.Fatal(err)
		}
		opened[0].Close()
		mustOpenClose(t, path, Options{Pipeline: "shop-cdc"}, func(s *Store) {
			if _, ok, err := s.Load(ctx, "shop-cdc", "t"); err != nil || !ok {
				t.Fatalf("the checkpoint saved by the Open that won is gone: %v, %v", ok, err)
			}
		})
	}
}

func TestOpenEmptyFile(t *testing.T) {
	for _, opts := range []Options{{}, {Pipeline: "shop-cdc"}, {Pipeline: "shop-cdc", ReadOnly: true}, {Pipeline: "shop-cdc", ReadOnly: true, Adopt: true}} {
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path, opts)
		wantRefused(t, err, ErrDamaged, path, "the file is empty (0 bytes) but exists", "will not start over silently", "--adopt-state")
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
			t.Fatalf("the refused file was changed: %v, %v", fi.Size(), err)
		}
	}
}

// The override: an empty file becomes the pipeline's, and stays so.
func TestOpenEmptyFileAdopted(t *testing.T) {
	path := statePath(t)
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{Pipeline: "shop-cdc", Adopt: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Opened(); got.Created || !got.Adopted || len(got.Others) != 0 {
		t.Fatalf("Opened = %+v; want adopted", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, Options{Pipeline: "shop-cdc"})
	if got := s.Opened(); got.Adopted {
		t.Fatalf("Opened on reopening = %+v; the adoption was not recorded", got)
	}
}

func TestOpenTruncated(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	realStateFile(t, src)
	whole, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var reach, pageSize int
	func() {
		s := mustOpen(t, src, Options{})
		pageSize = s.db.Info().PageSize
		s.db.View(func(tx *bolt.Tx) error { reach = int(tx.Size()); return nil })
		s.Close()
	}()
	if reach < 8*pageSize {
		t.Fatalf("the test file reaches to %d bytes only", reach)
	}
	for name, size := range map[string]int{
		"last page in use cut off": reach - pageSize,
		"half of it":               reach / 2,
		"mid-page":                 reach/2 + 100,
		"meta pages only":          2 * pageSize,
		"first meta page only":     pageSize,
		"a few bytes":              100,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, whole[:size], 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, Options{Pipeline: "shop-cdc", Adopt: true})
			wantRefused(t, err, ErrDamaged, path, "restore it from a backup")
			if size >= 2*pageSize {
				wantRefused(t, err, ErrDamaged, path, "the file is truncated")
			}
		})
	}
}

// page reads the header fields of page id that the tests below flip.
type pageHeader struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

func readPage(b []byte, pageSize, id int) pageHeader {
	p := b[id*pageSize:]
	return pageHeader{
		id:       binary.LittleEndian.Uint64(p),
		flags:    binary.LittleEndian.Uint16(p[8:]),
		count:    binary.LittleEndian.Uint16(p[10:]),
		overflow: binary.LittleEndian.Uint32(p[12:]),
	}
}

// bbolt's page header: id (8 bytes), flags (2), count (2), overflow (4);
// then the elements: a branch element is pos, ksize (4 each) and the
// child's page id (8); a leaf element is flags, pos, ksize, vsize (4 each).
const (
	pageHeaderSize = 16
	flagBranch     = 0x01
	flagLeaf       = 0x02
	flagMeta       = 0x04
)

// TestOpenBitFlips damages a real state file one byte at a time, at
// offsets chosen from its layout, and wants Open to refuse the file with
// one line naming it, never to panic or crash; or, where the byte is one
// bbolt does not depend on, to open it with the checkpoint intact.
func TestOpenBitFlips(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	realStateFile(t, src)
	whole, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var pageSize, reach, ordersRoot int
	var branch, leaf []int // pages in use, by type
	func() {
		s := mustOpen(t, src, Options{})
		pageSize = s.db.Info().PageSize
		err := s.db.View(func(tx *bolt.Tx) error {
			reach = int(tx.Size())
			ordersRoot = int(tx.Bucket([]byte("shop-cdc")).Bucket([]byte("shop.orders")).Bucket(keyHistory).Root())
			for id := 2; id < reach/pageSize; id++ {
				info, err := tx.Page(id)
				if err != nil || info == nil {
					return err
				}
				switch info.Type {
				case "branch":
					branch = append(branch, id)
				case "leaf":
					leaf = append(leaf, id)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}()
	if len(branch) == 0 || len(leaf) < 4 || readPage(whole, pageSize, ordersRoot).flags != flagBranch {
		t.Fatalf("the test file has no branch page: branch %v, leaf %v, history root %d", branch, leaf, ordersRoot)
	}
	valueAt := bytes.Index(whole, []byte(`{"v":1,"table_uuid":"u-orders","snapshot_id":77`))
	if valueAt < 0 {
		t.Fatal("the orders checkpoint is not in the file")
	}
	meta := func(id int) int { return id*pageSize + pageHeaderSize } // the meta page's body
	bp := ordersRoot * pageSize
	lp := leaf[len(leaf)/2] * pageSize
	for _, tc := range []struct {
		name  string
		at    []int // every byte here is inverted
		opens bool  // the file stays usable: bbolt does not depend on the byte
	}{
		{name: "magic of both meta pages", at: []int{meta(0), meta(1)}},
		{name: "checksum of both meta pages", at: []int{meta(0) + 56, meta(1) + 56}},
		// bbolt keeps two meta pages so that a torn write of one leaves
		// the other: it opens at that one's transaction.
		{name: "meta page 0", at: []int{meta(0)}, opens: true},
		{name: "meta page 1", at: []int{meta(1) + 56}, opens: true},
		{name: "branch page id", at: []int{bp}},
		{name: "branch page flags", at: []int{bp + 8}},
		{name: "branch page count", at: []int{bp + 11}},
		{name: "branch child page id, high byte", at: []int{bp + pageHeaderSize + 8 + 5}},
		{name: "branch child page id, low byte", at: []int{bp + pageHeaderSize + 8}},
		// The key of a branch page's first element bounds nothing, so the
		// second element's is damaged: its low byte moves it within the
		// page, its third byte far outside it.
		{name: "branch key position, low byte", at: []int{bp + pageHeaderSize + 16}},
		{name: "branch key position, third byte", at: []int{bp + pageHeaderSize + 16 + 2}},
		{name: "branch key size", at: []int{bp + pageHeaderSize + 4}},
		{name: "leaf page id", at: []int{lp}},
		{name: "leaf page flags", at: []int{lp + 8}},
		{name: "leaf page count", at: []int{lp + 11}},
		{name: "leaf key position", at: []int{lp + pageHeaderSize + 4 + 3}},
		{name: "leaf key size", at: []int{lp + pageHeaderSize + 8 + 2}},
		{name: "leaf value size", at: []int{lp + pageHeaderSize + 12 + 3}},
		{name: "past the last page in use", at: []int{reach + 10}, opens: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(whole)
			for _, at := range tc.at {
				if at >= len(b) {
					t.Fatalf("offset %d is past the file's %d bytes", at, len(b))
				}
				b[at] ^= 0xff
			}
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, Options{Pipeline: "shop-cdc"})
			if !tc.opens {
				wantRefused(t, err, ErrDamaged, path, "restore it from a backup")
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if cp, ok, err := s.Load(ctx, "shop-cdc", "shop.orders"); err != nil || !ok || cp.TableUUID != ordersCP.TableUUID {
				t.Fatalf("Load = %v, %v, %v; want the orders checkpoint", cp, ok, err)
			}
		})
	}
	// bbolt keeps no checksum of what it stores: a damaged value passes
	// the file's checks, and is reported when it is read.
	t.Run("checkpoint value", func(t *testing.T) {
		b := bytes.Clone(whole)
		b[valueAt] ^= 0xff
		path := filepath.Join(t.TempDir(), "state.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s := mustOpen(t, path, Options{Pipeline: "shop-cdc"})
		if _, _, err := s.Load(ctx, "shop-cdc", "shop.orders"); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Load of a damaged checkpoint = %v; want ErrCorrupt", err)
		}
	})
}

func TestOpenNotABoltFile(t *testing.T) {
	for name, content := range map[string][]byte{
		"text":           []byte(strings.Repeat("not bbolt ", 1000)),
		"one byte":       {0},
		"zeros":          make([]byte, 64<<10),
		"a sqlite file":  append([]byte("SQLite format 3\x00"), make([]byte, 8192)...),
		"a gzipped file": gzipped(t, bytes.Repeat([]byte("x"), 1<<16)),
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, content, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Open(path, Options{Pipeline: "shop-cdc", Adopt: true})
			wantRefused(t, err, ErrDamaged, path, "restore it from a backup")
			if got, _ := os.ReadFile(path); !bytes.Equal(got, content) {
				t.Fatal("the refused file was changed")
			}
		})
	}
}

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var oldCP = cdc.Checkpoint{TableUUID: "u-1", SnapshotID: 5, Seq: 2, Done: true}

func TestOpenForeignPipeline(t *testing.T) {
	path := statePath(t)
	mustOpenClose(t, path, Options{Pipeline: "old-name"}, func(s *Store) {
		if err := s.Save(ctx, "old-name", "shop.orders", oldCP); err != nil {
			t.Fatal(err)
		}
	})
	_, err := Open(path, Options{Pipeline: "new-name"})
	wantRefused(t, err, ErrForeign, path,
		`holds checkpoints of pipeline "old-name", not "new-name": was the pipeline renamed?`, "--adopt-state")
	if want := `state ` + path + `: holds checkpoints of pipeline "old-name", not "new-name": was the pipeline renamed? ` +
		`Name it "old-name" again to resume, or run 'icecdc run --adopt-state' to start "new-name"'s tables from their configured start in this file`; err.Error() != want {
		t.Fatalf("error\n %s\nwant\n %s", err, want)
	}
	// Read-only, as `icecdc status` opens it: refused the same way.
	_, err = Open(path, Options{Pipeline: "new-name", ReadOnly: true})
	wantRefused(t, err, ErrForeign, path, `"old-name"`)

	// The override.
	mustOpenClose(t, path, Options{Pipeline: "new-name", Adopt: true}, func(s *Store) {
		if got, want := s.Opened(), (Opened{Adopted: true, Others: []string{"old-name"}}); !reflect.DeepEqual(got, want) {
			t.Fatalf("Opened = %+v; want %+v", got, want)
		}
		if _, ok, _ := s.Load(ctx, "new-name", "shop.orders"); ok {
			t.Fatal("the adopting pipeline found a checkpoint")
		}
	})
	// Adopted, the file is the pipeline's, before and after its first
	// checkpoint.
	mustOpenClose(t, path, Options{Pipeline: "new-name"}, nil)
	mustOpenClose(t, path, Options{Pipeline: "new-name"}, func(s *Store) {
		if err := s.Save(ctx, "new-name", "shop.orders", oldCP); err != nil {
			t.Fatal(err)
		}
	})
	mustOpenClose(t, path, Options{Pipeline: "new-name"}, func(s *Store) {
		if got := s.Opened(); got.Adopted || !reflect.DeepEqual(got.Others, []string{"old-name"}) {
			t.Fatalf("Opened = %+v", got)
		}
	})
	// The old name still finds its checkpoints.
	mustOpenClose(t, path, Options{Pipeline: "old-name"}, func(s *Store) {
		if cp, ok, err := s.Load(ctx, "old-name", "shop.orders"); err != nil || !ok || cp != oldCP {
			t.Fatalf("Load old-name = %v, %v, %v", cp, ok, err)
		}
	})
}

func TestOpenCreatedForAnotherPipeline(t *testing.T) {
	path := statePath(t)
	mustOpenClose(t, path, Options{Pipeline: "a"}, nil)
	mustOpenClose(t, path, Options{Pipeline: "b", Adopt: true}, nil)
	_, err := Open(path, Options{Pipeline: "new-name"})
	wantRefused(t, err, ErrForeign, path, `was made for pipelines "a", "b", not "new-name", and holds no checkpoints`)
}

// An existing file with no checkpoints that was not created for the
// pipeline: what deleted contents or a botched restore leave.
func TestOpenEmptyButExisting(t *testing.T) {
	for name, build := range map[string]func(path string){
		"made by a tool": func(path string) { mustOpenClose(t, path, Options{}, nil) },
		"plain bbolt, no buckets": func(path string) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
		},
		"every checkpoint reset by an old build": func(path string) {
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error {
				if _, err := tx.CreateBucket([]byte("shop-cdc")); err != nil {
					return err
				}
				return tx.DeleteBucket([]byte("shop-cdc"))
			})
			db.Close()
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := statePath(t)
			build(path)
			_, err := Open(path, Options{Pipeline: "shop-cdc"})
			wantRefused(t, err, ErrForeign, path,
				`the file exists but holds no checkpoints and was not created for pipeline "shop-cdc"`, "will not start over silently", "--adopt-state")
			mustOpenClose(t, path, Options{Pipeline: "shop-cdc", Adopt: true}, func(s *Store) {
				if got := s.Opened(); !got.Adopted || len(got.Others) != 0 {
					t.Fatalf("Opened = %+v", got)
				}
			})
			mustOpenClose(t, path, Options{Pipeline: "shop-cdc"}, nil)
		})
	}
}

// A state file written before files recorded their owner (the golden
// checkpoint in a bucket of its pipeline) still opens, and is then
// recorded as that pipeline's.
func TestOpenOldFormatFile(t *testing.T) {
	path := statePath(t)
	f, err := os.Open(filepath.Join("testdata", "v1-without-meta.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	old, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	want := cdc.Checkpoint{
		TableUUID: "5f0c2b9e-4c1a-4a9e-9d2b-1f6f3f1e8c7a", SnapshotID: 3051729675574597004,
		Seq: 17, Next: 250, Done: true, TimestampMs: 1_767_225_600_123,
	}
	check := func(s *Store) {
		t.Helper()
		if cp, ok, err := s.Load(ctx, "shop-cdc", "shop.orders"); err != nil || !ok || cp != want {
			t.Fatalf("Load = %v, %v, %v; want %v", cp, ok, err, want)
		}
		if h, err := s.History("shop-cdc", "shop.orders", 0); err != nil || len(h) != 1 || h[0].Seq != 17 {
			t.Fatalf("History = %v, %v", h, err)
		}
	}
	// Read-only (status) leaves the file as it is.
	mustOpenClose(t, path, Options{Pipeline: "shop-cdc", ReadOnly: true}, check)
	if got, _ := os.ReadFile(path); !bytes.Equal(got, old) {
		t.Fatal("a read-only Open changed the file")
	}
	_, err = Open(path, Options{Pipeline: "other"})
	wantRefused(t, err, ErrForeign, path, `holds checkpoints of pipeline "shop-cdc", not "other"`)
	mustOpenClose(t, path, Options{Pipeline: "shop-cdc"}, func(s *Store) {
		check(s)
		if got := s.Opened(); got.Created || got.Adopted || len(got.Others) != 0 {
			t.Fatalf("Opened = %+v", got)
		}
	})
	// Now recorded as shop-cdc's: it stays so after every table is reset.
	mustOpenClose(t, path, Options{Pipeline: "shop-cdc"}, func(s *Store) {
		if err := s.Reset("shop-cdc", "shop.orders"); err != nil {
			t.Fatal(err)
		}
	})
	mustOpenClose(t, path, Options{Pipeline: "shop-cdc"}, nil)
}

func TestOpenReadOnlyMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	_, err := Open(path, Options{Pipeline: "shop-cdc", ReadOnly: true})
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "state "+path+": ") {
		t.Fatalf("read-only Open of a missing file = %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a read-only Open created the file: %v", err)
	}
}

func TestResetAll(t *testing.T) {
	path := statePath(t)
	s := mustOpen(t, path, Options{Pipeline: "shop-cdc"})
	for _, table := range []string{"shop.orders", "shop.books"} {
		if err := s.Save(ctx, "shop-cdc", table, oldCP); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(ctx, "other", "shop.orders", oldCP); err != nil {
		t.Fatal(err)
	}
	got, err := s.ResetAll("shop-cdc")
	if err != nil || !reflect.DeepEqual(got, []string{"shop.books", "shop.orders"}) {
		t.Fatalf("ResetAll = %v, %v", got, err)
	}
	if ts, err := s.Tables("shop-cdc"); err != nil || len(ts) != 0 {
		t.Fatalf("Tables after ResetAll = %v, %v", ts, err)
	}
	if _, ok, _ := s.Load(ctx, "other", "shop.orders"); !ok {
		t.Fatal("ResetAll reached into another pipeline")
	}
	for _, p := range []string{"shop-cdc", "nope", ""} {
		if _, err := s.ResetAll(p); !errors.Is(err, ErrNotFound) {
			t.Errorf("ResetAll %q with nothing stored = %v; want ErrNotFound", p, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The pipeline starts again on its own file.
	mustOpenClose(t, path, Options{Pipeline: "shop-cdc"}, nil)
}

// mustOpenClose opens the store, calls fn and closes it.
func mustOpenClose(t *testing.T, path string, opts Options, fn func(*Store)) {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if fn != nil {
		fn(s)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkOpen measures Open of an existing file with its consistency
// check: a pipeline of 100 tables, each with a full default history.
func BenchmarkOpen(b *testing.B) {
	path := statePath(b)
	s := mustOpen(b, path, Options{Pipeline: "bench"})
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i := range 100 {
			cp := cdc.Checkpoint{TableUUID: "u", Next: 500, Done: true}
			for range DefaultHistoryLimit {
				cp.Seq++
				cp.SnapshotID = cp.Seq * 7
				if err := s.save(tx, "bench", fmt.Sprintf("shop.t%03d", i), cp, s.now()); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := Open(path, Options{Pipeline: "bench", ReadOnly: true, LockTimeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB")
}

// TestOpenTightensMode: an existing state file other users could read
// (copied, restored, or made by an older version with 0644) is made the
// owner's only, and Opened says what it was; a read-only open leaves it
// as it is and says so too.
func TestOpenTightensMode(t *testing.T) {
	if os.PathSeparator != '/' {
		t.Skip("no permission bits")
	}
	path := statePath(t)
	mustOpenClose(t, path, Options{Pipeline: "p"}, nil)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, path, Options{Pipeline: "p", ReadOnly: true})
	if o := ro.Opened(); o.LooseMode != 0o644 || o.Tightened {
		t.Errorf("read-only open: Opened %+v, want mode 0644 reported and left", o)
	}
	ro.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("a read-only open changed the mode to %o", fi.Mode().Perm())
	}
	s := mustOpen(t, path, Options{Pipeline: "p"})
	if o := s.Opened(); o.LooseMode != 0o644 || !o.Tightened {
		t.Errorf("Opened %+v, want mode 0644 tightened", o)
	}
	s.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %o after Open, want 0600", fi.Mode().Perm())
	}
	s = mustOpen(t, path, Options{Pipeline: "p"})
	if o := s.Opened(); o.LooseMode != 0 || o.Tightened {
		t.Errorf("a 0600 file: Opened %+v", o)
	}
	s.Close()
}

// TestOpenUnwritableDirectory: a state path whose directory cannot take a
// new file is refused naming the state path and the directory, never the
// temporary file Open creates it under.
func TestOpenUnwritableDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// Root writes anywhere a mode allows nothing; /proc takes no
		// new files from anyone.
		dir = "/proc"
		if _, err := os.Stat(dir); err != nil {
			t.Skip("running as root, and no /proc")
		}
	}
	path := filepath.Join(dir, "icecdc-state.db")
	_, err := Open(path, Options{Pipeline: "p"})
	if err == nil {
		t.Fatal("opened a state file in an unwritable directory")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "state "+path+": cannot create the file in "+dir+": ") || strings.Contains(msg, ".new-") {
		t.Fatalf("error %q, want it to name the state path and its directory, not the temporary file", msg)
	}
}
