package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Forget deletes checkpoint records of pipeline from the checkpoint
// topic: those of tables (named as in checkpoint keys,
// <namespace>.<table>), or with tables nil, those of every table of the
// pipeline. Restore then finds no checkpoint for them, and the pipeline
// starts them from their configured start. It returns the tables whose
// record it deleted, in key order; a table without a record is left out.
//
// A record is deleted by a tombstone (a null value, which compaction
// eventually removes with the key), produced in one transaction of the
// sink's transactional id. Loading that id first makes the broker finish
// whatever an earlier producer of the pipeline left open, so the records
// read are final, and fences a daemon still running with it: its next
// commit fails, rather than writing a checkpoint over the tombstone.
//
// When the brokers cannot be reached, Forget fails when ctx is done and
// has deleted nothing. When the commit's outcome is unknown it returns an
// error; calling it again is safe.
func (s *ExactlyOnceSink) Forget(ctx context.Context, pipeline string, tables []string) ([]string, error) {
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if s.p.closed.Load() {
		return nil, errClosed
	}
	topic := s.p.cfg.CheckpointTopic
	if err := s.resolve(ctx); err != nil {
		return nil, fmt.Errorf("forget checkpoints in %s: %w", topic, err)
	}
	prefix := pipeline + "/"
	live := map[string]bool{} // key -> its last record has a value
	err := readToEnd(ctx, s.p.base, true, []string{topic}, func(r *kgo.Record) {
		if k := string(r.Key); strings.HasPrefix(k, prefix) {
			live[k] = r.Value != nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("forget checkpoints in %s: %w", topic, err)
	}
	var forgotten []string
	for k, ok := range live {
		t := strings.TrimPrefix(k, prefix)
		if ok && (tables == nil || slices.Contains(tables, t)) {
			forgotten = append(forgotten, t)
		}
	}
	if len(forgotten) == 0 {
		return nil, nil
	}
	slices.Sort(forgotten)
	recs := make([]*kgo.Record, len(forgotten))
	for i, t := range forgotten {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(prefix + t)}
	}
	cl := s.p.client()
	if err := cl.BeginTransaction(); err != nil {
		s.unsettled = true
		return nil, fmt.Errorf("forget checkpoints in %s: begin transaction: %w", topic, err)
	}
	if err := s.p.produce(ctx, recs); err != nil {
		return nil, errors.Join(fmt.Errorf("forget checkpoints in %s: %w", topic, err), s.abort(ctx))
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTxnTimeout)
	defer cancel()
	if err := cl.EndTransaction(ectx, kgo.TryCommit); err != nil {
		s.unsettled = true
		return nil, fmt.Errorf("forget checkpoints in %s: commit transaction (it may have landed; run again): %w", topic, err)
	}
	return forgotten, nil
}
