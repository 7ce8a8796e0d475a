// Package debezium holds icecdc's wire formats: the debezium-json
// envelope (JSON), Kafka Connect's form of it with schemas (ConnectJSON,
// with Debezium's time and decimal modes), their schema-change and
// transaction records, and the table a person reads (TableFormat). Each
// implements cdc.Encoder; the pipeline knows none of them.
//
// A format compiles what it derives from a schema (the type switch, the
// escaped field names, Connect's schema text) once per schema and keeps
// it, with the envelope parts of the commits it encodes, in caches of its
// own. Values are written straight from the Arrow columns an event points
// into when it has them, and from its Row otherwise; both give the same
// bytes.
package debezium
