package replay

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

// Step is what one snapshot produced.
type Step struct {
	Snapshot cdc.SnapshotInfo
	Commit   *cdc.Commit
	Events   []Event
}

// Check walks every snapshot of src, replays its events and compares the
// result with live(S) read by the oracle from tbl, at every snapshot with
// lineage. A table upgraded from v2 starts from its first lineage-bearing
// snapshot: the rows that snapshot did not change are the baseline.
func Check(ctx context.Context, src cdc.Source, tbl *table.Table) ([]Step, error) {
	snaps, err := src.Snapshots(ctx, 0, 0)
	if err != nil {
		return nil, err
	}
	var (
		steps    []Step
		state    State
		schemaID int // the schema of the state's rows
	)
	for _, si := range snaps {
		c, err := src.Commit(ctx, si)
		if err == nil {
			err = c.Materialize(ctx)
		}
		if err == nil {
			err = CheckArrowPaths(c)
		}
		if err != nil {
			return steps, fmt.Errorf("snapshot %d (seq %d, %s): %w", si.ID, si.SequenceNumber, si.Operation, err)
		}
		evs, err := Encode(c)
		if err != nil {
			return steps, err
		}
		steps = append(steps, Step{Snapshot: si, Commit: c, Events: evs})
		// A commit too large to pair by key (cdc.NotPaired) is still
		// right by row id: the replay below checks it.
		if slices.ContainsFunc(c.Anomalies, func(a cdc.Anomaly) bool { return a.Kind != cdc.NotPaired }) {
			return steps, fmt.Errorf("snapshot %d (seq %d): anomalies %v", si.ID, si.SequenceNumber, c.Anomalies)
		}
		if !si.HasLineage {
			if len(evs) > 0 {
				return steps, fmt.Errorf("snapshot %d has no lineage but %d events", si.ID, len(evs))
			}
			continue
		}
		live, err := Live(ctx, tbl, si.ID)
		if err != nil {
			return steps, err
		}
		if state == nil {
			state = State{}
			if si.ParentID != 0 {
				state = baseline(live, evs)
			}
			schemaID = si.SchemaID
		}
		state.Project(schemaByID(tbl, schemaID), schemaByID(tbl, si.SchemaID))
		schemaID = si.SchemaID
		if err := state.Apply(evs); err != nil {
			return steps, fmt.Errorf("snapshot %d (seq %d, %s): %w", si.ID, si.SequenceNumber, si.Operation, err)
		}
		if d := Diff(state, live); d != "" {
			return steps, fmt.Errorf("snapshot %d (seq %d, %s): replay differs from live rows:\n%s", si.ID, si.SequenceNumber, si.Operation, d)
		}
	}
	return steps, nil
}

// baseline is the consumer's state before the first lineage snapshot: its
// live rows minus those it changed, plus the before images of the rows it
// updated or deleted. For a table born v3 the first snapshot has no before
// images and every row is an insert, so the baseline is empty.
func baseline(live State, evs []Event) State {
	changed := map[int64]bool{}
	for _, ev := range evs {
		if ev.Op == "c" || ev.Op == "u" {
			changed[ev.Source.RowID] = true
		}
	}
	s := State{}
	for id, r := range live {
		if !changed[id] {
			s[id] = r
		}
	}
	for _, ev := range evs {
		if ev.Op == "d" || ev.Op == "u" {
			s[ev.Source.RowID] = ev.Before
		}
	}
	return s
}

// schemaByID returns the table's schema id, or nil.
func schemaByID(tbl *table.Table, id int) *iceberg.Schema {
	for _, sc := range tbl.Metadata().Schemas() {
		if sc.ID == id {
			return sc
		}
	}
	return nil
}
