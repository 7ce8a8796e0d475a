package sinktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/icecdc/icecdc/cdc"
)

// memSink is a sink whose destination is a slice. On a transient failure
// it delivers the first half of the batch before failing, as a Kafka
// batch that failed on one partition or a webhook that timed out after
// the receiver stored the body would.
type memSink struct {
	mu        sync.Mutex
	got       []Received
	transient int
	permanent bool
	closed    bool
}

func (s *memSink) Write(ctx context.Context, b *cdc.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("closed")
	}
	if s.permanent {
		return fmt.Errorf("deliver: %w", cdc.ErrPermanent)
	}
	msgs := b.Messages
	fail := s.transient > 0
	if fail {
		s.transient--
		msgs = msgs[:len(msgs)/2]
	}
	for _, m := range msgs {
		s.got = append(s.got, Received{ID: m.ID, Op: m.Op, Key: m.Key, Value: m.Value})
	}
	if fail {
		return errors.New("deliver: 503 Service Unavailable")
	}
	return nil
}

func (s *memSink) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *memSink) ReadAll(context.Context) ([]Received, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.got...), nil
}

func (s *memSink) TotalOrder() bool { return true }

func (s *memSink) FailPermanently() {
	s.mu.Lock()
	s.permanent = true
	s.mu.Unlock()
}

func (s *memSink) FailTransiently(n int) {
	s.mu.Lock()
	s.transient = n
	s.mu.Unlock()
}

// TestRunMemSink runs the suite against a sink that keeps the contract.
func TestRunMemSink(t *testing.T) {
	Run(t, func(t *testing.T) (cdc.Sink, Reader) {
		s := &memSink{}
		return s, s
	})
}

// plainReader hides memSink's optional interfaces.
type plainReader struct{ s *memSink }

func (r plainReader) ReadAll(ctx context.Context) ([]Received, error) { return r.s.ReadAll(ctx) }

// TestRunSkipsFaults shows the fault sub-tests skip without a
// FaultInjector, and the rest still run.
func TestRunSkipsFaults(t *testing.T) {
	Run(t, func(t *testing.T) (cdc.Sink, Reader) {
		s := &memSink{}
		return s, plainReader{s}
	})
}

func TestCompare(t *testing.T) {
	s := NewStream("shop", "orders")
	s.Snapshot(20, 0)
	sent := s.Snapshot(20, 0)[0].Messages // 4 deletes, 4 updates, 12 inserts
	recv := func(ms ...cdc.Message) []Received {
		var out []Received
		for _, m := range ms {
			out = append(out, Received{ID: m.ID, Op: m.Op, Key: m.Key, Value: m.Value})
		}
		return out
	}
	// The delete of the first row and the insert that re-uses its key.
	del, reinsert := sent[0], sent[8]
	if del.Op != cdc.OpDelete || reinsert.Op != cdc.OpCreate || string(del.Key) != string(reinsert.Key) {
		t.Fatalf("test bug: stream shape changed: %s %s / %s %s", del.ID, del.Key, reinsert.ID, reinsert.Key)
	}
	swapped := append([]cdc.Message(nil), sent...)
	swapped[0], swapped[8] = swapped[8], swapped[0]
	otherKeys := append([]cdc.Message(nil), sent...)
	otherKeys[1], otherKeys[2] = otherKeys[2], otherKeys[1] // two deletes of different keys

	changed := recv(sent...)
	changed[3].Value = []byte(`{"before":null}`)
	stripped := recv(sent...)
	for i := range stripped {
		stripped[i].Key, stripped[i].Op = nil, 0
	}
	reencoded := recv(sent...)
	reencoded[5].Value = []byte(" " + string(reencoded[5].Value) + "\n")
	deleted := recv(sent...)
	deleted[0].Value, deleted[0].Deleted = nil, true // sent[0] is a delete
	insertDeleted := recv(sent...)
	insertDeleted[8].Value, insertDeleted[8].Deleted = nil, true

	for _, tc := range []struct {
		name           string
		got            []Received
		repeats, total bool
		want           string // substring of the first problem; "" for none
	}{
		{"exact", recv(sent...), false, true, ""},
		{"missing", recv(sent[1:]...), false, false, "missing " + sent[0].ID},
		{"unexpected", append(recv(sent...), Received{ID: "x:1:2:c"}), false, false, "not sent"},
		{"repeat refused", recv(append(sent[:3:3], sent...)...), false, false, "twice"},
		{"repeat of a prefix allowed", recv(append(sent[:3:3], sent...)...), true, true, ""},
		{"insert before its delete", recv(swapped...), false, false, "key " + string(del.Key)},
		{"other keys may swap per key", recv(otherKeys...), false, false, ""},
		{"other keys may not swap in total order", recv(otherKeys...), false, true, "arrived after"},
		{"gap then resend reorders", recv(append([]cdc.Message{sent[8]}, sent...)...), true, false, "key " + string(del.Key)},
		{"changed value", changed, false, false, "with value"},
		{"re-encoded value", reencoded, false, false, ""},
		{"nothing", nil, false, false, "missing " + sent[0].ID},
		{"key and op optional", stripped, false, true, ""},
		{"a delete kept without its value", deleted, false, true, ""},
		{"an insert is no deleted document", insertDeleted, false, true, "as a deleted document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			problems := Compare(sent, tc.got, tc.repeats, tc.total)
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Fatalf("unexpected problems: %v", problems)
			case tc.want != "" && len(problems) == 0:
				t.Fatalf("no problem found, want %q", tc.want)
			case tc.want != "" && !strings.Contains(problems[0], tc.want):
				t.Fatalf("first problem %q, want it to contain %q", problems[0], tc.want)
			}
		})
	}
}

func TestStreamShape(t *testing.T) {
	s := NewStream("shop", "orders")
	s.ValueBytes = 1000
	first := s.Snapshot(10, 0)
	if len(first) != 1 || len(first[0].Messages) != 10 {
		t.Fatalf("first snapshot: %d batches", len(first))
	}
	for _, m := range first[0].Messages {
		if m.Op != cdc.OpCreate {
			t.Fatalf("first snapshot has %s; only inserts can come first", m.ID)
		}
		if len(m.Value) < 990 || len(m.Value) > 1010 {
			t.Fatalf("value of %d bytes, want about 1000: %s", len(m.Value), m.Value)
		}
	}
	batches := s.Snapshot(10, 4)
	if len(batches) != 3 {
		t.Fatalf("10 events in chunks of 4: %d batches", len(batches))
	}
	phase := map[cdc.Op]int{cdc.OpDelete: 0, cdc.OpUpdate: 1, cdc.OpCreate: 2}
	last, n := 0, 0
	for i, b := range batches {
		if want := i == len(batches)-1; b.Checkpoint.Done != want {
			t.Fatalf("batch %d: Done = %v", i, b.Checkpoint.Done)
		}
		n += len(b.Messages)
		if b.Checkpoint.Next != n {
			t.Fatalf("batch %d: Next = %d, want %d", i, b.Checkpoint.Next, n)
		}
		for _, m := range b.Messages {
			if phase[m.Op] < last {
				t.Fatalf("%s out of phase order", m.ID)
			}
			last = phase[m.Op]
			if parts := strings.Split(m.ID, ":"); len(parts) != 4 || parts[0] != s.Table.UUID || parts[3] != m.Op.String() {
				t.Fatalf("id %q is not <uuid>:<seq>:<row_id>:<op>", m.ID)
			}
		}
	}
	if !strings.Contains(string(batches[0].Messages[0].Key), `"order_id"`) {
		t.Fatalf("key %s is not the business key", batches[0].Messages[0].Key)
	}
}
