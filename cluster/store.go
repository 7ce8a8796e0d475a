package cluster

import (
	"context"
	"sync"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/kafka"
)

var (
	_ cdc.Store          = (*tableStore)(nil)
	_ cdc.CheckpointSink = (*eventSink)(nil)
)

// tableStore keeps one table's checkpoints in the checkpoint topic
// through the table's own transactional producer: every Save is a
// transaction holding the checkpoint record alone, so after another
// member loaded the table's producer id no Save of this one commits.
type tableStore struct {
	txn  *kafka.ExactlyOnceSink
	info cdc.TableInfo

	mu   sync.Mutex
	last cdc.Checkpoint // committed by the table's producer, events included
	has  bool
}

// Load reads the table's last committed checkpoint. Restore first loads
// the producer id, which fences the table's previous owner.
func (s *tableStore) Load(ctx context.Context, pipeline, _ string) (cdc.Checkpoint, bool, error) {
	cp, ok, err := s.txn.Restore(ctx, pipeline, s.info)
	if err == nil && ok {
		s.note(cp)
	}
	return cp, ok, err
}

// Save commits cp, unless the table's producer just committed it with
// the events (exactly-once), where a second record would say nothing new.
func (s *tableStore) Save(ctx context.Context, _, _ string, cp cdc.Checkpoint) error {
	s.mu.Lock()
	same := s.has && s.last == cp
	s.mu.Unlock()
	if same {
		return nil
	}
	if err := s.txn.Write(ctx, &cdc.Batch{Table: s.info, Checkpoint: cp}); err != nil {
		return err
	}
	s.note(cp)
	return nil
}

func (s *tableStore) note(cp cdc.Checkpoint) {
	s.mu.Lock()
	s.last, s.has = cp, true
	s.mu.Unlock()
}

// Close does nothing: the member closes the table's producer.
func (s *tableStore) Close() error { return nil }

// eventSink is the table's transactional producer as the pipeline's sink
// (exactly-once): it tells the store which checkpoint each committed
// batch carried.
type eventSink struct {
	*kafka.ExactlyOnceSink
	store *tableStore
}

func (s *eventSink) Write(ctx context.Context, b *cdc.Batch) error {
	if err := s.ExactlyOnceSink.Write(ctx, b); err != nil {
		return err
	}
	s.store.note(b.Checkpoint)
	return nil
}

// Close does nothing: the member closes the table's producer.
func (s *eventSink) Close(context.Context) error { return nil }

// sharedSink is the pipeline's sink shared by the member's tables
// (at-least-once Kafka, webhook, file): closed by the member, once, when it
// stops.
type sharedSink struct{ cdc.Sink }

func (sharedSink) Close(context.Context) error { return nil }
