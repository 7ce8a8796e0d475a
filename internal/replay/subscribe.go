package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/subscribe"
)

// CheckSubscription checks a column subscription against full replay: at
// every snapshot, the subscribed events applied to the consumer's
// projected state give live(S) projected to the subscribed columns and the
// key, and every update kept changes a subscribed column (or moves its row
// to a new row id). It returns the number of updates the subscription
// dropped. The steps are those Check returned, of a table without schema
// changes, born with lineage.
func CheckSubscription(ctx context.Context, steps []Step, tbl *table.Table, columns []string) (dropped int, err error) {
	if len(steps) == 0 {
		return 0, nil
	}
	info := steps[0].Commit.Table
	sub, err := subscribe.New(info.Namespace+"."+info.Name, info.Schema, columns)
	if err != nil {
		return 0, err
	}
	s := State{}
	for _, st := range steps {
		if !st.Snapshot.HasLineage {
			continue
		}
		pc, kept, err := sub.Apply(st.Commit, st.Commit.Events)
		if err != nil {
			return dropped, err
		}
		var names []string
		for _, f := range pc.Table.Schema.Fields() {
			names = append(names, f.Name)
		}
		for _, e := range st.Commit.Events {
			if e.Op == cdc.OpUpdate {
				dropped++
			}
		}
		pc.Events = kept
		for i := range pc.Events {
			pc.Events[i].Index = i // Apply checks consecutive indexes
		}
		evs, err := Encode(pc)
		if err != nil {
			return dropped, err
		}
		for _, ev := range evs {
			if ev.Op != "u" {
				continue
			}
			dropped--
			if ev.Source.Paired != "" {
				continue
			}
			if !slices.ContainsFunc(ev.ChangedFields, func(p string) bool {
				return slices.ContainsFunc(columns, func(c string) bool { return p == c || strings.HasPrefix(p, c+".") || strings.HasPrefix(c, p+".") })
			}) {
				return dropped, fmt.Errorf("snapshot %d: update of row %d kept, but it changes only %v", st.Snapshot.ID, ev.Source.RowID, ev.ChangedFields)
			}
		}
		if err := s.Apply(evs); err != nil {
			return dropped, fmt.Errorf("snapshot %d: %w", st.Snapshot.ID, err)
		}
		live, err := Live(ctx, tbl, st.Snapshot.ID)
		if err != nil {
			return dropped, err
		}
		want := State{}
		for id, row := range live {
			p := map[string]any{}
			for _, n := range names {
				p[n] = row[n]
			}
			want[id] = p
		}
		if d := Diff(maps.Clone(s), want); d != "" {
			return dropped, fmt.Errorf("snapshot %d: subscribed replay differs from the projected live rows:\n%s", st.Snapshot.ID, d)
		}
	}
	return dropped, nil
}
