package sqs

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink/awstest"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestFIFODedup writes each batch twice to a FIFO queue, as the pipeline
// does after a failure past the queue's answer: the queue holds one copy
// of each event, each key's in order (the second snapshot updates and
// deletes keys, and re-inserts a deleted one, in one batch).
func TestFIFODedup(t *testing.T) {
	faults := &awstest.Faults{}
	s, r := newQueues(t, awstest.Start(t, faults), faults, true)
	st := sinktest.NewStream("shop", "orders")
	ctx := context.Background()
	var sent []cdc.Message
	for _, b := range []*cdc.Batch{st.Snapshot(30, 0)[0], st.Snapshot(40, 0)[0]} {
		for range 2 {
			if err := s.Write(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		sent = append(sent, b.Messages...)
	}
	got, err := r.ReadAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if problems := sinktest.Compare(sent, got, false, false); len(problems) > 0 {
		t.Fatalf("a batch written twice:\n%s", strings.Join(problems, "\n"))
	}
}

// TestOversize: an event larger than a message stops the table with one
// line naming it, and nothing of the batch is sent.
func TestOversize(t *testing.T) {
	faults := &awstest.Faults{}
	s, r := newQueues(t, awstest.Start(t, faults), faults, false)
	st := sinktest.NewStream("shop", "orders")
	st.ValueBytes = 300 << 10
	b := st.Snapshot(3, 0)[0]
	before := faults.Sent()
	err := s.Write(context.Background(), b)
	m := b.Messages[0]
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "event "+m.ID+" (table shop.orders, seq 1, row ") ||
		!strings.Contains(err.Error(), "more than a message takes (262144, max_message_bytes): not sent") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("an oversize event: %v", err)
	}
	if n := faults.Sent() - before; n != 1 { // GetQueueUrl
		t.Errorf("%d requests reached the server", n)
	}
	if got, _ := r.ReadAll(context.Background()); len(got) != 0 {
		t.Errorf("%d messages sent of a refused batch", len(got))
	}
	t.Log(err)
}
