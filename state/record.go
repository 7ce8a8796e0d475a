package state

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

// formatVersion is the "v" of every stored record. Bump it for any change
// that a reader ignoring unknown fields would misread; the golden files in
// testdata/ pin the encoding so that such a change cannot go unnoticed.
const formatVersion = 1

var (
	keyCheckpoint = []byte("checkpoint")
	keyHistory    = []byte("history")
)

// checkpointRecord is the stored form of a checkpoint. Embedding
// cdc.Checkpoint keeps its JSON names, so a change there shows up in the
// golden test rather than as a silently dropped field.
type checkpointRecord struct {
	V int `json:"v"`
	cdc.Checkpoint
	SavedAtMs int64 `json:"saved_at_ms"`
}

// historyRecord is the stored form of a HistoryEntry.
type historyRecord struct {
	V             int   `json:"v"`
	SnapshotID    int64 `json:"snapshot_id"`
	Seq           int64 `json:"seq"`
	CommitTsMs    int64 `json:"commit_ts_ms"`
	DeliveredAtMs int64 `json:"delivered_at_ms"`
	Events        int   `json:"events"`
}

// fileRecord describes the file itself, under metaBucket.
type fileRecord struct {
	V int `json:"v"`
	// CreatedAtMs is when Open created the file; 0 for a file written
	// before files described themselves.
	CreatedAtMs int64 `json:"created_at_ms,omitempty"`
}

// pipelineRecord marks a pipeline as an owner of the file, so that a file
// the pipeline started on is told from one that merely exists.
type pipelineRecord struct {
	V       int    `json:"v"`
	SinceMs int64  `json:"since_ms"`
	How     string `json:"how"` // howCreated, howFound or howAdopted
}

func encodeFile(rec fileRecord) []byte {
	rec.V = formatVersion
	b, err := json.Marshal(rec)
	if err != nil {
		panic(err) // only ints: cannot fail
	}
	return b
}

func decodeFile(raw []byte) (fileRecord, error) {
	var rec fileRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, err
	}
	if rec.V != formatVersion {
		return rec, fmt.Errorf("format version %d, this icecdc reads %d", rec.V, formatVersion)
	}
	return rec, nil
}

func encodePipeline(rec pipelineRecord) []byte {
	rec.V = formatVersion
	b, err := json.Marshal(rec)
	if err != nil {
		panic(err) // only ints and strings: cannot fail
	}
	return b
}

func decodePipeline(raw []byte) (pipelineRecord, error) {
	var rec pipelineRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, err
	}
	if rec.V != formatVersion {
		return rec, fmt.Errorf("format version %d, this icecdc reads %d", rec.V, formatVersion)
	}
	return rec, nil
}

// netCheckpointVersion is the "v" of a checkpoint inside a range of net
// changes (cdc.Checkpoint.Net): an icecdc that reads only formatVersion
// refuses it, where ignoring its net fields would resume at the wrong
// event. Every other checkpoint keeps formatVersion.
const netCheckpointVersion = 2

// readCheckpointVersion is the "v" of a checkpoint inside an on-demand
// snapshot with a row filter or a pause: an icecdc that ignored them
// would read rows the filter leaves out, or go on with a paused read.
const readCheckpointVersion = 3

func encodeCheckpoint(cp cdc.Checkpoint, now time.Time) []byte {
	v := formatVersion
	switch {
	case cp.Net:
		v = netCheckpointVersion
	case cp.Filter != "" || cp.Paused:
		v = readCheckpointVersion
	}
	b, err := json.Marshal(checkpointRecord{V: v, Checkpoint: cp, SavedAtMs: now.UnixMilli()})
	if err != nil {
		panic(err) // only ints, strings and bools: cannot fail
	}
	return b
}

func decodeCheckpoint(raw []byte) (checkpointRecord, error) {
	var rec checkpointRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, err
	}
	if rec.V == netCheckpointVersion && rec.Net || rec.V == readCheckpointVersion && (rec.Filter != "" || rec.Paused) {
		return rec, nil
	}
	if rec.V != formatVersion {
		return rec, fmt.Errorf("format version %d, this icecdc reads %d", rec.V, formatVersion)
	}
	return rec, nil
}

func encodeHistory(h historyRecord) []byte {
	h.V = formatVersion
	b, err := json.Marshal(h)
	if err != nil {
		panic(err) // only ints: cannot fail
	}
	return b
}

func decodeHistory(raw []byte) (historyRecord, error) {
	var rec historyRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		return rec, err
	}
	if rec.V != formatVersion {
		return rec, fmt.Errorf("format version %d, this icecdc reads %d", rec.V, formatVersion)
	}
	return rec, nil
}

// seqKey orders history by sequence number under bbolt's byte order.
func seqKey(seq int64) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(seq))
}

// corrupt names the key of a record that did not decode; the caller's
// prefix names the pipeline and table.
func corrupt(key []byte, err error) error {
	return fmt.Errorf("%w at key %q: %w", ErrCorrupt, key, err)
}
