package state

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/icecdc/icecdc/cdc"
)

var _ cdc.Rewinder = (*Store)(nil)

// Rewind stores cp even when it is earlier than the stored checkpoint of
// the same table uuid, and forgets the history after it: a sink that keeps
// the position of record (cdc.CheckpointSink) committed less than the
// pipeline confirmed (the Iceberg sink buffers rows between commits), and
// the events after cp are delivered again.
func (s *Store) Rewind(ctx context.Context, pipeline, table string, cp cdc.Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("rewind checkpoint %s/%s: %w", pipeline, table, err)
	}
	if err := validate(pipeline, table, cp); err != nil {
		return fmt.Errorf("rewind checkpoint %s/%s: %w", pipeline, table, err)
	}
	now := s.now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		pb, err := tx.CreateBucketIfNotExists([]byte(pipeline))
		if err != nil {
			return err
		}
		tb, err := pb.CreateBucketIfNotExists([]byte(table))
		if err != nil {
			return err
		}
		if hb := tb.Bucket(keyHistory); hb != nil {
			var drop [][]byte
			c := hb.Cursor()
			for k, _ := c.Seek(seqKey(cp.Seq)); k != nil; k, _ = c.Next() {
				if string(k) == string(seqKey(cp.Seq)) && cp.Done {
					continue
				}
				drop = append(drop, append([]byte(nil), k...))
			}
			for _, k := range drop {
				if err := hb.Delete(k); err != nil {
					return err
				}
			}
		}
		return tb.Put(keyCheckpoint, encodeCheckpoint(cp, now))
	})
	if err != nil {
		return fmt.Errorf("rewind checkpoint %s/%s: %w", pipeline, table, err)
	}
	return nil
}
