// Package stdout is the JSON-lines sink for pipes and tests: each event's
// encoded value on a line of its own, written to an io.Writer (standard
// output by default).
//
// The model. Write encodes a whole batch and hands it to the writer in one
// call, so that concurrent writers to the same pipe do not interleave
// inside a batch, and flushes the writer when it buffers. "Confirmed" here
// means accepted by the writer: for a file that must survive a crash, use
// the file sink, which also fsyncs.
package stdout
