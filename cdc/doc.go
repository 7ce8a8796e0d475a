// Package cdc is the pipeline of icecdc: the event model, the per-snapshot
// driver that turns a commit into ordered row events, their encodings, and
// the Source / Sink / Store interfaces that the concrete packages implement.
//
// The model: a table is a sequence of snapshots in ascending sequence number
// along one branch. Each snapshot yields a Commit, whose events follow the
// change contract of DESIGN §1: every delete precedes every update, every
// update precedes every insert, and inside a phase events keep the manifest
// order of their data file, then the row position. A position in that stream
// is a Checkpoint; it only moves forward after a sink confirmed delivery.
package cdc
