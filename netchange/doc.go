// Package netchange reduces a range of commits to their net changes: one
// event per row the range changed, as Net's comment states the rules.
// The pipeline knows a reducer only as a cdc.NetChanges, which cmd/icecdc
// hands it (cdc.Pipeline.NewNet for the tables with net: true,
// changes.ChangesOptions.NewNet for `icecdc changes --net`);
// internal/replay checks the rules against full replay.
package netchange
