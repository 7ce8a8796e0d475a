package cluster

import (
	"context"
	"log/slog"
	"sync"
	"time"

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
	txn   *kafka.ExactlyOnceSink
	info  cdc.TableInfo
	first *firstDelivery

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
	if err == nil && s.first != nil {
		s.first.restored(cp, ok)
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
	first *firstDelivery
}

func (s *eventSink) Write(ctx context.Context, b *cdc.Batch) error {
	if err := s.ExactlyOnceSink.Write(ctx, b); err != nil {
		return err
	}
	s.store.note(b.Checkpoint)
	s.first.delivered(b)
	return nil
}

// Close does nothing: the member closes the table's producer.
func (s *eventSink) Close(context.Context) error { return nil }

// sharedSink is the pipeline's sink shared by the member's tables
// (at-least-once Kafka, webhook, file): closed by the member, once, when it
// stops.
type sharedSink struct {
	cdc.Sink
	first *firstDelivery
}

func (s sharedSink) Write(ctx context.Context, b *cdc.Batch) error {
	if err := s.Sink.Write(ctx, b); err != nil {
		return err
	}
	s.first.delivered(b)
	return nil
}

func (sharedSink) Close(context.Context) error { return nil }

// firstDelivery logs the milestones of a table's takeover at INFO: when
// the member restored its checkpoint (which, exactly-once, fenced the
// previous owner) and when it delivered its first batch of events, each
// with the time since the group assigned it the table. The time from a
// member's end to the first delivery of its tables by their new owners is
// the takeover time (interop/cluster_e2e.py measures it from these lines).
type firstDelivery struct {
	log      *slog.Logger
	assigned time.Time

	mu       sync.Mutex
	restore  bool // the restore was logged
	delivery bool // the first delivery was logged
}

func (f *firstDelivery) restored(cp cdc.Checkpoint, found bool) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.restore {
		return
	}
	f.restore = true
	pos := "none (start of the table's stream)"
	if found {
		pos = cp.String()
	}
	f.log.Info("cluster: table taken over: checkpoint restored", "checkpoint", pos,
		"since_assigned_ms", time.Since(f.assigned).Milliseconds())
}

func (f *firstDelivery) delivered(b *cdc.Batch) {
	if f == nil || len(b.Messages) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.delivery {
		return
	}
	f.delivery = true
	f.log.Info("cluster: first batch delivered since the table was assigned", "seq", b.Snapshot.SequenceNumber,
		"messages", len(b.Messages), "since_assigned_ms", time.Since(f.assigned).Milliseconds())
}
