// Package debezium holds icecdc's wire formats: the debezium-json
// envelope (JSON), Kafka Connect's form of it with schemas (ConnectJSON,
// with Debezium's time and decimal modes), its Avro form (debezium-avro:
// Avro schemas registered in a schema registry and binary values in the
// registry's wire form), their schema-change and transaction records, and the table a person reads (TableFormat). Each
// implements cdc.Encoder; the pipeline knows none of them. Unwrap is a
// layer over a format: the records Debezium's ExtractNewRecordState makes
// of the envelope (which record an event becomes is decided once, in
// Unwrap; each format writes the flattened value in its own form), and
// both formats write Debezium's heartbeat record.
//
// A format compiles what it derives from a schema (the type switch, the
// escaped field names, Connect's schema text) once per schema and keeps
// it, with the envelope parts of the commits it encodes, in caches of its
// own. Values are written straight from the Arrow columns an event points
// into when it has them, and from its Row otherwise; both give the same
// bytes.
package debezium
