package sns

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink/awstest"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestFIFODedup publishes each batch twice to a FIFO topic: its FIFO
// subscription receives one copy of each event, each key's in order.
func TestFIFODedup(t *testing.T) {
	faults := &awstest.Faults{}
	s, r := newTopics(t, awstest.Start(t, faults), faults, true)
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
		t.Fatalf("batches published twice:\n%s", strings.Join(problems, "\n"))
	}
}

// TestOversize: an event over 256 KiB stops the table naming it; nothing
// of the batch is published.
func TestOversize(t *testing.T) {
	faults := &awstest.Faults{}
	s, r := newTopics(t, awstest.Start(t, faults), faults, false)
	st := sinktest.NewStream("shop", "orders")
	st.ValueBytes = 300 << 10
	b := st.Snapshot(2, 0)[0]
	before := faults.Sent()
	err := s.Write(context.Background(), b)
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "event "+b.Messages[0].ID+" (table shop.orders, seq 1, row ") ||
		!strings.Contains(err.Error(), "more than an SNS message takes (262144): not sent") {
		t.Fatalf("an oversize message: %v", err)
	}
	if n := faults.Sent() - before; n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
	if got, _ := r.ReadAll(context.Background()); len(got) != 0 {
		t.Errorf("%d messages published of a refused batch", len(got))
	}
}
