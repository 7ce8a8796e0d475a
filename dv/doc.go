// Package dv decodes and validates Iceberg deletion vectors: Puffin blobs of
// type deletion-vector-v1, each a set of deleted row positions in one data
// file.
//
// A blob is a 4-byte big-endian length, the magic D1 D3 39 64, a 64-bit
// portable Roaring bitmap and a big-endian CRC-32 of magic and bitmap. Decode
// checks all of it, the cardinality the manifest recorded and that every
// position lies inside the data file, and returns the positions as a
// roaring64 bitmap that shares no memory with the blob. Every failure is one
// of the package's sentinel errors, so callers can tell a corrupt vector from
// an I/O error; none of them names a file, which is the caller's to add.
//
// The package does no I/O of its own: ReadAt makes one ranged read from the
// io.ReaderAt it is handed. Diff computes which positions a new vector adds
// over the vectors and position deletes it replaces.
//
// Why not iceberg-go's table/dv: its decoder returns its own bitmap type
// (32-bit buckets, no AndNot with roaring64), does not run roaring's
// container validation and accepts keys Java rejects; its ReadDV also parses
// the Puffin footer, an extra read per vector. roaring64's ReadFrom is not
// used either: it panics on hostile bucket counts, so decoding goes through
// ReadPortableFrom plus Validate.
package dv
