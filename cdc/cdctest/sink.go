package cdctest

import (
	"context"
	"sync"

	"github.com/icecdc/icecdc/cdc"
)

// Sink records what the pipeline wrote. Fail, when set, runs before each
// Write with its number (from 1): a non-nil error fails that Write and
// nothing of its batch is recorded.
type Sink struct {
	Fail func(n int, b *cdc.Batch) error

	mu      sync.Mutex
	writes  int
	batches []Written
}

// Written is one confirmed batch: its messages' ids and values, and the
// checkpoint the pipeline may store after it.
type Written struct {
	IDs        []string
	Values     []string
	Checkpoint cdc.Checkpoint
}

// Write implements cdc.Sink.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	s.mu.Lock()
	s.writes++
	n := s.writes
	s.mu.Unlock()
	if s.Fail != nil {
		if err := s.Fail(n, b); err != nil {
			return err
		}
	}
	w := Written{Checkpoint: b.Checkpoint}
	for _, m := range b.Messages {
		w.IDs = append(w.IDs, m.ID)
		w.Values = append(w.Values, string(m.Value))
	}
	s.mu.Lock()
	s.batches = append(s.batches, w)
	s.mu.Unlock()
	return nil
}

// Close implements cdc.Sink.
func (s *Sink) Close(ctx context.Context) error { return nil }

// Batches returns the confirmed batches, in order.
func (s *Sink) Batches() []Written {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Written(nil), s.batches...)
}

// IDs returns the ids of every confirmed message, in order.
func (s *Sink) IDs() []string {
	var ids []string
	for _, b := range s.Batches() {
		ids = append(ids, b.IDs...)
	}
	return ids
}

// Writes returns how many Writes were attempted.
func (s *Sink) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}
