// Package iceberg is the sink that writes the change feed to Iceberg
// tables: one target table per source table (Config.Table, a name
// template), in the shape of Iceberg's changelog view (the source's
// columns, _change_type, _change_ordinal, _commit_snapshot_id) plus
// icecdc's _sequence_number, _source_row_id, _event_id and _commit_timestamp.
//
// Model: events are buffered per source table, as Arrow columns, and
// appended to the target in one commit per Config.CommitInterval or
// CommitBytes, whichever comes first. Each commit's snapshot summary holds
// the table's checkpoint (cdc.Checkpoint as JSON, under CheckpointKey), so
// rows and position are committed atomically; on start the sink restores
// the position from the target (cdc.CheckpointSink). Rows buffered but not
// committed are dropped when the pipeline restores, and delivered again.
//
// The events reach the sink through its own encoder (Encoder): the
// images' values in a compact binary form, decoded into Arrow builders.
package iceberg
