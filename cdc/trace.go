package cdc

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Traces (Pipeline.Tracer): a span per commit and table, from the
// poll that found the commit to the checkpoint of its last batch, with
// child spans for its steps. The names and attributes are documented in
// docs/operations.md.
const (
	SpanCommit     = "icecdc.commit"     // one commit of one table, delivered
	SpanRead       = "icecdc.read"       // planning the commit and reading what its events come from
	SpanEncode     = "icecdc.encode"     // one chunk of events encoded into a batch
	SpanDeliver    = "icecdc.deliver"    // one batch written until the sink acknowledged it
	SpanCheckpoint = "icecdc.checkpoint" // the batch's checkpoint stored

	AttrTable      = "icecdc.table"           // the table's configured name
	AttrSeq        = "icecdc.sequence_number" // the snapshot's sequence number
	AttrSnapshot   = "icecdc.snapshot_id"
	AttrOperation  = "icecdc.operation" // the snapshot summary's operation
	AttrEvents     = "icecdc.events"    // the events of the commit, chunk or batch
	AttrNext       = "icecdc.checkpoint.next"
	AttrCheckpoint = "icecdc.checkpoint.done"
)

// tracerName is the instrumentation scope of the pipeline's spans.
const tracerName = "github.com/icecdc/icecdc/cdc"

var noopSpan trace.Span = noop.Span{} // converted once: no allocation per call

// tracer returns the pipeline's tracer, or nil when it traces nothing.
func (p *Pipeline) tracer() trace.Tracer {
	if p.Tracer == nil {
		return nil
	}
	return p.Tracer.Tracer(tracerName)
}

// span starts a span of the table's commit si under ctx; without a
// tracer it costs nothing and returns ctx as it is.
func (f *follower) span(ctx context.Context, name string, si *SnapshotInfo, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if f.tracer == nil {
		return ctx, noopSpan
	}
	all := append(make([]attribute.KeyValue, 0, 3+len(attrs)),
		attribute.String(AttrTable, f.spec.Name),
		attribute.Int64(AttrSeq, si.SequenceNumber),
		attribute.Int64(AttrSnapshot, si.ID))
	return f.tracer.Start(ctx, name, trace.WithAttributes(append(all, attrs...)...))
}

// endSpan ends span, marking it failed with err.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// inSpan reports whether ctx carries a span already (a commit's, which
// deliver then does not start again).
func inSpan(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).SpanContext().IsValid()
}
