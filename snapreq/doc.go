// Package snapreq is what an on-demand snapshot request of a table is
// made of, between those who ask (an HTTP request, a signal) and the
// pipeline that reads: the request (SnapshotRequest) and where its signal
// was read (SignalMark), the controls of a read (SnapshotControl), the
// notices of its steps (SnapshotNotice), and the errors that answer it.
package snapreq
