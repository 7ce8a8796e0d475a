package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/icecdc/icecdc/cdc"
)

// Defaults for the zero Options.
const (
	// DefaultLockTimeout is long enough for a restarting daemon to release
	// the lock and short enough that a duplicate daemon fails at once.
	DefaultLockTimeout = time.Second
	// DefaultHistoryLimit keeps about a day of one-minute commits per table.
	DefaultHistoryLimit = 1000
)

// Options tune Open. The zero value opens any valid state file without
// checking whose it is.
type Options struct {
	// LockTimeout is how long Open waits for another process to release
	// the file lock before it fails with ErrLocked. Default 1s.
	LockTimeout time.Duration
	// HistoryLimit is how many delivered snapshots each table keeps; the
	// oldest are trimmed in the transaction that adds a new one. Default
	// 1000; a negative value records no history.
	HistoryLimit int
	// Pipeline, when set, makes Open check that an existing file is this
	// pipeline's: it has the pipeline's bucket, which Open makes when it
	// creates the file for the pipeline. Otherwise Open fails with
	// ErrForeign. Default "": no check, for tools and tests.
	Pipeline string
	// Adopt makes Open accept, for Pipeline, a file that fails that check
	// or is empty (0 bytes): the pipeline's tables then start from their
	// configured start. Opened reports that it happened. It never accepts
	// a damaged file. Default false.
	Adopt bool
	// ReadOnly opens an existing file without writing to it (for
	// `icecdc status`): no file is created and no owner recorded. Default
	// false.
	ReadOnly bool

	now func() time.Time // tests pin the clock for golden files
}

// ErrLocked is returned by Open when another process holds the state file.
var ErrLocked = errors.New("in use by another icecdc process (lock held)")

// ErrCorrupt marks a stored record that does not decode. Nothing is
// repaired automatically: the operator decides whether to Reset the table.
// It is also a cdc.ErrPermanent: a table whose checkpoint is corrupt
// stops with the error instead of being retried forever.
var ErrCorrupt = cdc.Permanent(errors.New("corrupt state record"))

// ErrBackwards is returned by Save for a checkpoint earlier than the stored
// one of the same table uuid: delivering it would re-send confirmed events,
// and storing it means a bug in the caller.
var ErrBackwards = errors.New("checkpoint would move backwards")

// ErrNotFound is returned by Reset for a table that has no stored state, so
// that a mistyped name is reported rather than silently ignored.
var ErrNotFound = errors.New("no stored state")

// Store is the bbolt checkpoint store. Its methods are safe for concurrent
// use; bbolt runs one write transaction at a time.
type Store struct {
	db           *bolt.DB
	historyLimit int
	now          func() time.Time
	opened       Opened
	pending      pendingIndex // data-file index changes waiting for a Save
	group        group        // the Saves waiting for their transaction
}

var _ cdc.Store = (*Store)(nil)

// Open opens the state file at path and takes its lock, or creates the
// file (and its parent directories) when there is none. It refuses, with
// an error naming the path and saying what to do:
//   - a file that exists but cannot be trusted, wrapping ErrDamaged: 0
//     bytes (bbolt would make it a new database), truncated, not a bbolt
//     file, or failing the consistency check that Open runs on every
//     existing file; a corrupt file gives an error, never a panic;
//   - with Options.Pipeline, a valid file that is not the pipeline's,
//     wrapping ErrForeign (see Options.Adopt);
//   - a file another process holds for longer than Options.LockTimeout,
//     wrapping ErrLocked.
func Open(path string, opts Options) (*Store, error) {
	s, err := open(path, opts)
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	return s, nil
}

func open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.HistoryLimit == 0 {
		opts.HistoryLimit = DefaultHistoryLimit
	}
	if opts.now == nil {
		opts.now = time.Now
	}
	if strings.ContainsRune(opts.Pipeline, 0) {
		return nil, fmt.Errorf("pipeline name %q: contains a NUL byte", opts.Pipeline)
	}
	created := false
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) && !opts.ReadOnly {
		if created, err = create(path, opts); err != nil {
			return nil, err
		}
		fi, err = os.Stat(path)
	}
	switch {
	case err != nil:
		return nil, err
	case fi.IsDir():
		return nil, errors.New("is a directory, not a state file")
	case fi.Size() == 0 && (!opts.Adopt || opts.ReadOnly):
		return nil, errEmptyFile
	}
	// The file holds the pipeline's positions, and with them what tables
	// it follows: the owner's only, as Open creates it. An older or copied
	// file readable by others is tightened.
	var loose fs.FileMode
	tightened := false
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		loose = perm
		tightened = !opts.ReadOnly && os.Chmod(path, perm&^0o077) == nil
	}
	db, err := openBolt(path, opts, fi.Size() > 0)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, historyLimit: opts.HistoryLimit, now: opts.now}
	err = verify(db)
	if err == nil {
		identify := func(tx *bolt.Tx) error {
			var cerr error
			s.opened, cerr = claim(tx, opts, created, opts.now())
			return cerr
		}
		if opts.ReadOnly {
			err = db.View(identify)
		} else {
			err = db.Update(identify)
		}
	}
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.opened.LooseMode, s.opened.Tightened = loose, tightened
	return s, nil
}

