package state

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/icecdc/icecdc/cdc"
)

// HistoryEntry is one delivered snapshot of a table.
type HistoryEntry struct {
	SnapshotID  int64
	Seq         int64
	CommitTime  time.Time // zero when the checkpoint carried no commit time
	DeliveredAt time.Time // when the checkpoint completing the snapshot was saved
	// Events is the snapshot's event count: the Next of the checkpoint that
	// completed it, since a done checkpoint's Next is one past its last event.
	Events int
}

// History returns up to limit delivered snapshots of the table, newest
// first; limit <= 0 returns all that are kept.
func (s *Store) History(pipeline, table string, limit int) ([]HistoryEntry, error) {
	var out []HistoryEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		tb := tableBucket(tx, pipeline, table)
		if tb == nil {
			return nil
		}
		hb := tb.Bucket(keyHistory)
		if hb == nil {
			return nil
		}
		c := hb.Cursor()
		for k, v := c.Last(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Prev() {
			where := append(append([]byte(nil), keyHistory...), '/')
			where = fmt.Appendf(where, "%x", k)
			if len(k) != 8 || v == nil {
				return corrupt(where, fmt.Errorf("not a history entry"))
			}
			rec, err := decodeHistory(v)
			if err != nil {
				return corrupt(where, err)
			}
			if rec.Seq != int64(binary.BigEndian.Uint64(k)) {
				return corrupt(where, fmt.Errorf("entry for sequence number %d", rec.Seq))
			}
			e := HistoryEntry{
				SnapshotID:  rec.SnapshotID,
				Seq:         rec.Seq,
				DeliveredAt: time.UnixMilli(rec.DeliveredAtMs),
				Events:      rec.Events,
			}
			if rec.CommitTsMs != 0 {
				e.CommitTime = time.UnixMilli(rec.CommitTsMs)
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history %s/%s: %w", pipeline, table, err)
	}
	return out, nil
}

// recordHistory adds the completed snapshot and trims the oldest entries
// beyond limit. Sequence numbers only grow for one table uuid, so the
// oldest entries are the first keys.
func recordHistory(tb *bolt.Bucket, cp cdc.Checkpoint, now time.Time, limit int) error {
	hb, err := tb.CreateBucketIfNotExists(keyHistory)
	if err != nil {
		return err
	}
	key := seqKey(cp.Seq)
	// A re-saved done checkpoint keeps the time of its first delivery.
	if hb.Get(key) == nil {
		rec := historyRecord{
			SnapshotID:    cp.SnapshotID,
			Seq:           cp.Seq,
			CommitTsMs:    cp.TimestampMs,
			DeliveredAtMs: now.UnixMilli(),
			Events:        cp.Next,
		}
		if err := hb.Put(key, encodeHistory(rec)); err != nil {
			return err
		}
	}
	// Walk back over the entries to keep; whatever lies before them goes.
	// Keys are collected first because deleting under a moving cursor
	// can skip entries.
	c := hb.Cursor()
	k, _ := c.Last()
	for kept := 1; k != nil && kept < limit; kept++ {
		k, _ = c.Prev()
	}
	if k == nil {
		return nil
	}
	var old [][]byte
	for k, _ = c.Prev(); k != nil; k, _ = c.Prev() {
		old = append(old, append([]byte(nil), k...))
	}
	for _, k := range old {
		if err := hb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
