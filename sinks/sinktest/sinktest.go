package sinktest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
)

// Received is one message as the destination holds it.
type Received struct {
	// ID is the event id (the Kafka header id, the webhook event's id).
	ID string
	// Op is the event's op, or 0 where the destination does not keep it
	// apart from the value.
	Op cdc.Op
	// Key is the message key, or nil where the destination has no keys.
	Key []byte
	// Value is the message value. It is compared as JSON when its bytes
	// differ from what was sent.
	Value []byte
	// Deleted marks a delete the destination keeps no value of (a search
	// index removes the document): its id, op and order are checked, and
	// Value must be nil.
	Deleted bool
}

// Reader reads back what a sink's destination received.
type Reader interface {
	// ReadAll returns every message the destination holds, in the order a
	// consumer would see them (for Kafka: each partition in offset order).
	// It leaves out what is not an event: Kafka tombstones, checkpoint
	// records, transaction markers. It must not wait for messages to
	// arrive: the suite calls it right after Write returns and expects
	// the batch to be there already.
	ReadAll(ctx context.Context) ([]Received, error)
}

// TotalOrderReader is a Reader whose destination keeps all messages of a
// table in one order (a webhook receiver, a single-partition topic). When
// TotalOrder returns true, the suite checks that order, not just the
// order per key.
type TotalOrderReader interface {
	Reader
	TotalOrder() bool
}

// FaultInjector is implemented by a Reader (or the harness behind it)
// that can make the destination fail. Without it the fault tests skip.
type FaultInjector interface {
	// FailPermanently makes the destination refuse every later delivery
	// in a way no retry can fix (an authorization failure, HTTP 400).
	FailPermanently()
	// FailTransiently makes the next n delivery attempts fail in a way
	// that a retry fixes (a leader change, HTTP 503); then the
	// destination recovers.
	FailTransiently(n int)
}

// Timeout bounds each sub-test, so that a Write that hangs fails the test
// rather than the whole run. A sink tested against a slow emulator (moto's
// SQS takes a fraction of a second a request on a busy machine) may raise
// it before Run.
var Timeout = 30 * time.Second

// Run checks that a sink keeps the cdc.Sink contract. newSink makes a
// fresh sink and a Reader of its destination, which starts empty; it is
// called once per sub-test and should register its own cleanup. Run
// closes the sink.
//
// It checks: an empty batch is accepted; messages arrive in order per key
// within and across batches (and in total order where the Reader says so);
// a batch is readable as soon as Write returns; tables written
// concurrently keep their own order; a Write with a cancelled context does
// not claim delivery it did not make; transient failures end in delivery,
// in order, after retries; a permanent failure wraps cdc.ErrPermanent;
// Close leaves nothing behind. Throughout, a nil error from Write means
// the batch is there, and an error never reorders what the pipeline then
// resends.
func Run(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	t.Run("EmptyBatch", func(t *testing.T) { emptyBatch(t, newSink) })
	t.Run("OrderWithinBatch", func(t *testing.T) { orderWithinBatch(t, newSink) })
	t.Run("OrderAcrossBatches", func(t *testing.T) { orderAcrossBatches(t, newSink) })
	t.Run("ConcurrentTables", func(t *testing.T) { concurrentTables(t, newSink) })
	t.Run("CanceledContext", func(t *testing.T) { canceledContext(t, newSink) })
	t.Run("TransientFailure", func(t *testing.T) { transientFailure(t, newSink) })
	t.Run("PermanentFailure", func(t *testing.T) { permanentFailure(t, newSink) })
	t.Run("CloseDrains", func(t *testing.T) { closeDrains(t, newSink) })
}

// harness is one sub-test's sink, reader and what has been sent.
type harness struct {
	t      *testing.T
	ctx    context.Context
	sink   cdc.Sink
	reader Reader
	closed bool
	sent   []cdc.Message
}

func start(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	sink, reader := newSink(t)
	h := &harness{t: t, ctx: ctx, sink: sink, reader: reader}
	t.Cleanup(func() {
		if !h.closed {
			if err := sink.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
		}
	})
	return h
}

// write writes b and requires success.
func (h *harness) write(b *cdc.Batch) {
	h.t.Helper()
	if err := h.sink.Write(h.ctx, b); err != nil {
		h.t.Fatalf("Write of %s (%d messages): %v", b.Checkpoint, len(b.Messages), err)
	}
	h.sent = append(h.sent, b.Messages...)
}

// writeRetrying writes b as the pipeline does after errors: again until it
// succeeds. Permanent errors fail the test.
func (h *harness) writeRetrying(b *cdc.Batch, attempts int) {
	h.t.Helper()
	var err error
	for range attempts {
		if err = h.sink.Write(h.ctx, b); err == nil {
			h.sent = append(h.sent, b.Messages...)
			return
		}
		if cdc.IsPermanent(err) {
			h.t.Fatalf("Write of %s: transient failure reported as permanent: %v", b.Checkpoint, err)
		}
	}
	h.t.Fatalf("Write of %s still failing after %d attempts: %v", b.Checkpoint, attempts, err)
}

func (h *harness) read() []Received {
	h.t.Helper()
	got, err := h.reader.ReadAll(h.ctx)
	if err != nil {
		h.t.Fatalf("ReadAll: %v", err)
	}
	return got
}

func (h *harness) totalOrder() bool {
	r, ok := h.reader.(TotalOrderReader)
	return ok && r.TotalOrder()
}

// check compares the destination with everything sent so far.
func (h *harness) check(what string, repeats bool) {
	h.t.Helper()
	report(h.t, what, Compare(h.sent, h.read(), repeats, h.totalOrder()))
}

