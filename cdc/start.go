package cdc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// StartKind is where a table without a checkpoint starts.
type StartKind int

const (
	StartLatest    StartKind = iota // after the current head: only new commits
	StartEarliest                   // replay all retained history
	StartSequence                   // after sequence number N
	StartSnapshot                   // after snapshot ID
	StartTimestamp                  // with the first snapshot committed at or after T
	StartInitial                    // the head's rows as 'r' events, then new commits
)

// Start is a parsed start position.
type Start struct {
	Kind        StartKind
	Seq         int64
	SnapshotID  int64
	TimestampMs int64
}

// ParseStart parses latest | earliest | initial | sequence:N | snapshot:ID |
// timestamp:RFC3339 (empty means latest).
func ParseStart(s string) (Start, error) {
	switch s {
	case "", "latest":
		return Start{Kind: StartLatest}, nil
	case "earliest":
		return Start{Kind: StartEarliest}, nil
	case "initial":
		return Start{Kind: StartInitial}, nil
	}
	kind, arg, ok := strings.Cut(s, ":")
	if !ok {
		return Start{}, fmt.Errorf("start %q: want latest, earliest, initial, sequence:N, snapshot:ID or timestamp:RFC3339", s)
	}
	switch kind {
	case "sequence":
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || n < 0 {
			return Start{}, fmt.Errorf("start %q: sequence number must be a non-negative integer", s)
		}
		return Start{Kind: StartSequence, Seq: n}, nil
	case "snapshot":
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return Start{}, fmt.Errorf("start %q: snapshot id must be an integer", s)
		}
		return Start{Kind: StartSnapshot, SnapshotID: n}, nil
	case "timestamp":
		t, err := time.Parse(time.RFC3339, arg)
		if err != nil {
			return Start{}, fmt.Errorf("start %q: timestamp must be RFC 3339, e.g. 2026-01-02T15:04:05Z", s)
		}
		return Start{Kind: StartTimestamp, TimestampMs: t.UnixMilli()}, nil
	}
	return Start{}, fmt.Errorf("start %q: unknown kind %q", s, kind)
}

// resolve turns a start position into the checkpoint the stream begins at.
// A position the table cannot honour is an error that stops the table
// (ErrPermanent, or ErrHistory where the history it names was expired);
// it is never saved as a checkpoint.
func (st Start) resolve(ctx context.Context, src Source) (Checkpoint, error) {
	info := src.Info()
	cp := Checkpoint{TableUUID: info.UUID, Done: true}
	head, hasHead := src.Head()
	switch st.Kind {
	case StartLatest, StartInitial:
		if hasHead {
			cp.SnapshotID, cp.Seq, cp.TimestampMs = head.ID, head.SequenceNumber, head.TimestampMs
			if st.Kind == StartInitial && head.HasLineage {
				cp.Done, cp.Initial = false, true
			}
		}
		return cp, nil
	}
	snaps, whole, err := src.Retained(ctx)
	if err != nil {
		return cp, err
	}
	var oldest SnapshotInfo
	if len(snaps) > 0 {
		oldest = snaps[0]
	}
	lost := func(what string) error {
		return HistoryLost(fmt.Errorf("start %s: the table's history before snapshot %d (sequence number %d) was expired, so the changes %s are gone; "+
			"start with 'earliest' to stream the retained history, or with 'initial' to read the current rows first",
			st, oldest.ID, oldest.SequenceNumber, what))
	}
	switch st.Kind {
	case StartEarliest:
		// All retained history, as Kafka's earliest offset: when older
		// snapshots were expired, from the oldest retained one on (its
		// changes are computed if the commit needs nothing of its parent).
		if !whole {
			cp.Seq = oldest.SequenceNumber - 1
		}
		return cp, nil
	case StartSequence:
		if !hasHead && st.Seq > 0 || hasHead && st.Seq > head.SequenceNumber {
			return cp, Permanent(fmt.Errorf("start %s: past the branch head (%s): commits after it would never be delivered", st, headString(head, hasHead)))
		}
		if !whole && oldest.SequenceNumber-1 > st.Seq {
			return cp, lost(fmt.Sprintf("after sequence number %d", st.Seq))
		}
		cp.Seq = st.Seq
		for _, s := range snaps {
			if s.SequenceNumber == st.Seq {
				cp.SnapshotID, cp.TimestampMs = s.ID, s.TimestampMs
			}
		}
		return cp, nil
	case StartSnapshot:
		for _, s := range snaps {
			if s.ID == st.SnapshotID {
				cp.SnapshotID, cp.Seq, cp.TimestampMs = s.ID, s.SequenceNumber, s.TimestampMs
				return cp, nil
			}
		}
		if src.HasSnapshot(st.SnapshotID) {
			return cp, Permanent(fmt.Errorf("start %s: the snapshot is not an ancestor of the branch head (%s)", st, headString(head, hasHead)))
		}
		return cp, Permanent(fmt.Errorf("start %s: the table has no such snapshot (expired, or never on this table)", st))
	case StartTimestamp:
		for _, s := range snaps {
			if s.TimestampMs >= st.TimestampMs {
				break
			}
			cp.SnapshotID, cp.Seq, cp.TimestampMs = s.ID, s.SequenceNumber, s.TimestampMs
		}
		if cp.SnapshotID == 0 && !whole && len(snaps) > 0 {
			return cp, lost(fmt.Sprintf("committed after %s", time.UnixMilli(st.TimestampMs).UTC().Format(time.RFC3339)))
		}
		return cp, nil
	}
	return cp, fmt.Errorf("start kind %d unknown", st.Kind)
}

// String returns the position as the configuration spells it.
func (st Start) String() string {
	switch st.Kind {
	case StartLatest:
		return "latest"
	case StartEarliest:
		return "earliest"
	case StartInitial:
		return "initial"
	case StartSequence:
		return fmt.Sprintf("sequence:%d", st.Seq)
	case StartSnapshot:
		return fmt.Sprintf("snapshot:%d", st.SnapshotID)
	case StartTimestamp:
		return "timestamp:" + time.UnixMilli(st.TimestampMs).UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("start kind %d", st.Kind)
}

func headString(head SnapshotInfo, ok bool) string {
	if !ok {
		return "the table has no snapshot yet"
	}
	return fmt.Sprintf("snapshot %d, sequence number %d", head.ID, head.SequenceNumber)
}
