package source

import (
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
)

// tableMeta is the loaded metadata of a table and what is derived from it
// once per load: the walk of the branch's snapshots, the schemas a
// snapshot is read with, and the checks of the metadata (consistency.go).
type tableMeta struct {
	branch string // the followed branch (Options.Branch)
	tbl    *table.Table
	// invalid is what checking the loaded metadata found wrong: an
	// unchanged metadata is as wrong at the next Refresh.
	invalid            error
	v2Known, v2Deletes bool            // see mayHaveV2Deletes
	chain              map[int64]int64 // see ancestry
	chainCut           bool
	chainMin           int64
	warnedLocations    string // see warnLocations
	// dropped is what Idle kept of the metadata it dropped (nil: none
	// dropped), see idle.go.
	dropped *droppedMeta
}

// forget drops what is derived from the loaded metadata, for a new load
// or an idle table.
func (m *tableMeta) forget() { m.v2Known, m.chain = false, nil }

// walk visits the branch's ancestry from the head down, every snapshot with
// a sequence number above afterSeq, and checks the graph (see Snapshots).
// An expired parent ends the walk: with strict, it is an error unless no
// change above afterSeq can be missing; whole reports whether the walk
// reached afterSeq or the branch's first snapshot. Each snapshot is
// visited once, so a parent cycle costs at most one pass.
func (t *tableMeta) walk(afterSeq int64, strict bool, visit func(*table.Snapshot)) (whole bool, _ error) {
	meta := t.tbl.Metadata()
	head := meta.SnapshotByName(t.branch)
	if head == nil {
		for n, ref := range meta.Refs() {
			if n == t.branch {
				return false, malformed(fmt.Sprintf("branch %s points at snapshot %d, which is not in the table metadata", n, ref.SnapshotID))
			}
		}
		if t.branch != table.MainBranch {
			return false, fmt.Errorf("no branch %q", t.branch)
		}
		return true, nil // an empty table has no snapshots yet
	}
	seen := make(map[int64]bool)
	for s := head; ; {
		if seen[s.SnapshotID] {
			return false, malformed(fmt.Sprintf("the parent chain of branch %s loops back to snapshot %d (a cycle in parent-snapshot-id)", t.branch, s.SnapshotID))
		}
		seen[s.SnapshotID] = true
		if s.SequenceNumber < 0 {
			return false, malformed(fmt.Sprintf("snapshot %d has a negative sequence-number %d", s.SnapshotID, s.SequenceNumber))
		}
		if s.SequenceNumber == 0 && s.FirstRowID != nil {
			// Sequence number 0 is what format v1 snapshots read as; a
			// snapshot with row lineage was written under v3.
			return false, malformed(fmt.Sprintf("snapshot %d has first-row-id but sequence-number 0 (missing?)", s.SnapshotID))
		}
		if s.SequenceNumber <= afterSeq {
			return true, nil
		}
		visit(s)
		if s.ParentSnapshotID == nil {
			return true, nil // the branch's first snapshot: its history is whole
		}
		p := meta.SnapshotByID(*s.ParentSnapshotID)
		if p == nil {
			// Expired. Nothing is lost if the parent's sequence number,
			// which is below s's, cannot be above afterSeq.
			if s.SequenceNumber-1 <= afterSeq {
				return true, nil
			}
			if err := parentCouldExpire(meta, s); err != nil {
				return false, err
			}
			if !strict {
				return false, nil
			}
			return false, lostHistory(fmt.Sprintf("snapshot %d (sequence number %d) has parent %d, which was expired: "+
				"the changes of the commits between sequence number %d and %d are no longer in the table's history", s.SnapshotID, s.SequenceNumber, *s.ParentSnapshotID, afterSeq, s.SequenceNumber))
		}
		if p.SequenceNumber >= s.SequenceNumber && (p.SequenceNumber > 0 || s.SequenceNumber > 0) && !seen[p.SnapshotID] {
			return false, malformed(fmt.Sprintf("snapshot %d has sequence-number %d, not above its parent %d's %d: sequence numbers must increase along a branch",
				s.SnapshotID, s.SequenceNumber, p.SnapshotID, p.SequenceNumber))
		}
		s = p
	}
}

