// Package values is the Go form of an Iceberg row's values: Row and the
// types it holds per Iceberg type (Decimal, Date, Time, the timestamps,
// UUID, MapEntry, VariantJSON), how a value is read from an Arrow column
// (ArrowValue, ArrowFits, and the time conversions the encoders' Arrow
// paths share), and a variant's JSON text, the text Spark's to_json gives.
//
// A value whose Arrow type does not fit its Iceberg type is an error
// naming both: nothing here guesses a value. The package has no I/O and
// knows nothing of events; package cdc's event model holds Rows, and the
// wire formats (package debezium) and sinks write them.
package values
