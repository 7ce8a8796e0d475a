// Package changes computes the changes of a range of a table's snapshots
// (ChangesOf), each snapshot's commit or the net changes of the range, for
// `icecdc changes` and the tools that read a table's changes once rather
// than follow it.
package changes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/icecdc/icecdc/cdc"
)

// Changes computes the commits of src's snapshots with
// fromSeq < sequence number <= toSeq (toSeq <= 0: up to the head) in
// ascending order and hands each to emit. Anomalies are logged, never
// emitted as events.
func Changes(ctx context.Context, src cdc.Source, fromSeq, toSeq int64, log *slog.Logger, emit func(*cdc.Commit) error) error {
	return ChangesOf(ctx, src, ChangesOptions{FromSeq: fromSeq, ToSeq: toSeq, Log: log}, emit)
}

// ChangesOptions say which changes ChangesOf computes, and how.
type ChangesOptions struct {
	FromSeq, ToSeq int64 // the range: FromSeq < sequence number <= ToSeq (ToSeq <= 0: the head)
	// NewNet, when set, makes the reducers that hand over the net
	// changes of the range (package netchange's), cut where the schema
	// changes; more than NetMaxRows changed rows (default 100,000) in one
	// stretch is an error wrapping ErrNetTooLarge.
	NewNet     func() cdc.NetChanges
	NetMaxRows int
	Log        *slog.Logger
	// Progress, when set, counts the snapshots, their files (see
	// readFiles) and their events done.
	Progress *cdc.Progress
	// What names the run on the progress line.
	What string
}

// ErrNetTooLarge marks a net range that changed more rows than allowed.
var ErrNetTooLarge = errors.New("too many changed rows for net changes")

// ChangesOf computes the changes of a range of src's snapshots and hands
// them to emit in order: each snapshot's commit, or with o.NewNet the net
// commits of the range.
func ChangesOf(ctx context.Context, src cdc.Source, o ChangesOptions, emit func(*cdc.Commit) error) error {
	snaps, err := src.Snapshots(ctx, o.FromSeq, o.ToSeq)
	if err != nil {
		return err
	}
	files := 0 // of the range, when every snapshot's summary counts them
	for _, s := range snaps {
		if s.Files < 0 {
			files = 0
			break
		}
		files += readFiles(s)
	}
	o.Progress.Begin(o.What, len(snaps), files, 0)
	defer o.Progress.Done()
	limit := o.NetMaxRows
	if limit <= 0 {
		limit = cdc.DefaultNetMaxRows
	}
	var (
		n     cdc.NetChanges   // of the stretch; nil before its first snapshot
		first cdc.SnapshotInfo // of the stretch n holds
	)
	net := o.NewNet != nil
	flush := func() error {
		if n != nil {
			for _, c := range n.Commits() {
				if err := emit(c); err != nil {
					return err
				}
			}
		}
		n = nil
		return nil
	}
	for _, s := range snaps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if n != nil && s.SchemaID != first.SchemaID {
			if err := flush(); err != nil {
				return err
			}
		}
		c, err := src.Commit(ctx, s)
		if err != nil {
			return err
		}
		cdc.LogAnomalies(o.Log, c)
		if !net {
			if err := emit(c); err != nil {
				return err
			}
			o.Progress.Add(1, readFiles(s), int64(c.Len()))
			continue
		}
		if n == nil {
			first, n = s, o.NewNet()
		}
		if err := n.Add(ctx, c); err != nil {
			return err
		}
		if n.Len() > limit {
			return fmt.Errorf("%w: the snapshots with sequence numbers %d to %d changed more than %d rows", ErrNetTooLarge, first.SequenceNumber, s.SequenceNumber, limit)
		}
		o.Progress.Add(1, readFiles(s), int64(c.Len()))
	}
	if net {
		return flush()
	}
	return nil
}

// readFiles is the files of snapshot s that its changes are computed
// from, for the progress line: those it adds or removes, but none of a
// replace with row lineage (a compaction), which changes no row and whose
// files are not read.
func readFiles(s cdc.SnapshotInfo) int {
	if s.Files < 0 || s.HasLineage && s.Operation == "replace" {
		return 0
	}
	return s.Files
}
