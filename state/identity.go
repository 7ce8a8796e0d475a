package state

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ErrForeign is returned by Open for a valid state file that holds no
// state of the pipeline and was not created for it: one with other
// pipelines' checkpoints (a renamed pipeline), or an empty one that
// existed before (its contents deleted, a restore gone wrong). Starting
// there would start every table over from its configured start, so Open
// does so only with Options.Adopt.
var ErrForeign = errors.New("not this pipeline's state file")

// Opened says what Open found, for the daemon's log.
type Opened struct {
	// Created is set when there was no file: Open created it.
	Created bool
	// Adopted is set when Options.Adopt made an empty (0-byte or
	// bucketless) file or another pipeline's file this pipeline's.
	Adopted bool
	// Others are the other pipelines with checkpoints in the file.
	Others []string
	// LooseMode is the permission bits of an existing file that other
	// users could read or write (0644), else 0; Tightened says whether
	// Open took their access away (it does unless Options.ReadOnly, or
	// the file is not the process's to change).
	LooseMode fs.FileMode
	Tightened bool
}

// metaBucket holds what the file says about itself. Its name begins with
// a NUL byte, which no pipeline name has (Open refuses one), so it never
// collides with a pipeline's bucket.
var metaBucket = []byte("\x00icecdc")

var (
	keyFile      = []byte("file")      // fileRecord
	keyPipelines = []byte("pipelines") // bucket: pipeline name -> pipelineRecord
)

// How a pipeline came to own the file, as pipelineRecord.How says it.
const (
	howCreated = "created" // Open created the file for it
	howFound   = "found"   // its bucket was there, made before files recorded owners
	howAdopted = "adopted" // Options.Adopt
)

// claim checks that the file is the pipeline's, and makes it so when it
// was just created or is being adopted. A pipeline's own file has the
// pipeline's bucket: Open makes it when it creates the file for the
// pipeline, and Reset leaves it when it deletes the last table, so an
// existing file without it is one the pipeline never ran on, or one that
// lost its state. The meta bucket records, for people, when and how each
// pipeline came to the file. claim runs in a write transaction, or a read
// one when the store is read-only, and then records nothing.
func claim(tx *bolt.Tx, opts Options, created bool, now time.Time) (Opened, error) {
	out := Opened{Created: created}
	if meta := tx.Bucket(metaBucket); meta != nil {
		if raw := meta.Get(keyFile); raw != nil {
			if _, err := decodeFile(raw); err != nil {
				return out, corrupt(keyFile, err)
			}
		}
	}
	p := opts.Pipeline
	has := false
	var idle []string // other pipelines' buckets without checkpoints
	err := tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		switch {
		case bytes.Equal(name, metaBucket):
		case string(name) == p:
			has = true
		case b.Stats().BucketN > 1: // the bucket counts itself
			out.Others = append(out.Others, string(name))
		default:
			idle = append(idle, string(name))
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	if p == "" {
		if created && tx.Writable() {
			_, err := markFile(tx, created, now)
			return out, err
		}
		return out, nil
	}

	var how string
	switch {
	case has:
		how = howFound
	case created:
		how = howCreated
	case opts.Adopt:
		how, out.Adopted = howAdopted, true
	case len(out.Others) > 0:
		return out, refuse(ErrForeign, "holds checkpoints of %s, not %q: was the pipeline renamed? "+
			"%s to resume, or run 'icecdc run --adopt-state' to start %q's tables from their configured start in this file",
			pipelineList(out.Others), p, nameBack(out.Others), p)
	case len(idle) > 0:
		return out, refuse(ErrForeign, "was made for %s, not %q, and holds no checkpoints: was the pipeline renamed? "+
			"%s, or run 'icecdc run --adopt-state' to make the file %q's",
			pipelineList(idle), p, nameBack(idle), p)
	default:
		return out, refuse(ErrForeign, "the file exists but holds no checkpoints and was not created for pipeline %q: its contents may have been deleted or a restore gone wrong, "+
			"and icecdc will not start over silently; move it away to start afresh, or run 'icecdc run --adopt-state' to start every table from its configured start",
			p)
	}
	if !tx.Writable() {
		return out, nil
	}
	if _, err := tx.CreateBucketIfNotExists([]byte(p)); err != nil {
		return out, err
	}
	meta, err := markFile(tx, created, now)
	if err != nil {
		return out, err
	}
	owners, err := meta.CreateBucketIfNotExists(keyPipelines)
	if err != nil {
		return out, err
	}
	if raw := owners.Get([]byte(p)); raw != nil {
		if _, err := decodePipeline(raw); err != nil {
			return out, fmt.Errorf("pipeline %q: %w", p, corrupt(keyPipelines, err))
		}
		if how != howAdopted {
			return out, nil
		}
	}
	return out, owners.Put([]byte(p), encodePipeline(pipelineRecord{SinceMs: now.UnixMilli(), How: how}))
}

// markFile returns the meta bucket, creating it with the file record when
// it is missing. A file written before files described themselves gets a
// record without a creation time rather than an invented one.
func markFile(tx *bolt.Tx, created bool, now time.Time) (*bolt.Bucket, error) {
	if meta := tx.Bucket(metaBucket); meta != nil {
		return meta, nil
	}
	meta, err := tx.CreateBucket(metaBucket)
	if err != nil {
		return nil, err
	}
	rec := fileRecord{}
	if created {
		rec.CreatedAtMs = now.UnixMilli()
	}
	return meta, meta.Put(keyFile, encodeFile(rec))
}

// nameBack says how to resume a renamed pipeline.
func nameBack(names []string) string {
	if len(names) == 1 {
		return fmt.Sprintf("Name it %q again", names[0])
	}
	return "Give it its old name again"
}

// pipelineList names pipelines in a message: pipeline "a", or pipelines
// "a", "b".
func pipelineList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return "pipeline " + q[0]
	}
	return "pipelines " + strings.Join(q, ", ")
}
