// Package rowfilter is the language of a read's row filter: Debezium's
// additional-conditions of an execute-snapshot signal, a small part of
// SQL's WHERE clause. Parse checks a condition, Bind resolves it against
// a table's schema, and Bound.Keep says whether a row passes, in SQL's
// three-valued logic. Redact is a condition as logs show it, without its
// literals.
//
// The pipeline knows the language only as a cdc.RowFilters, which
// Language implements and cmd/icecdc hands it.
package rowfilter
