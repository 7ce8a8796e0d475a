// Package scenario builds real Iceberg tables on local disk with iceberg-go and
// reads them back, for scenario tests and the `icecdc demo` command.
//
// The model: an [Env] is a warehouse directory plus a SQL catalog kept in a
// SQLite file. Each mutation ([Append], [AppendFiles], [Delete], [Update],
// [OverwriteCoW], [DeleteCoW], [Compact], [EqualityDelete], [EqualityUpsert])
// makes exactly one commit, i.e. one snapshot, and returns the refreshed table
// ([UpgradeToV3] changes metadata only). The oracle [LiveRows] scans one
// snapshot with row lineage and returns live(S) keyed by _row_id, which is
// what the change contract of docs/contract.md is defined on.
//
// The writers are iceberg-go's own wherever iceberg-go has one, so the tables
// look like what a Go writer produces in the wild, including its known
// deviations from the spec (see ICEBERG-GO-NOTES.md); those are documented on
// the function that can trigger them rather than worked around.
package scenario
