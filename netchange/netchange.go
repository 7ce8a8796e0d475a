package netchange

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

var _ cdc.NetChanges = (*Net)(nil)

// Net reduces the commits of a range of snapshots to their net changes:
// one event per row for the whole range. A row inserted in the range is a
// c with its last image; a row present at the range's start is a u with its
// first before image and its last after image, or a d with its first
// before image; a row inserted and deleted inside the range, and a row
// whose values at the end equal those at the start under the same row id,
// give nothing. An update paired from an equality delete continues the
// removed row under the new row id, so a row replaced by value and then
// changed again is one paired u naming the row id the range started with.
//
// The net events come as one commit per snapshot that last touched their
// rows, in snapshot order; inside such a commit deletes precede updates
// and updates precede inserts (docs/contract.md), each phase in the order of the
// rows' last events. Replaying them over the state at the range's start
// gives the state at its end.
//
// A Net holds, per changed row, its first before and its last after image:
// memory grows with the number of distinct rows the range changed, never
// with the number of events. Callers bound it with Len.
// All commits of one Net must share a schema: images of different schemas
// are not comparable, so a range is cut where the schema changes.
type Net struct {
	rows  map[int64]*netRow // keyed by the row's current row id
	snaps []*cdc.Commit     // the ingested commits (events dropped), in order
}

type netRow struct {
	origID   int64 // the row id the consumer holds at the range's start (0 with inserted)
	inserted bool  // the row did not exist at the range's start
	deleted  bool
	before   values.Row // first before image (nil when inserted)
	after    values.Row // last after image (nil when deleted)
	lusn     int64
	paired   string // set once the row was replaced by value under a new id
	snap     int    // index in snaps of the last snapshot that touched it
	index    int    // index of its last event in that snapshot
}

// ErrNetContract marks a stream of events that cannot be reduced because
// it breaks the change contract (an insert of a row id already live, an
// update of a row id never seen inserted or present).
var ErrNetContract = errors.New("events break the change contract")

// New returns an empty reducer.
func New() *Net { return &Net{rows: map[int64]*netRow{}} }

// Len returns the number of rows the reducer holds.
func (n *Net) Len() int { return len(n.rows) }

// Add ingests the next commit of the range, streaming its events.
func (n *Net) Add(ctx context.Context, c *cdc.Commit) error {
	if len(n.snaps) > 0 {
		if prev := n.snaps[len(n.snaps)-1]; prev.Snapshot.SequenceNumber >= c.Snapshot.SequenceNumber {
			return fmt.Errorf("net: snapshot %d (sequence number %d) added after sequence number %d", c.Snapshot.ID, c.Snapshot.SequenceNumber, prev.Snapshot.SequenceNumber)
		}
	}
	si := len(n.snaps)
	n.snaps = append(n.snaps, &cdc.Commit{Table: c.Table, Snapshot: c.Snapshot})
	return c.EachBatch(ctx, 0, func(evs []cdc.Event) error {
		for i := range evs {
			if err := n.add(si, &evs[i]); err != nil {
				return fmt.Errorf("net: snapshot %d (sequence number %d), event %d: %w", c.Snapshot.ID, c.Snapshot.SequenceNumber, evs[i].Index, err)
			}
		}
		return nil
	})
}

func (n *Net) add(si int, e *cdc.Event) error {
	key := e.RowID
	if e.Source != "" {
		key = e.PairedRowID // the row the pairing replaced
	}
	r, seen := n.rows[key]
	switch {
	case !seen:
		r = &netRow{origID: key}
		switch e.Op {
		case cdc.OpCreate:
			r.inserted, r.origID = true, 0
		case cdc.OpUpdate, cdc.OpDelete:
			before, err := e.BeforeRow()
			if err != nil {
				return err
			}
			r.before = before
		default:
			return fmt.Errorf("%w: op %s in a change stream", ErrNetContract, e.Op)
		}
		n.rows[key] = r
	case r.deleted:
		return fmt.Errorf("%w: %s of row %d after its delete", ErrNetContract, e.Op, key)
	case e.Op == cdc.OpCreate:
		return fmt.Errorf("%w: insert of row %d, which is live", ErrNetContract, key)
	case e.Op != cdc.OpUpdate && e.Op != cdc.OpDelete:
		return fmt.Errorf("%w: op %s in a change stream", ErrNetContract, e.Op)
	}
	if e.Source != "" && e.RowID != key {
		if _, taken := n.rows[e.RowID]; taken {
			return fmt.Errorf("%w: paired update to row %d, which is live", ErrNetContract, e.RowID)
		}
		delete(n.rows, key)
		n.rows[e.RowID] = r
		r.paired = e.Source
	}
	after, err := e.AfterRow()
	if err != nil {
		return err
	}
	r.deleted = e.Op == cdc.OpDelete
	r.after = after
	r.lusn, r.snap, r.index = e.LUSN, si, e.Index
	return nil
}

// Commits returns the net events as one commit per snapshot that last
// touched a row, in snapshot order; snapshots whose rows all cancelled out
// give no commit. Event indexes count from 0 in each commit.
func (n *Net) Commits() []*cdc.Commit {
	type item struct {
		snap, phase, index int
		ev                 cdc.Event
	}
	items := make([]item, 0, len(n.rows))
	for id, r := range n.rows {
		var ev cdc.Event
		switch {
		case r.inserted && r.deleted:
			continue
		case r.inserted:
			ev = cdc.Event{Op: cdc.OpCreate, RowID: id, After: r.after}
		case r.deleted:
			ev = cdc.Event{Op: cdc.OpDelete, RowID: r.origID, Before: r.before}
		default:
			ev = cdc.Event{Op: cdc.OpUpdate, RowID: id, Before: r.before, After: r.after}
			if id != r.origID {
				ev.Source, ev.PairedRowID = r.paired, r.origID
			} else if len(cdc.ChangedFields(n.snaps[r.snap].Table.Schema, r.before, r.after)) == 0 {
				continue // back where it started
			}
		}
		ev.LUSN = r.lusn
		items = append(items, item{r.snap, ev.Op.Phase(), r.index, ev})
	}
	slices.SortFunc(items, func(a, b item) int {
		if a.snap != b.snap {
			return a.snap - b.snap
		}
		if a.phase != b.phase {
			return a.phase - b.phase
		}
		return a.index - b.index
	})
	var out []*cdc.Commit
	for _, it := range items {
		if len(out) == 0 || out[len(out)-1].Snapshot.ID != n.snaps[it.snap].Snapshot.ID {
			s := n.snaps[it.snap]
			out = append(out, &cdc.Commit{Table: s.Table, Snapshot: s.Snapshot})
		}
		c := out[len(out)-1]
		it.ev.Index = len(c.Events)
		c.Events = append(c.Events, it.ev)
	}
	return out
}
