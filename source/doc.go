// Package source is icecdc's access to Iceberg: it opens a table (from a
// metadata file or a catalog), walks a branch's snapshots in ascending
// sequence number, and computes one snapshot's row events.
//
// For a snapshot S it reads only the manifests S wrote and in them only S's
// own entries. Rows leave the table through new deletion vectors (diffed
// against the vector S replaced and any v2 position deletes) and through data
// files S removed; rows arrive through data files S added. Only the files
// those entries name are opened, so the cost follows the size of the commit,
// not of the table. Equality deletes (Flink and Kafka Connect upserts) name
// no file: the candidates are the older live files of their partition whose
// column bounds can hold a deleted key, judged on every equality field and,
// for up to 1,024 keys, key tuple by key tuple (equality.go). Files outside the commit are located through a cache of
// data-file metadata that every processed snapshot feeds.
//
// A commit's events are a stream (stream.go): it is classified with row-id
// bitmaps, then its deletes, updates and inserts are read file by file in
// position order, a record batch at a time. Only the before images of its
// updates are held, encoded, within Options.MaxMemory, and spilled to a
// temporary file past it (imagestore.go). Commits with equality deletes,
// which decide by value, are held.
//
// Tables live on object storage, where a request costs a round trip: a
// commit's manifests, footers, vectors and data files are read
// concurrently, at most Options.IOConcurrency at a time (pool.go), and the
// events are decided over the results in manifest order, never in the
// order reads finish. A data file's footer is read once (footers.go), the
// vectors of one Puffin file together (vectors.go), and a Refresh that
// finds the metadata unchanged reads nothing else.
//
// Metadata is checked before it is trusted: a table's files are read only
// from its allowed locations (Options.AllowedLocations, by default the
// table's own), and no count, size or offset from a manifest sizes an
// allocation before it was checked against the file it describes.
//
// Tables are found through the catalogs of CatalogTypes (a hive catalog's
// calls are serialized and bounded in time: catalog.go) or a metadata
// file, and read from local files, S3, GCS or Azure through
// iceberg-go's file IO. Object-store errors name the object and the store
// and what to change, in one line (storeerr.go); S3 requests are retried a
// bounded number of times; no error shows a credential.
package source
