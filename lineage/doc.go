// Package lineage holds the row-lineage rules of Iceberg v3 and the bitmap
// classification of one commit into deletes, updates, inserts and moves.
//
// A row's effective _row_id is its stored value, or else its data file's
// first_row_id plus its position; its effective _last_updated_sequence_number
// is the stored value, or else the data sequence number of its file's
// manifest entry. A file without first_row_id carries no lineage: both are
// null. Classification is pure: the caller hands in the rows a snapshot
// removed (with their old locations) and the live rows of the files it added,
// and gets back the events' row ids in contract order, plus anomalies. Sets
// computes the same classes as bitmaps a file at a time, for commits too
// large to hold.
package lineage
