package replay

import (
	"context"
	"fmt"
	"maps"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/netchange"
)

// CheckNet checks net changes against full replay: for every range
// (steps[i], steps[j]] of snapshots with lineage, the net events of the
// range, applied to the consumer's state at steps[i], must give the state
// at steps[j]; each row appears at most once, the commits come in
// snapshot order, and no update leaves its row as it found it. It returns
// the number of ranges checked. The steps are those Check returned.
func CheckNet(ctx context.Context, steps []Step, tbl *table.Table) (int, error) {
	var (
		states  []State // states[k]: the consumer's state after steps[first+k]
		schemas []int
		first   = -1
	)
	for k, st := range steps {
		if !st.Snapshot.HasLineage {
			continue
		}
		if first < 0 {
			first = k
			s := State{}
			if st.Snapshot.ParentID != 0 {
				live, err := Live(ctx, tbl, st.Snapshot.ID)
				if err != nil {
					return 0, err
				}
				s = baseline(live, st.Events)
			}
			states = append(states, s) // the state before steps[first]
			schemas = append(schemas, st.Snapshot.SchemaID)
		}
		s := maps.Clone(states[len(states)-1])
		s.Project(schemaByID(tbl, schemas[len(schemas)-1]), schemaByID(tbl, st.Snapshot.SchemaID))
		if err := s.Apply(st.Events); err != nil {
			return 0, fmt.Errorf("replay snapshot %d: %w", st.Snapshot.ID, err)
		}
		states = append(states, s)
		schemas = append(schemas, st.Snapshot.SchemaID)
	}
	if first < 0 {
		return 0, nil
	}
	lin := steps[first:]
	ranges := 0
	for i := 0; i < len(lin); i++ { // the range starts after lin[i-1] (i = 0: before lin[0])
		for j := i; j < len(lin); j++ { // and ends with lin[j]
			if lin[i].Snapshot.SchemaID != lin[j].Snapshot.SchemaID {
				continue // a net range never spans a schema change
			}
			ranges++
			if err := checkNetRange(ctx, lin[i:j+1], states[i], states[j+1], tbl, schemas[i]); err != nil {
				return ranges, fmt.Errorf("net of sequence numbers %d..%d: %w", lin[i].Snapshot.SequenceNumber, lin[j].Snapshot.SequenceNumber, err)
			}
		}
	}
	return ranges, nil
}

func checkNetRange(ctx context.Context, rng []Step, from, to State, tbl *table.Table, fromSchema int) error {
	n := netchange.New()
	for _, st := range rng {
		if err := n.Add(ctx, st.Commit); err != nil {
			return err
		}
	}
	s := maps.Clone(from)
	s.Project(schemaByID(tbl, fromSchema), schemaByID(tbl, rng[0].Snapshot.SchemaID))
	seen := map[int64]bool{}
	lastSeq := int64(-1)
	for _, c := range n.Commits() {
		if c.Snapshot.SequenceNumber <= lastSeq {
			return fmt.Errorf("net commit of sequence number %d after %d", c.Snapshot.SequenceNumber, lastSeq)
		}
		lastSeq = c.Snapshot.SequenceNumber
		evs, err := Encode(c)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if seen[ev.Source.RowID] {
				return fmt.Errorf("row %d has more than one net event", ev.Source.RowID)
			}
			seen[ev.Source.RowID] = true
			if ev.Op == "u" && ev.Source.Paired == "" && len(ev.ChangedFields) == 0 {
				return fmt.Errorf("net update of row %d changes nothing", ev.Source.RowID)
			}
		}
		if err := s.Apply(evs); err != nil {
			return fmt.Errorf("snapshot %d: %w", c.Snapshot.ID, err)
		}
	}
	if d := Diff(s, to); d != "" {
		return fmt.Errorf("net replay differs from full replay:\n%s", d)
	}
	return nil
}
