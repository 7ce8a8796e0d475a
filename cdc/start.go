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
func (st Start) resolve(ctx context.Context, src Source) (Checkpoint, error) {
	info := src.Info()
	cp := Checkpoint{TableUUID: info.UUID, Done: true}
	head, ok := src.Head()
	switch st.Kind {
	case StartEarliest:
		return cp, nil
	case StartLatest, StartInitial:
		if ok {
			cp.SnapshotID, cp.Seq, cp.TimestampMs = head.ID, head.SequenceNumber, head.TimestampMs
			if st.Kind == StartInitial && head.HasLineage {
				cp.Done, cp.Initial = false, true
			}
		}
		return cp, nil
	}
	snaps, err := src.Snapshots(ctx, 0, 0)
	if err != nil {
		return cp, err
	}
	switch st.Kind {
	case StartSequence:
		cp.Seq = st.Seq
		for _, s := range snaps {
			if s.SequenceNumber == st.Seq {
				cp.SnapshotID = s.ID
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
		return cp, fmt.Errorf("start snapshot:%d: no such snapshot on the branch", st.SnapshotID)
	case StartTimestamp:
		for _, s := range snaps {
			if s.TimestampMs >= st.TimestampMs {
				break
			}
			cp.SnapshotID, cp.Seq, cp.TimestampMs = s.ID, s.SequenceNumber, s.TimestampMs
		}
		return cp, nil
	}
	return cp, fmt.Errorf("start kind %d unknown", st.Kind)
}
