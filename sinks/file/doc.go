// Package file is the JSON-lines sink for a local append-only file: each
// event's encoded value on a line of its own, the encoding of package
// stdout.
//
// The model. Write appends a whole batch in one write and fsyncs before it
// returns, so a batch the pipeline saw confirmed survives a crash. A line is
// therefore only ever confirmed whole; bytes after the last newline can
// only come from a write that was never confirmed (a crash mid-write), and
// Open cuts them off so that the next line does not glue onto a torn one.
// The pipeline replays from its checkpoint, so those events are written
// again: delivery is at least once and readers dedupe on event ids.
//
// A failed write is cut back to the last confirmed line, and the error is
// one the pipeline retries. A failed fsync is permanent (cdc.ErrPermanent):
// the kernel may have dropped the unwritten pages, and a later fsync that
// succeeds would not bring them back, so the sink refuses further writes
// until the file is reopened. One process writes the file at a time; Open
// does not lock it.
package file