func report(t *testing.T, what string, problems []string) {
	t.Helper()
	if len(problems) > 0 {
		t.Fatalf("%s:\n  %s", what, strings.Join(problems, "\n  "))
	}
}

func (h *harness) faults() FaultInjector {
	h.t.Helper()
	f, ok := h.reader.(FaultInjector)
	if !ok {
		h.t.Skip("the Reader does not implement sinktest.FaultInjector: this sink's test cannot inject failures")
	}
	return f
}

func emptyBatch(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	h := start(t, newSink)
	s := NewStream("shop", "orders")
	h.write(s.Empty())
	if got := h.read(); len(got) != 0 {
		t.Fatalf("an empty batch delivered %d messages, first %q", len(got), got[0].ID)
	}
	// An empty batch between others must not disturb them.
	h.write(s.Snapshot(20, 0)[0])
	h.write(s.Empty())
	h.write(s.Snapshot(20, 0)[0])
	h.check("after empty batches", false)
}

func orderWithinBatch(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	h := start(t, newSink)
	s := NewStream("shop", "orders")
	h.write(s.Snapshot(200, 0)[0]) // inserts only: there is nothing to change yet
	// 400 events in one batch: 40 deletes, 40 updates, 320 inserts, one of
	// them re-using a deleted key right after its delete.
	b := s.Snapshot(400, 0)
	if len(b) != 1 {
		t.Fatalf("test bug: %d batches", len(b))
	}
	h.write(b[0])
	h.check("after one large batch", false)
}

func orderAcrossBatches(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	h := start(t, newSink)
	s := NewStream("shop", "orders")
	for snap := range 6 {
		for _, b := range s.Snapshot(120, 50) {
			h.write(b)
			// Write has returned: the batch must be readable now.
			h.check("right after Write, snapshot "+strconv.Itoa(snap+1), false)
		}
	}
}

func concurrentTables(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	h := start(t, newSink)
	streams := []*Stream{NewStream("shop", "orders"), NewStream("shop", "returns")}
	sent := make([][]cdc.Message, len(streams))
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for i, s := range streams {
		wg.Go(func() {
			for range 5 {
				for _, b := range s.Snapshot(80, 40) {
					if err := h.sink.Write(h.ctx, b); err != nil {
						errs[i] = err
						return
					}
					sent[i] = append(sent[i], b.Messages...)
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent Writes: %v", err)
	}
	got := h.read()
	for i, s := range streams {
		var mine []Received
		for _, r := range got {
			if strings.HasPrefix(r.ID, s.Table.UUID+":") {
				mine = append(mine, r)
			}
		}
		report(t, "table "+s.Table.Name, Compare(sent[i], mine, false, h.totalOrder()))
	}
	if n := len(sent[0]) + len(sent[1]); len(got) != n {
		t.Fatalf("destination holds %d messages, %d were sent", len(got), n)
	}
}

func canceledContext(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	h := start(t, newSink)
	s := NewStream("shop", "orders")
	h.write(s.Snapshot(50, 0)[0])
	b := s.Snapshot(50, 0)[0]
	ctx, cancel := context.WithCancel(h.ctx)
	cancel()
	if err := h.sink.Write(ctx, b); err == nil {
		// Allowed, but then the batch must be there.
		h.sent = append(h.sent, b.Messages...)
		h.check("after a Write with a cancelled context returned nil", false)
	} else if cdc.IsPermanent(err) {
		t.Fatalf("a cancelled context is not a permanent failure: %v", err)
	}
	// The pipeline retries the batch, then goes on.
	h.writeRetrying(b, 3)
	h.write(s.Snapshot(50, 0)[0])
	h.check("after retrying a cancelled Write", true)
}

func transientFailure(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	h := start(t, newSink)
	f := h.faults()
	s := NewStream("shop", "orders")
	h.write(s.Snapshot(100, 0)[0])
	f.FailTransiently(3)
	for _, b := range s.Snapshot(300, 100) {
		h.writeRetrying(b, 10)
	}
	h.check("after transient failures", true)
	h.write(s.Snapshot(100, 0)[0])
	h.check("after recovering from transient failures", true)
}

func permanentFailure(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	h := start(t, newSink)
	f := h.faults()
	s := NewStream("shop", "orders")
	h.write(s.Snapshot(50, 0)[0])
	f.FailPermanently()
	b := s.Snapshot(50, 0)[0]
	err := h.sink.Write(h.ctx, b)
	if err == nil {
		t.Fatal("Write succeeded although the destination refuses everything")
	}
	if !cdc.IsPermanent(err) {
		t.Fatalf("Write error does not wrap cdc.ErrPermanent: %v", err)
	}
	// The table stops here; the sink may be unusable, so only Close's
	// return is not checked.
	h.closed = true
	_ = h.sink.Close(h.ctx)
}

func closeDrains(t *testing.T, newSink func(t *testing.T) (cdc.Sink, Reader)) {
	h := start(t, newSink)
	s := NewStream("shop", "orders")
	for range 3 {
		for _, b := range s.Snapshot(100, 40) {
			h.write(b)
		}
	}
	h.closed = true
	if err := h.sink.Close(h.ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	h.check("after Close", false)
	// After Close a Write may fail, but it must not claim a delivery it
	// did not make.
	b := s.Snapshot(10, 0)[0]
	if err := h.sink.Write(h.ctx, b); err == nil {
		h.sent = append(h.sent, b.Messages...)
		h.check("after a Write that followed Close returned nil", false)
	}
}