// create makes a new state file at path: it is built under a temporary
// name in the same directory and linked into place, so that a crash while
// creating it never leaves a 0-byte or half-made file at path, which the
// next Open would refuse as damaged. When another process created path
// meanwhile, created is false and its file is opened as an existing one.
func create(path string, opts Options) (created bool, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return false, err
	}
	// Errors below name the directory, not the temporary file: the state
	// path is what the operator set (Open names it) and can fix.
	f, err := os.CreateTemp(dir, filepath.Base(path)+".new-*")
	if err != nil {
		return false, fmt.Errorf("cannot create the file in %s: %w", dir, bareError(err))
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Close(); err != nil {
		return false, err
	}
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		return false, fmt.Errorf("cannot create the file in %s: %w", dir, bareError(err))
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := claim(tx, opts, true, opts.now())
		return err
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("cannot create the file in %s: %w", dir, bareError(err))
	}
	// Link, not rename: a rename would replace a file another process
	// created and is already using.
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("cannot link the new file into place in %s: %w", dir, bareError(err))
	}
	// The new name is durable once the directory is; where directories
	// cannot be synced (Windows), the file system orders it by itself.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return true, nil
}

// bareError is err without the file name an *fs.PathError or an
// *os.LinkError adds.
func bareError(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// Opened says whether Open created the file, adopted it, and which other
// pipelines have checkpoints in it.
func (s *Store) Opened() Opened { return s.opened }

// Path is the state file's path, for messages.
func (s *Store) Path() string { return s.db.Path() }

// Close releases the file and its lock. Calling it again does nothing.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close state %s: %w", s.db.Path(), err)
	}
	return nil
}

// Load returns the table's checkpoint in the pipeline; ok is false when
// none was saved.
func (s *Store) Load(ctx context.Context, pipeline, table string) (cp cdc.Checkpoint, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return cdc.Checkpoint{}, false, fmt.Errorf("load checkpoint %s/%s: %w", pipeline, table, err)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		tb := tableBucket(tx, pipeline, table)
		if tb == nil {
			return nil
		}
		raw := tb.Get(keyCheckpoint)
		if raw == nil {
			return nil
		}
		rec, err := decodeCheckpoint(raw)
		if err != nil {
			return corrupt(keyCheckpoint, err)
		}
		cp, ok = rec.Checkpoint, true
		return nil
	})
	if err != nil {
		return cdc.Checkpoint{}, false, fmt.Errorf("state %s: load checkpoint %s/%s: %w", s.db.Path(), pipeline, table, err)
	}
	return cp, ok, nil
}

// Save stores the table's checkpoint in an fsynced transaction and, when
// cp.Done, records the snapshot in the table's history. A checkpoint
// earlier than the stored one with the same table uuid is refused with
// ErrBackwards; a different uuid (a re-created table) replaces the stored
// checkpoint and clears the history. The context is checked before the
// transaction starts; a started commit is never abandoned half way.
func (s *Store) Save(ctx context.Context, pipeline, table string, cp cdc.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("save checkpoint %s/%s: %w", pipeline, table, err)
	}
	err := validate(pipeline, table, cp)
	if err == nil {
		now := s.now()
		files := s.takePending(pipeline, table)
		// Grouped: the saves of many tables at once (thousands of tables
		// delivering their first commits) share one fsynced transaction
		// instead of two fsyncs each; each still returns once its
		// checkpoint is on disk, and a save alone waits for nobody. The
		// function may run twice (the others of a group one of which
		// failed run again), each time in a transaction of its own: it
		// has no effect outside it.
		err = s.group.run(s.db, func(tx *bolt.Tx) error {
			if err := s.save(tx, pipeline, table, cp, now); err != nil {
				return err
			}
			if files == nil {
				return nil
			}
			return writeFiles(tableBucket(tx, pipeline, table), files)
		})
		if err != nil && files != nil {
			s.restorePending(pipeline, table, files)
		}
	}
	if err != nil {
		return fmt.Errorf("save checkpoint %s/%s: %w", pipeline, table, err)
	}
	return nil
}

