// Package cdctest holds a scripted cdc.Source for the fast rung of the
// pipeline tests: retries, chunks, continuity and history loss run against
// an in-memory table in milliseconds, where the scenario rung builds real
// Iceberg tables for each case.
package cdctest

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// Snapshot is one scripted snapshot: its events, and the live rows an
// initial read of it returns.
type Snapshot struct {
	cdc.SnapshotInfo
	Events []cdc.Event
	Rows   []cdc.Event
}

// Source is a cdc.Source over a scripted branch of snapshots. The hooks,
// when set, run first and fail the call with the error they return
// (nil: the call proceeds). Errors name the table as the real source's do
// ("table <namespace>.<name>: …"). Safe for the pipeline's goroutine and
// the test's at once.
type Source struct {
	Table cdc.TableInfo

	OnRefresh     func() error
	OnSnapshots   func(afterSeq, toSeq int64) error
	OnCommit      func(s cdc.SnapshotInfo) error
	OnInitialRead func(s cdc.SnapshotInfo) error

	mu      sync.Mutex
	snaps   []Snapshot // the branch, ascending; expired ones removed
	gen     int        // bumped by every change of the branch
	loaded  int        // gen at the last Refresh
	view    []Snapshot // the branch as the last Refresh saw it
	calls   map[string]int
	closed  bool
	nextID  int64
	lastSeq int64
}

// New returns a source of a table with no snapshot.
func New(info cdc.TableInfo) *Source {
	return &Source{Table: info, calls: map[string]int{}, nextID: 100, loaded: -1}
}

// Append commits a snapshot with these events on top of the branch and
// returns it. Each event's Index is set to its position; an event without
// a row id gets one.
func (s *Source) Append(events ...cdc.Event) cdc.SnapshotInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.lastSeq++
	si := cdc.SnapshotInfo{ID: s.nextID, SequenceNumber: s.lastSeq, TimestampMs: 1_700_000_000_000 + s.lastSeq*1000,
		Operation: "append", HasLineage: true, Files: 1}
	if n := len(s.snaps); n > 0 {
		si.ParentID = s.snaps[n-1].ID
	}
	evs := make([]cdc.Event, len(events))
	for i, e := range events {
		e.Index = i
		if e.RowID == 0 {
			e.RowID = s.lastSeq*1_000_000 + int64(i)
		}
		evs[i] = e
	}
	var rows []cdc.Event
	if n := len(s.snaps); n > 0 {
		rows = append(rows, s.snaps[n-1].Rows...)
	}
	for _, e := range evs {
		if e.Op == cdc.OpCreate {
			r := e
			r.Op, r.Index = cdc.OpSnapshot, len(rows)
			rows = append(rows, r)
		}
	}
	s.snaps = append(s.snaps, Snapshot{SnapshotInfo: si, Events: evs, Rows: rows})
	s.gen++
	return si
}

// Inserts returns n insert events whose rows hold their number from
// first on, in a one-column table (see Schema).
func Inserts(first, n int) []cdc.Event {
	evs := make([]cdc.Event, n)
	for i := range evs {
		v := int64(first + i)
		evs[i] = cdc.Event{Op: cdc.OpCreate, RowID: v, LUSN: 1, After: values.Row{v}}
	}
	return evs
}

// Expire removes the snapshots with these ids from the branch, as an
// expire-snapshots maintenance job does.
func (s *Source) Expire(ids ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		for i, sn := range s.snaps {
			if sn.ID == id {
				s.snaps = append(s.snaps[:i:i], s.snaps[i+1:]...)
				break
			}
		}
	}
	s.gen++
}

// Calls returns how many times the method was called.
func (s *Source) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// Closed reports whether Close was called.
func (s *Source) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Source) name() string { return s.Table.Namespace + "." + s.Table.Name }

func (s *Source) call(method string) {
	s.mu.Lock()
	s.calls[method]++
	s.mu.Unlock()
}

// Info implements cdc.Source.
func (s *Source) Info() cdc.TableInfo { return s.Table }

