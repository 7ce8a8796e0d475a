package javatables

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/puffin"
)

// relocatePuffin rewrites the referenced-data-file property of every blob
// of a Puffin file (iceberg-go's puffin reader and writer). The blobs keep
// their bytes, order, offsets and lengths — the manifest's content_offset
// and content_size_in_bytes stay valid — and the footer its properties;
// only the footer's length changes.
func relocatePuffin(raw []byte, moved func(string) (string, error)) ([]byte, error) {
	rd, err := puffin.NewReader(bytes.NewReader(raw), puffin.WithMaxFooterSize(int64(len(raw))))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := puffin.NewWriter(&buf)
	if err != nil {
		return nil, err
	}
	props := maps.Clone(rd.Properties())
	createdBy, ok := props[puffin.CreatedBy]
	if !ok {
		return nil, fmt.Errorf("puffin footer without %s: the writer would add one", puffin.CreatedBy)
	}
	delete(props, puffin.CreatedBy)
	if err := w.SetCreatedBy(createdBy); err != nil {
		return nil, err
	}
	if err := w.AddProperties(props); err != nil {
		return nil, err
	}
	for i, b := range rd.Blobs() {
		if b.CompressionCodec != nil && *b.CompressionCodec != "" {
			return nil, fmt.Errorf("blob %d: compressed (%s)", i, *b.CompressionCodec)
		}
		data, err := rd.ReadBlobByMetadata(b)
		if err != nil {
			return nil, fmt.Errorf("blob %d: %w", i, err)
		}
		p := maps.Clone(b.Properties)
		if ref, ok := p["referenced-data-file"]; ok {
			if p["referenced-data-file"], err = moved(ref); err != nil {
				return nil, fmt.Errorf("blob %d: %w", i, err)
			}
		}
		got, err := w.AddBlob(puffin.BlobMetadataInput{Type: b.Type, SnapshotID: b.SnapshotID,
			SequenceNumber: b.SequenceNumber, Fields: b.Fields, Properties: p}, data)
		if err != nil {
			return nil, fmt.Errorf("blob %d: %w", i, err)
		}
		if got.Offset != b.Offset || got.Length != b.Length {
			return nil, fmt.Errorf("blob %d: at %d+%d once rewritten, Java wrote it at %d+%d", i, got.Offset, got.Length, b.Offset, b.Length)
		}
	}
	if err := w.Finish(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// relocatePositionDeletes rewrites the file_path column of a v2
// position-delete file (arrow-go's Parquet reader and writer; field ids,
// column order, types and row order kept; zstd as Iceberg Java writes).
func relocatePositionDeletes(raw []byte, moved func(string) (string, error)) ([]byte, error) {
	ctx := context.Background()
	pr, err := file.NewParquetReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	sc := tbl.Schema()
	idx := sc.FieldIndices("file_path")
	if len(idx) != 1 || sc.Field(idx[0]).Type.ID() != arrow.STRING {
		return nil, fmt.Errorf("position-delete file without a string file_path column: %v", sc)
	}
	cols := make([]arrow.Column, tbl.NumCols())
	for i := range cols {
		cols[i] = *tbl.Column(i)
	}
	var chunks []arrow.Array
	for _, ch := range tbl.Column(idx[0]).Data().Chunks() {
		src := ch.(*array.String)
		b := array.NewStringBuilder(memory.DefaultAllocator)
		for j := range src.Len() {
			if src.IsNull(j) {
				b.AppendNull()
				continue
			}
			p, err := moved(src.Value(j))
			if err != nil {
				return nil, err
			}
			b.Append(p)
		}
		chunks = append(chunks, b.NewArray())
		b.Release()
	}
	chunked := arrow.NewChunked(arrow.BinaryTypes.String, chunks)
	for _, c := range chunks {
		c.Release()
	}
	cols[idx[0]] = *arrow.NewColumn(sc.Field(idx[0]), chunked)
	chunked.Release()
	out := array.NewTable(sc, cols, tbl.NumRows())
	defer out.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCreatedBy(pr.MetaData().GetCreatedBy()))
	if err := pqarrow.WriteTable(out, &buf, max(out.NumRows(), 1), props, pqarrow.DefaultWriterProps()); err != nil {
		return nil, err
	}
	check, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, err
	}
	defer check.Close()
	if check.NumRows() != pr.NumRows() {
		return nil, fmt.Errorf("rewritten with %d rows, Java wrote %d", check.NumRows(), pr.NumRows())
	}
	for i := range pr.MetaData().Schema.NumColumns() {
		a, b := pr.MetaData().Schema.Column(i), check.MetaData().Schema.Column(i)
		if a.Name() != b.Name() || a.SchemaNode().FieldID() != b.SchemaNode().FieldID() || a.PhysicalType() != b.PhysicalType() {
			return nil, fmt.Errorf("column %d rewritten as %s (id %d), Java wrote %s (id %d)", i, b.Name(), b.SchemaNode().FieldID(), a.Name(), a.SchemaNode().FieldID())
		}
	}
	return buf.Bytes(), nil
}
