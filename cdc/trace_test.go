package cdc_test

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/source"
)

// TestCommitTraces: with a tracer, every commit of a real table is a
// span with the table and sequence number, from its read to its last
// checkpoint, whose children are the read, each chunk's encoding, each
// batch's delivery until the sink acknowledged it, and each checkpoint.
func TestCommitTraces(t *testing.T) {
	h := newHarness(t)
	h.append(1, 5)
	h.append(6, 7)
	src, err := source.Open(h.ctx, source.Options{CatalogURI: h.env.CatalogURI, Warehouse: h.env.Warehouse, Table: "shop.orders"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	store, fs := h.storeAndFile()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	p := &cdc.Pipeline{Name: "p", Store: store, Sink: fs, Once: true, Encoder: newEncoder("p"), ChunkSize: 2, Tracer: tp,
		Tables: []cdc.TableSpec{{Name: "shop.orders", Source: src, Start: cdc.Start{Kind: cdc.StartEarliest}}}}
	if err := p.Run(h.ctx); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	attr := func(s sdktrace.ReadOnlySpan, key string) attribute.Value {
		for _, kv := range s.Attributes() {
			if string(kv.Key) == key {
				return kv.Value
			}
		}
		return attribute.Value{}
	}
	commits := map[int64]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		if s.Name() == cdc.SpanCommit {
			if attr(s, cdc.AttrTable).AsString() != "shop.orders" {
				t.Errorf("commit span without the table: %v", s.Attributes())
			}
			commits[attr(s, cdc.AttrSeq).AsInt64()] = s
		}
	}
	// The two appends; the table's creation is a commit of no events.
	wantEvents := map[int64]int64{1: 5, 2: 2}
	for seq, n := range wantEvents {
		c, ok := commits[seq]
		if !ok {
			t.Fatalf("no %s span with %s=%d among %d spans", cdc.SpanCommit, cdc.AttrSeq, seq, len(spans))
		}
		if got := attr(c, cdc.AttrEvents).AsInt64(); got != n {
			t.Errorf("seq %d: %s=%d, want %d", seq, cdc.AttrEvents, got, n)
		}
		if c.Status().Code == codes.Error || c.Parent().IsValid() {
			t.Errorf("seq %d: status %v, parent %v: want a root span that succeeded", seq, c.Status(), c.Parent())
		}
		children := map[string]int{}
		var delivered, encoded int64
		for _, s := range spans {
			if s.Parent().SpanID() != c.SpanContext().SpanID() {
				continue
			}
			children[s.Name()]++
			if attr(s, cdc.AttrSeq).AsInt64() != seq || attr(s, cdc.AttrTable).AsString() != "shop.orders" {
				t.Errorf("seq %d: child %s has %v", seq, s.Name(), s.Attributes())
			}
			if s.StartTime().Before(c.StartTime()) || s.EndTime().After(c.EndTime()) {
				t.Errorf("seq %d: child %s is not inside its commit's span", seq, s.Name())
			}
			switch s.Name() {
			case cdc.SpanDeliver:
				delivered += attr(s, cdc.AttrEvents).AsInt64()
			case cdc.SpanEncode:
				encoded += attr(s, cdc.AttrEvents).AsInt64()
			}
		}
		chunks := int((n + 1) / 2) // ChunkSize 2
		want := map[string]int{cdc.SpanRead: 1, cdc.SpanEncode: chunks, cdc.SpanDeliver: chunks, cdc.SpanCheckpoint: chunks}
		if fmt.Sprint(children) != fmt.Sprint(want) || delivered != n || encoded != n {
			t.Errorf("seq %d: children %v (%d events encoded, %d delivered), want %v and %d events", seq, children, encoded, delivered, want, n)
		}
	}
}
