package source

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// metadataError explains a metadata file iceberg-go could not parse.
// encoding/json reports a truncated number as "unexpected end of JSON
// input" and a bad one without its place; the file is read again and
// walked token by token to name the field and its line and column. Any
// other error is returned as it is.
func metadataError(ctx context.Context, fsF table.FSysF, loc string, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if !errors.As(err, &syn) && !errors.As(err, &typ) && !errors.Is(err, table.ErrInvalidMetadata) {
		return err
	}
	fs, ferr := fsF(ctx)
	if ferr != nil {
		return err
	}
	f, ferr := fs.Open(loc)
	if ferr != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	switch {
	case strings.HasSuffix(loc, ".gz.metadata.json"), strings.HasSuffix(loc, ".metadata.json.gz"):
		if r, ferr = gzip.NewReader(f); ferr != nil {
			return err
		}
	case strings.Contains(loc, ".zstd"):
		return err
	}
	if msg := findBadJSON(r); msg != "" {
		return &badMetadata{msg: msg, err: err}
	}
	return err
}

// badMetadata says where a metadata file is malformed; it wraps the
// parser's error, whose text it replaces.
type badMetadata struct {
	msg string
	err error
}

func (e *badMetadata) Error() string { return e.msg }
func (e *badMetadata) Unwrap() error { return e.err }

// integerFields are the metadata fields (at any depth) that hold integers:
// sequence numbers, ids, row ids, timestamps, counts.
var integerFields = map[string]bool{
	"format-version": true, "last-sequence-number": true, "last-updated-ms": true,
	"last-column-id": true, "current-schema-id": true, "default-spec-id": true,
	"last-partition-id": true, "default-sort-order-id": true, "current-snapshot-id": true,
	"next-row-id": true, "snapshot-id": true, "parent-snapshot-id": true,
	"sequence-number": true, "timestamp-ms": true, "schema-id": true,
	"first-row-id": true, "added-rows": true, "spec-id": true, "order-id": true,
	"field-id": true, "source-id": true, "id": true, "element-id": true,
	"key-id": true, "value-id": true, "max-ref-age-ms": true,
	"max-snapshot-age-ms": true, "min-snapshots-to-keep": true,
}

// findBadJSON walks a JSON document and describes its first syntax error
// or first integer field whose value is not a 64-bit integer, with the
// field's path and its line and column; "" when it finds neither.
func findBadJSON(r io.Reader) string {
	// Past this much the walk stops: the explanation is not worth
	// holding a huge document in memory.
	const maxBytes = 64 << 20
	lr := &lineReader{r: io.LimitReader(r, maxBytes)}
	dec := json.NewDecoder(lr)
	dec.UseNumber()
	var (
		path []string // object keys and [i] array indices
		// per open container: is it an object, and for an object whether
		// the next string token is a key
		stack []frame
	)
	where := func(off int64) string {
		line, col := lr.position(off)
		p := strings.Join(path, "")
		p = strings.TrimPrefix(p, ".")
		if p == "" {
			return fmt.Sprintf("line %d, column %d", line, col)
		}
		return fmt.Sprintf("%s at line %d, column %d", p, line, col)
	}
	for {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF && len(stack) == 0 {
			return ""
		}
		if err != nil {
			// The decoder's SyntaxError.Offset counts from a point
			// inside its buffer, not the file: name the token that
			// failed instead.
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				return fmt.Sprintf("%s: %s", where(lr.skipSpace(before)), syn.Error())
			}
			if (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) && lr.n < maxBytes {
				return fmt.Sprintf("%s: the file ends there (truncated)", where(lr.n))
			}
			return ""
		}
		start := lr.skipSpace(before)
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack, path = stack[:top], path[:len(path)-1]
				afterValue(stack, path)
				continue
			}
			path[len(path)-1] = "." + tok.(string)
			stack[top].wantKey = false
			continue
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{object: true, wantKey: true})
				path = append(path, "")
			case '[':
				stack = append(stack, frame{})
				path = append(path, "[0]")
			case '}', ']':
				stack, path = stack[:top], path[:len(path)-1]
				afterValue(stack, path)
			}
			continue
		case json.Number:
			if key := lastKey(path); integerFields[key] {
				if _, err := strconv.ParseInt(string(v), 10, 64); err != nil {
					return fmt.Sprintf("%s: %s is not a 64-bit integer", where(start), v)
				}
			}
		case string:
			if key := lastKey(path); integerFields[key] {
				return fmt.Sprintf("%s: the string %q is not an integer", where(start), v)
			}
		}
		afterValue(stack, path)
	}
}

type frame struct{ object, wantKey bool }

// afterValue moves the innermost container past a complete value.
func afterValue(stack []frame, path []string) {
	top := len(stack) - 1
	if top < 0 {
		return
	}
	if stack[top].object {
		stack[top].wantKey = true
		return
	}
	i, _ := strconv.Atoi(strings.Trim(path[top], "[]"))
	path[top] = "[" + strconv.Itoa(i+1) + "]"
}

func lastKey(path []string) string {
	if len(path) == 0 {
		return ""
	}
	return strings.TrimPrefix(path[len(path)-1], ".")
}

// lineReader remembers what it read, to turn offsets into lines and
// columns. It holds the whole document: only a file that failed to parse
// is read this way.
type lineReader struct {
	r   io.Reader
	buf []byte
	n   int64
}

func (l *lineReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.buf = append(l.buf, p[:n]...)
	l.n += int64(n)
	return n, err
}

// skipSpace returns the offset of the first byte at or after off that is
// not blank or a separator: where the next token starts.
func (l *lineReader) skipSpace(off int64) int64 {
	for off < int64(len(l.buf)) && bytes.IndexByte([]byte(" \t\r\n:,"), l.buf[off]) >= 0 {
		off++
	}
	return off
}

// position returns the 1-based line and column (in bytes) of off.
func (l *lineReader) position(off int64) (line, col int) {
	off = min(off, int64(len(l.buf)))
	head := l.buf[:off]
	line = bytes.Count(head, []byte{'\n'}) + 1
	col = int(off) - (bytes.LastIndexByte(head, '\n') + 1) + 1
	return line, col
}