// parentCouldExpire checks that s's parent, which the metadata does not
// list, can have been expired rather than be a wrong pointer. Sequence
// numbers are unique in a table (each commit takes last-sequence-number
// + 1) and the parent's is below s's: when every sequence number from 1 to
// s's - 1 belongs to a snapshot the metadata still lists, none of them was
// expired, so the parent never existed. Taking the break for an expiry
// would start `earliest` after it and skip, silently, the commits of the
// snapshots still listed below it. A parent of sequence number 0 (a format
// v1 snapshot of an upgraded table) is the one case this cannot rule out:
// a table that still lists such a snapshot is not judged.
func parentCouldExpire(meta table.Metadata, s *table.Snapshot) error {
	below := s.SequenceNumber - 1
	all := meta.Snapshots()
	if below < 1 || int64(len(all)) < below {
		return nil
	}
	held := make(map[int64]bool, below)
	for i := range all {
		switch q := all[i].SequenceNumber; {
		case q == 0:
			return nil
		case q >= 1 && q <= below:
			held[q] = true
		}
	}
	if int64(len(held)) < below {
		return nil
	}
	return malformed(fmt.Sprintf("snapshot %d (sequence number %d) has parent-snapshot-id %d, which the metadata does not list, "+
		"yet no snapshot below it was expired (every sequence number from 1 to %d is a listed snapshot): the parent pointer is wrong",
		s.SnapshotID, s.SequenceNumber, *s.ParentSnapshotID, below))
}

// malformed is a snapshot history that cannot be followed: its metadata
// is malformed, and no retry fixes it.
func malformed(msg string) error { return cdc.Permanent(errors.New(msg)) }

// lostHistory is a snapshot history that lost what the stream needs.
func lostHistory(msg string) error { return cdc.HistoryLost(errors.New(msg)) }

// schemaFor returns the schema a snapshot's rows are read and encoded with.
func (t *tableMeta) schemaFor(s *table.Snapshot) *iceberg.Schema {
	if s.SchemaID != nil {
		for _, sc := range t.tbl.Metadata().Schemas() {
			if sc.ID == *s.SchemaID {
				return sc
			}
		}
	}
	return t.tbl.Schema()
}

// schemaChange compares snapshot s's schema sc with its parent's.
func (t *tableMeta) schemaChange(s *table.Snapshot, sc *iceberg.Schema) *cdc.SchemaChange {
	if s.ParentSnapshotID == nil {
		return cdc.NewSchemaChange(nil, true, sc)
	}
	p := t.tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
	if p == nil {
		return cdc.NewSchemaChange(nil, false, sc)
	}
	return cdc.NewSchemaChange(t.schemaFor(p), true, sc)
}

// mayHaveV2Deletes reports whether v2 position-delete files can still be
// live: not for a table whose retained history starts with a v3 snapshot
// at sequence number 1 (it was born v3). Computed once per metadata load.
func (t *tableMeta) mayHaveV2Deletes() bool {
	if t.v2Known {
		return t.v2Deletes
	}
	meta := t.tbl.Metadata()
	var oldest *table.Snapshot
	seen := map[int64]bool{} // a parent cycle ends the walk (Snapshots reports it)
	for s := meta.SnapshotByName(t.branch); s != nil && !seen[s.SnapshotID]; {
		seen[s.SnapshotID] = true
		oldest = s
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	t.v2Known = true
	t.v2Deletes = oldest == nil || oldest.FirstRowID == nil || oldest.SequenceNumber > 1
	return t.v2Deletes
}

// nextRowID is the bound of the table's row ids, for checkEntry.
func (t *tableMeta) nextRowID() int64 {
	if t.tbl.Metadata().Version() < 3 {
		return -1
	}
	return t.tbl.Metadata().NextRowID()
}

// unpartitioned returns a func telling whether a spec id has no fields.
func (t *tableMeta) unpartitioned() func(int32) bool {
	return func(id int32) bool {
		for _, s := range t.tbl.Metadata().PartitionSpecs() {
			if int32(s.ID()) == id {
				return s.NumFields() == 0
			}
		}
		return false
	}
}

// droppedMeta is what an idle table keeps of the metadata it dropped.
type droppedMeta struct {
	loc string
	sum metaSummary
}

// metaSummary tells two loads of one metadata location apart should the
// file have been rewritten in place (metadata files are never rewritten
// by Iceberg's writers): what a commit always changes.
type metaSummary struct {
	lastUpdated, lastSeq, head int64
	snapshots, schema, refs    int
}

func summarize(md table.Metadata, branch string) metaSummary {
	s := metaSummary{lastUpdated: md.LastUpdatedMillis(), lastSeq: md.LastSequenceNumber(), snapshots: len(md.Snapshots()), schema: -1}
	if sc := md.CurrentSchema(); sc != nil {
		s.schema = sc.ID
	}
	if h := md.SnapshotByName(branch); h != nil {
		s.head = h.SnapshotID
	}
	for range md.Refs() {
		s.refs++
	}
	return s
}
