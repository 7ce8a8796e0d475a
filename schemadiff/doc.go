// Package schemadiff compares two Iceberg schemas field by field, by field
// id (Diff): added, dropped, renamed and moved columns, type, nullability
// and doc changes, nested fields included, and the identifier fields; and
// renders a schema or its changes as the DDL Spark writes (CreateDDL,
// AlterDDL). Package cdc's SchemaChange, the schema-change event a
// snapshot brings, is built from it.
package schemadiff
