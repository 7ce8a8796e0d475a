// Package state keeps icecdc's checkpoints in a bbolt file; Store
// implements cdc.Store.
//
// The model:
//
//   - One file per daemon. Open takes bbolt's exclusive file lock (flock)
//     and holds it until Close, so a second daemon on the same file is
//     refused with ErrLocked instead of both advancing the same positions.
//     The kernel drops the lock when a process dies, so a crash leaves no
//     stale lock behind.
//   - A file knows whose it is. Open creates a missing file, with the
//     pipeline's bucket and a meta bucket ("\x00icecdc": the file's format
//     version and creation time, and when and how each pipeline came to
//     it), under a temporary name linked into place, so that a crash
//     never leaves a half-made file. An existing file is used only when it is sound and the
//     pipeline's: a 0-byte, truncated, corrupt or non-bbolt file is
//     refused (ErrDamaged, after a consistency check that turns bbolt's
//     panics and memory faults on corrupt pages into errors), and so is a
//     file without the pipeline's bucket (ErrForeign: a renamed pipeline,
//     or contents lost), unless Options.Adopt says to start the pipeline
//     there from scratch. Either way nothing starts over silently.
//   - One top-level bucket per pipeline; in it, one bucket per table, named
//     as configured ("shop.orders"), holding the key "checkpoint" (the
//     table's cdc.Checkpoint as versioned JSON, {"v":1,...}) and a bucket
//     "history" of delivered snapshots keyed by big-endian sequence number,
//     bounded to Options.HistoryLimit entries.
//   - Every Save is one read-write transaction, and bbolt fsyncs every commit
//     (NoSync is never set): when Save returns nil the checkpoint survives a
//     crash or a power loss. That costs a couple of fsyncs per Save, so the
//     pipeline saves once per confirmed batch, not per event.
//   - Save refuses to move a table's checkpoint backwards while its table
//     uuid is unchanged (ErrBackwards): the pipeline decides what a rollback
//     or a re-created table means; the store only guards against bugs.
//   - A record that does not decode is reported as ErrCorrupt, naming the
//     pipeline, table and key; the store never guesses a position. bbolt
//     keeps no checksums of stored values, so a damaged value that still
//     decodes is not detected.
//
// Caveats: the lock is advisory and only as good as the file system's flock
// (it does not hold across hosts on NFS); a reader such as `icecdc status`
// cannot open the file while a daemon holds it.
package state
