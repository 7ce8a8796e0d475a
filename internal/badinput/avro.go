package badinput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"
)

// AvroFile is an Avro object container file decoded generically: records
// are map[string]any as the file's own writer schema describes them, with
// the inheritable fields exactly as stored (null stays null).
//
// Why not iceberg-go's manifest writers: they validate and re-derive what
// a corruption needs to set (a negative first_row_id is refused, a list
// writer reassigns first_row_id to manifests carried from older snapshots,
// inherited fields are written explicitly), so they cannot write most bad
// inputs, and even an unchanged rewrite would not be the same file.
// twmb/avro is the Avro library iceberg-go itself reads and writes with;
// re-encoding with the file's own writer schema, metadata and codec
// changes nothing but the field a case sets.
type AvroFile struct {
	Meta    map[string][]byte // user metadata (the avro.* keys are the writer's)
	Codec   string            // "null" or "deflate"
	Records []map[string]any
	schema  *avro.Schema
}

// ReadAvro decodes every record of the OCF file at path.
func ReadAvro(path string) (*AvroFile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rd, err := ocf.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("read avro %s: %w", path, err)
	}
	defer rd.Close()
	f := &AvroFile{Meta: map[string][]byte{}, Codec: "null", schema: rd.Schema()}
	for k, v := range rd.Metadata() {
		switch k {
		case "avro.schema":
		case "avro.codec":
			f.Codec = string(v)
		default:
			f.Meta[k] = v
		}
	}
	for {
		var rec any
		err := rd.Decode(&rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read avro %s: %w", path, err)
		}
		m, ok := rec.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("read avro %s: record is %T", path, rec)
		}
		f.Records = append(f.Records, m)
	}
	return f, nil
}

// Write encodes the records with the file's own schema, metadata and codec.
func (f *AvroFile) Write(path string) error {
	var buf bytes.Buffer
	opts := []ocf.WriterOpt{ocf.WithMetadata(f.Meta)}
	switch f.Codec {
	case "null":
	case "deflate":
		opts = append(opts, ocf.WithCodec(ocf.DeflateCodec(-1)))
	default:
		return fmt.Errorf("write avro %s: codec %q", path, f.Codec)
	}
	w, err := ocf.NewWriter(&buf, f.schema, opts...)
	if err != nil {
		return fmt.Errorf("write avro %s: %w", path, err)
	}
	for i, r := range f.Records {
		if err := w.Encode(r); err != nil {
			return fmt.Errorf("write avro %s: record %d: %w", path, i, err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write avro %s: %w", path, err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// EditSchema changes the file's writer schema: fn edits its JSON (parsed
// with ParseJSON), and the records are then written with the new schema.
// For a corruption that the file's own schema cannot express, such as a
// partition value in a manifest of an unpartitioned table.
func (f *AvroFile) EditSchema(fn func(root any) error) error {
	root, err := ParseJSON([]byte(f.schema.String()))
	if err != nil {
		return err
	}
	if err := fn(root); err != nil {
		return err
	}
	b, err := json.Marshal(root)
	if err != nil {
		return err
	}
	sc, err := avro.Parse(string(b))
	if err != nil {
		return fmt.Errorf("edited avro schema: %w", err)
	}
	f.schema = sc
	return nil
}