// Refresh implements cdc.Source: the branch changes show only after it.
func (s *Source) Refresh(ctx context.Context) (bool, error) {
	s.call("Refresh")
	if s.OnRefresh != nil {
		if err := s.OnRefresh(); err != nil {
			return false, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.loaded != s.gen
	s.loaded = s.gen
	s.view = append([]Snapshot(nil), s.snaps...)
	return changed, nil
}

// Snapshots implements cdc.Source. A snapshot in the range whose parent
// was expired while the parent was after afterSeq fails with ErrHistory.
func (s *Source) Snapshots(ctx context.Context, afterSeq, toSeq int64) ([]cdc.SnapshotInfo, error) {
	s.call("Snapshots")
	if s.OnSnapshots != nil {
		if err := s.OnSnapshots(afterSeq, toSeq); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []cdc.SnapshotInfo
	for i, sn := range s.view {
		if sn.SequenceNumber <= afterSeq || toSeq > 0 && sn.SequenceNumber > toSeq {
			continue
		}
		if sn.ParentID != 0 && (i == 0 || s.view[i-1].ID != sn.ParentID) && sn.SequenceNumber-1 > afterSeq {
			return nil, cdc.HistoryLost(fmt.Errorf("table %s: snapshot %d (sequence number %d) has parent %d, which was expired",
				s.name(), sn.ID, sn.SequenceNumber, sn.ParentID))
		}
		out = append(out, sn.SnapshotInfo)
	}
	return out, nil
}

// Retained implements cdc.Source.
func (s *Source) Retained(ctx context.Context) ([]cdc.SnapshotInfo, bool, error) {
	s.call("Retained")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]cdc.SnapshotInfo, len(s.view))
	for i, sn := range s.view {
		out[i] = sn.SnapshotInfo
	}
	return out, len(out) == 0 || out[0].ParentID == 0, nil
}

func (s *Source) find(id int64) (Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sn := range s.view {
		if sn.ID == id {
			return sn, true
		}
	}
	return Snapshot{}, false
}

// Commit implements cdc.Source.
func (s *Source) Commit(ctx context.Context, si cdc.SnapshotInfo) (*cdc.Commit, error) {
	s.call("Commit")
	if s.OnCommit != nil {
		if err := s.OnCommit(si); err != nil {
			return nil, err
		}
	}
	sn, ok := s.find(si.ID)
	if !ok {
		return nil, fmt.Errorf("table %s: snapshot %d is not in the table metadata (expired?)", s.name(), si.ID)
	}
	return &cdc.Commit{Table: s.Table, Snapshot: sn.SnapshotInfo, Events: append([]cdc.Event(nil), sn.Events...)}, nil
}

// Head implements cdc.Source.
func (s *Source) Head() (cdc.SnapshotInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.view) == 0 {
		return cdc.SnapshotInfo{}, false
	}
	return s.view[len(s.view)-1].SnapshotInfo, true
}

// HasSnapshot implements cdc.Source.
func (s *Source) HasSnapshot(id int64) bool {
	_, ok := s.find(id)
	return ok
}

// InitialRead implements cdc.Source.
func (s *Source) InitialRead(ctx context.Context, si cdc.SnapshotInfo) (*cdc.Commit, error) {
	s.call("InitialRead")
	if s.OnInitialRead != nil {
		if err := s.OnInitialRead(si); err != nil {
			return nil, err
		}
	}
	sn, ok := s.find(si.ID)
	if !ok {
		return nil, fmt.Errorf("table %s: snapshot %d is not in the table metadata", s.name(), si.ID)
	}
	return &cdc.Commit{Table: s.Table, Snapshot: sn.SnapshotInfo, Events: append([]cdc.Event(nil), sn.Rows...)}, nil
}

// Close implements cdc.Source.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

// Info returns the TableInfo of a one-column table (id long, the key),
// whose rows Inserts makes.
func Info(namespace, name string) cdc.TableInfo {
	return cdc.TableInfo{Catalog: "test", Namespace: namespace, Name: name, UUID: "00000000-0000-4000-8000-000000000001",
		Schema: iceberg.NewSchemaWithIdentifiers(0, []int{1},
			iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}),
		KeyFields: []string{"id"}}
}
