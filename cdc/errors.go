package cdc

import (
	"errors"
	"fmt"
	"strings"
)

// Permanent marks err as one that retrying cannot fix: the table stops.
// Its text is err's, unchanged; errors.Is(Permanent(err), ErrPermanent)
// holds, and errors.Is and errors.As see err and what it wraps. This is
// the one way the project marks permanence, so a caller reads it with
// IsPermanent and never from the text.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{err: err, kind: ErrPermanent}
}

// Disabled marks err as a destination that asked to be left alone (HTTP
// 410): it is ErrDisabled and, since it stops the table too, ErrPermanent.
func Disabled(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{err: err, kind: ErrDisabled}
}

// IsPermanent reports whether err, or one it wraps, was marked with
// Permanent or Disabled (or wraps ErrPermanent).
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

// kindError marks an error with the sentinel that tells the pipeline what
// to do, without adding the sentinel's text to the message.
type kindError struct {
	err  error
	kind error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

func (e *kindError) Is(target error) bool {
	return target == e.kind || (e.kind == ErrDisabled && target == ErrPermanent)
}

// ErrRetry marks an encoder's error that a later attempt may not meet (a
// schema registry that is down or slow): the pipeline retries the table
// from its checkpoint with backoff instead of stopping it, as it does for
// a sink's transient errors.
var ErrRetry = errors.New("retried")

// Retry marks err with ErrRetry, with err's text unchanged.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{err: err, kind: ErrRetry}
}

// HistoryLost marks err as a table whose history no longer continues from
// its checkpoint (ErrHistory), with err's text unchanged.
func HistoryLost(err error) error {
	if err == nil {
		return nil
	}
	return &kindError{err: err, kind: ErrHistory}
}

// TableError is an error that names its table, once: a source's methods
// return them, Pipeline.Run returns them, and one wrapping another of the
// same table adds nothing to the text.
type TableError struct {
	Table string
	Err   error
	// InText: Err's own text names the table already ("load table
	// shop.orders: …", "table shop.orders does not exist in …").
	InText bool
}

// NamedIn marks err, whose text names table already, as that table's.
func NamedIn(table string, err error) error {
	if err == nil {
		return nil
	}
	return &TableError{Table: table, Err: err, InText: true}
}

func (e *TableError) Error() string {
	var inner *TableError
	if e.InText || errors.As(e.Err, &inner) && inner.Table == e.Table {
		return e.Err.Error()
	}
	return "table " + e.Table + ": " + e.Err.Error()
}

func (e *TableError) Unwrap() error { return e.Err }

// BoundedList joins names with ", ", at most n of them, then says how
// many more there are: an error or a notification naming what a pipeline
// follows stays a line long with 10,000 tables.
func BoundedList(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
