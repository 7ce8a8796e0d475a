// Package badinput is the bad-input suite: it corrupts a real table
// systematically and checks that icecdc either refuses it clearly or is
// not affected, and never emits a wrong event.
//
// The model:
//
//   - The base table ([BuildBase]) is a small v3 table written by iceberg-go
//     through internal/scenario: an append, a merge-on-read delete (a
//     deletion vector in a Puffin file), a position-delta update, a
//     compaction, an equality delete, a delete inside the compacted file and
//     another append ([Story]). Next to it, in the same warehouse, another
//     table whose rows hold [Secret]: a path bent out of the table that is
//     followed shows up in the output.
//   - The truth is what `icecdc changes --metadata` prints for the untouched
//     table, itself checked against the contract (internal/replay).
//   - Each case corrupts one thing — a field of metadata.json, the snapshot
//     graph, a field of a manifest list or a manifest entry (re-encoded with
//     the file's own Avro schema and codec, [AvroFile]), the bytes of a
//     manifest, Puffin or Parquet file, the daemon's state file — and runs
//     the real binary on it as a subprocess ([Run]), so that its peak
//     resident set can be read from the kernel and a runaway can be killed.
//     Table corruptions run through `icecdc changes`; a sample of them also
//     through the daemon (`icecdc run --once` into a file sink, then
//     `icecdc status`), state-file corruptions through `run` and `status`.
//   - A case passes when the process exits non-zero with icecdc's one-line
//     error naming the corrupted object (and printed nothing wrong before),
//     or exits 0 with exactly the right events ([Compare]; the fields in
//     [Cosmetic] are copied from metadata and not compared), in both cases
//     without a panic, a hang or a peak RSS of 256 MiB or more.
//
// The tests (TestBadInput, FuzzTableMetadata) are the suite; the files here
// are its helpers.
package badinput
