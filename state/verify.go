package state

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"runtime/debug"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged marks a state file that exists but cannot be trusted: empty
// (0 bytes), truncated, not a bbolt file, or failing the consistency
// check. Open never repairs or overwrites one: the operator restores it
// from a backup or moves it away.
var ErrDamaged = errors.New("damaged state file")

// adviceRestore ends the message of a damaged file: the error is all an
// operator sees, so it says what to do.
const adviceRestore = "restore it from a backup, or move it away to start the pipeline afresh (every table from its configured start)"

// errEmptyFile is the 0-byte file: bbolt would initialise it as a new
// database, which is how a truncated file would start every table over.
var errEmptyFile = refuse(ErrDamaged, "the file is empty (0 bytes) but exists: it may have been truncated, and icecdc will not start over silently; "+
	"move it away to start the pipeline afresh, or run 'icecdc run --adopt-state' to start every table from its configured start")

// refusal is an error whose message says everything itself and which
// matches its kind (ErrDamaged, ErrForeign) under errors.Is, so that the
// message does not begin with the sentinel's words.
type refusal struct {
	kind error
	msg  string
}

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == r.kind }

func refuse(kind error, format string, a ...any) error {
	return &refusal{kind: kind, msg: fmt.Sprintf(format, a...)}
}

// openBolt opens the bbolt file. An existing file is probed first: a
// read-only open reads just its meta pages, which say how far its pages
// reach, and a file shorter than that is refused as truncated before
// bbolt reads a page past its end.
func openBolt(path string, opts Options, existing bool) (*bolt.DB, error) {
	if existing {
		if err := probe(path, opts.LockTimeout); err != nil {
			return nil, err
		}
	}
	return guardedOpen(path, &bolt.Options{
		Timeout:  opts.LockTimeout,
		ReadOnly: opts.ReadOnly,
		NoSync:   false, // Save promises durability: every commit is fsynced
		// Read the freelist now, under the fault guard, rather than in
		// the goroutine of the consistency check.
		PreLoadFreelist: true,
	})
}

func probe(path string, lockTimeout time.Duration) error {
	db, err := guardedOpen(path, &bolt.Options{Timeout: lockTimeout, ReadOnly: true})
	if err != nil {
		return err
	}
	defer db.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return db.View(func(tx *bolt.Tx) error {
		if reach := tx.Size(); reach > fi.Size() {
			return refuse(ErrDamaged, "the file is truncated (%d bytes, its pages reach to byte %d): %s", fi.Size(), reach, adviceRestore)
		}
		// bbolt grows its file in whole pages: a partial page is a cut.
		if ps := int64(db.Info().PageSize); ps > 0 && fi.Size()%ps != 0 {
			return refuse(ErrDamaged, "the file is truncated (%d bytes, not a whole number of %d-byte pages): %s", fi.Size(), ps, adviceRestore)
		}
		return nil
	})
}

// guardedOpen is bolt.Open with a panic or a memory fault inside bbolt
// (it reads the file through mmap and trusts what it reads) turned into
// an error. After such a panic the file is closed, which drops its lock;
// the mapping stays until the process exits.
func guardedOpen(path string, bo *bolt.Options) (db *bolt.DB, err error) {
	var file *os.File
	bo.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if file != nil {
				_ = file.Close()
			}
			db, err = nil, refuse(ErrDamaged, "the file is corrupt (%s): %s", brief(r), adviceRestore)
		}
	}()
	db, err = bolt.Open(path, 0o600, bo)
	var errno syscall.Errno
	var pathErr *fs.PathError
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, ErrLocked
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return nil, err // the file system's answer, not the file's content
	}
	// ErrInvalid, ErrChecksum, ErrVersionMismatch, or a file too short
	// for its header.
	return nil, refuse(ErrDamaged, "not an icecdc state file, or its header is damaged (%v): %s", err, adviceRestore)
}

// verify checks an existing file before anything trusts it: every page
// reachable from the root must read back as a consistent tree. It reads
// the whole file once: about 50ms for the 40 MiB of a hundred tables with
// full histories (BenchmarkOpen), well under a millisecond for a typical
// file of a few tables.
func verify(db *bolt.DB) error {
	return db.View(func(tx *bolt.Tx) error {
		// bbolt's own check (tx.Check) runs in a goroutine of its own,
		// where a wild page pointer in a corrupt file would crash the
		// process. inspect reads every page the check will read first,
		// in this goroutine and under a fault guard.
		if err := inspect(tx); err != nil {
			return refuse(ErrDamaged, "the file is corrupt (%s): %s", brief(err), adviceRestore)
		}
		var first error
		problems := 0
		for err := range tx.Check() { // drained to the end: the check reads tx until it closes the channel
			if first == nil {
				first = err
			}
			problems++
		}
		if first != nil {
			return refuse(ErrDamaged, "the file is corrupt (%s; %d problem(s) in all): %s", brief(first), problems, adviceRestore)
		}
		return nil
	})
}

// brief shortens what bbolt says about a corrupt file (its check dumps
// whole keys in hex) to what fits an error line.
func brief(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// inspect walks every bucket and reads every key and value, checks that
// keys come in order and that looking each one up finds it. Looking a key
// up reads the branch-page keys on its way down, so after the walk every
// page and key that tx.Check visits has been read once here, where a
// memory fault is a panic that is recovered rather than a crash.
func inspect(tx *bolt.Tx) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	var prev []byte
	c := tx.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("top-level bucket %q: out of order", k)
		}
		prev = k
		b := tx.Bucket(k)
		if v != nil || b == nil {
			return fmt.Errorf("top-level key %q: not a bucket", k)
		}
		if err := inspectBucket(b); err != nil {
			return fmt.Errorf("bucket %q: %w", k, err)
		}
	}
	return nil
}

func inspectBucket(b *bolt.Bucket) error {
	var prev []byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("key %q: out of order", k)
		}
		prev = k
		crc32.Update(0, castagnoli, k) // reads every byte of the key
		if v == nil {
			child := b.Bucket(k)
			if child == nil {
				return fmt.Errorf("bucket %q: not found by lookup", k)
			}
			if err := inspectBucket(child); err != nil {
				return fmt.Errorf("bucket %q: %w", k, err)
			}
			continue
		}
		crc32.Update(0, castagnoli, v)
		if got := b.Get(k); got == nil || !bytes.Equal(got, v) {
			return fmt.Errorf("key %q: not found by lookup", k)
		}
	}
	return nil
}