func (s *Store) save(tx *bolt.Tx, pipeline, table string, cp cdc.Checkpoint, now time.Time) error {
	pb, err := tx.CreateBucketIfNotExists([]byte(pipeline))
	if err != nil {
		return err
	}
	tb, err := pb.CreateBucketIfNotExists([]byte(table))
	if err != nil {
		return err
	}
	if raw := tb.Get(keyCheckpoint); raw != nil {
		old, err := decodeCheckpoint(raw)
		if err != nil {
			return corrupt(keyCheckpoint, err)
		}
		switch {
		case old.TableUUID == cp.TableUUID && cp.Before(old.Checkpoint):
			return fmt.Errorf("%w: stored %s, new %s", ErrBackwards, old.Checkpoint, cp)
		case old.TableUUID != cp.TableUUID:
			// A re-created table restarts its sequence numbers; its
			// predecessor's history would interleave with them and be
			// trimmed in the wrong order.
			if err := tb.DeleteBucket(keyHistory); err != nil && !errors.Is(err, berrors.ErrBucketNotFound) {
				return err
			}
		}
	}
	if err := tb.Put(keyCheckpoint, encodeCheckpoint(cp, now)); err != nil {
		return err
	}
	if cp.Done && s.historyLimit > 0 {
		return recordHistory(tb, cp, now, s.historyLimit)
	}
	return nil
}

// Reset deletes the table's checkpoint and history, so that the pipeline
// starts it again from its configured start position. It returns an error
// wrapping ErrNotFound when there is nothing to delete.
func (s *Store) Reset(pipeline, table string) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		pb := tx.Bucket([]byte(pipeline))
		if pb == nil {
			return ErrNotFound
		}
		err := pb.DeleteBucket([]byte(table))
		if errors.Is(err, berrors.ErrBucketNotFound) || errors.Is(err, berrors.ErrIncompatibleValue) {
			return ErrNotFound
		}
		// The pipeline's bucket stays, even empty: it marks the file as
		// the pipeline's (see Open).
		return err
	})
	if err != nil {
		return fmt.Errorf("reset %s/%s: %w", pipeline, table, err)
	}
	return nil
}

// ResetAll deletes the checkpoints and histories of every table of the
// pipeline, so that each starts again from its configured start position,
// and returns the tables' names. The pipeline's bucket stays, so the file
// is still the pipeline's. It returns an error wrapping ErrNotFound when
// there is nothing to delete.
func (s *Store) ResetAll(pipeline string) ([]string, error) {
	var tables []string
	err := s.db.Update(func(tx *bolt.Tx) error {
		pb := tx.Bucket([]byte(pipeline))
		if pb == nil || pipeline == string(metaBucket) {
			return ErrNotFound
		}
		err := pb.ForEachBucket(func(name []byte) error {
			tables = append(tables, string(name))
			return nil
		})
		if err != nil {
			return err
		}
		if len(tables) == 0 {
			return ErrNotFound
		}
		for _, t := range tables {
			if err := pb.DeleteBucket([]byte(t)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reset %s: %w", pipeline, err)
	}
	return tables, nil
}

// TableState is one table's stored checkpoint, as `icecdc status` shows it.
type TableState struct {
	Table      string
	Checkpoint cdc.Checkpoint
	SavedAt    time.Time // when the checkpoint was stored
}

// Tables lists every table of the pipeline that has a checkpoint, in byte
// order of the table names. An unknown pipeline has none.
func (s *Store) Tables(pipeline string) ([]TableState, error) {
	var out []TableState
	err := s.db.View(func(tx *bolt.Tx) error {
		pb := tx.Bucket([]byte(pipeline))
		if pb == nil {
			return nil
		}
		return pb.ForEachBucket(func(name []byte) error {
			raw := pb.Bucket(name).Get(keyCheckpoint)
			if raw == nil {
				return nil
			}
			rec, err := decodeCheckpoint(raw)
			if err != nil {
				return fmt.Errorf("table %s: %w", name, corrupt(keyCheckpoint, err))
			}
			out = append(out, TableState{
				Table:      string(name),
				Checkpoint: rec.Checkpoint,
				SavedAt:    time.UnixMilli(rec.SavedAtMs),
			})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state %s: list tables of pipeline %s: %w", s.db.Path(), pipeline, err)
	}
	return out, nil
}

func tableBucket(tx *bolt.Tx, pipeline, table string) *bolt.Bucket {
	pb := tx.Bucket([]byte(pipeline))
	if pb == nil {
		return nil
	}
	return pb.Bucket([]byte(table))
}

// validate rejects what bbolt cannot key, and positions that big-endian
// history keys would sort wrongly.
func validate(pipeline, table string, cp cdc.Checkpoint) error {
	switch {
	case pipeline == "":
		return errors.New("empty pipeline name")
	case table == "":
		return errors.New("empty table name")
	case cp.Seq < 0 || cp.Next < 0:
		return fmt.Errorf("invalid checkpoint %s: negative position", cp)
	}
	return nil
}
