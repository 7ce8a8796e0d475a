package source

import (
	"errors"
	"fmt"
	"io/fs"
	"math"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Numbers in manifests size what icecdc allocates (bitmaps of a file's
// positions or row ids, the buffer of a vector), so none is used before it
// is checked: checkEntry refuses values no real file has when an entry is
// read, readLayout checks a data file's record_count against its Parquet
// footer before any of its positions is enumerated, and readDV checks a
// vector's range against the Puffin file's size and what its positions can
// need before reading it.

// checkEntry refuses an entry whose counts, sizes or offsets are negative,
// or a data file whose row ids would overflow int64 or reach past the
// table's next-row-id (every row id of a table is below it). nextRowID < 0
// skips that last check.
func checkEntry(e iceberg.ManifestEntry, nextRowID int64) error {
	df := e.DataFile()
	what := fileKind(df)
	n := df.Count()
	if n < 0 {
		return fmt.Errorf("%s %s: negative record_count %d", what, df.FilePath(), n)
	}
	if s := df.FileSizeBytes(); s < 0 {
		return fmt.Errorf("%s %s: negative file_size_in_bytes %d", what, df.FilePath(), s)
	}
	if v := df.ContentOffset(); v != nil && *v < 0 {
		return fmt.Errorf("%s %s: negative content_offset %d", what, df.FilePath(), *v)
	}
	if v := df.ContentSizeInBytes(); v != nil && *v < 0 {
		return fmt.Errorf("%s %s: negative content_size_in_bytes %d", what, df.FilePath(), *v)
	}
	id := df.FirstRowID()
	if df.ContentType() != iceberg.EntryContentData || id == nil {
		return nil
	}
	switch {
	case *id < 0:
		return fmt.Errorf("%s %s: negative first_row_id %d", what, df.FilePath(), *id)
	case *id > math.MaxInt64-n:
		return fmt.Errorf("%s %s: first_row_id %d + record_count %d overflows a row id", what, df.FilePath(), *id, n)
	case nextRowID >= 0 && *id+n > nextRowID:
		return fmt.Errorf("%s %s: first_row_id %d + record_count %d passes the table's next-row-id %d", what, df.FilePath(), *id, n, nextRowID)
	}
	return nil
}

// fileKind names what a manifest entry's file is, for errors.
func fileKind(df iceberg.DataFile) string {
	switch df.ContentType() {
	case iceberg.EntryContentData:
		return "data file"
	case iceberg.EntryContentEqDeletes:
		return "equality delete file"
	}
	if table.IsDeletionVector(df) {
		return "deletion vector file"
	}
	return "position delete file"
}

// fileError names the file an error of opening or reading it is about; a
// file outside the allowed locations is said to be so.
func fileError(verb, what, name string, err error) error {
	var out *outsideError
	if errors.As(err, &out) {
		return fmt.Errorf("%s %s: %w", what, name, out)
	}
	return fmt.Errorf("%s %s %s: %w", verb, what, name, err)
}

// decodeError is fileError for the Avro metadata files (manifest lists and
// manifests). An error that is neither the storage's nor one of
// iceberg-go's checks of decoded values is reported as the file not being
// a valid one of its kind, without the decoder's message: such messages
// can quote the file's bytes (the Avro reader prints a bad magic in hex),
// and a corrupt pointer can name a file that is no metadata.
func decodeError(what, name string, err error) error {
	var (
		out *outsideError
		ioe *ioError
		pe  *fs.PathError
	)
	switch {
	case errors.As(err, &out):
		return fmt.Errorf("%s %s: %w", what, name, out)
	case errors.As(err, &ioe), errors.As(err, &pe), errors.Is(err, iceberg.ErrInvalidArgument):
		return fmt.Errorf("read %s %s: %w", what, name, err)
	}
	return &invalidFileError{what: what, name: name, cause: err}
}

// invalidFileError is a file that does not decode as what it should be.
// Its cause is kept for errors.Is and errors.As but not printed.
type invalidFileError struct {
	what, name string
	cause      error
}

func (e *invalidFileError) Error() string {
	return fmt.Sprintf("%s %s: not a valid %s", e.what, e.name, e.what)
}

func (e *invalidFileError) Unwrap() error { return e.cause }
