package cdc

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// ArrowRows is a record batch as the row images of events point into it:
// the batch's columns aligned with the fields of the schema the file was
// read with. An event whose image is here (Event.AfterArrow, BeforeArrow)
// is encoded straight from the columns, without a Go value per field
// (boxing every value into a Row is most of the CPU of a large commit);
// AfterRow and BeforeRow give a Row to consumers that need one.
//
// The columns are only read. The record batch they come from is retained
// and never released: an event may be encoded long after the scan that
// read it moved on, and the Go allocator's memory is reclaimed by the
// garbage collector once no image refers to it.
type ArrowRows struct {
	Schema *iceberg.Schema
	Cols   []arrow.Array // Cols[k] is field k; nil: the file lacks it, it reads as null
	fields []iceberg.NestedField
	views  []ColumnView // views[k] is Cols[k] for the encoders' common cases
}

// ColumnView gives the encoders direct access to a column's validity
// bitmap and, for the commonest types, its values: per value, that saves
// the interface calls of IsNull and Value (measurable at a million events
// a second). It is only read.
type ColumnView struct {
	nulls    []byte // the validity bitmap (IsNull's), empty when there is none
	off      int    // the array's offset into nulls
	Int64s   []int64
	Float64s []float64
	Strings  *array.String
}

// Null is arr.IsNull(i), as arrow-go computes it.
func (v *ColumnView) Null(i int) bool {
	return len(v.nulls) != 0 && bitutil.BitIsNotSet(v.nulls, v.off+i)
}

// View returns the view of column k (Cols[k] must be set).
func (a *ArrowRows) View(k int) *ColumnView { return &a.views[k] }

// Fields returns the fields of Schema, as they were when the rows were
// made; the slice is shared and only read.
func (a *ArrowRows) Fields() []iceberg.NestedField { return a.fields }

// NewArrowRows returns the rows of cols, read with schema sc (cols are
// aligned with sc.Fields()).
func NewArrowRows(sc *iceberg.Schema, cols []arrow.Array) *ArrowRows {
	a := &ArrowRows{Schema: sc, Cols: cols, fields: sc.Fields(), views: make([]ColumnView, len(cols))}
	for k, c := range cols {
		if c == nil {
			continue
		}
		v := &a.views[k]
		v.nulls, v.off = c.NullBitmapBytes(), c.Data().Offset()
		switch c := c.(type) {
		case *array.Int64:
			v.Int64s = c.Int64Values()
		case *array.Float64:
			v.Float64s = c.Float64Values()
		case *array.String:
			v.Strings = c
		}
	}
	return a
}

// Row returns row i as a Row, with the values values.ArrowValue gives.
func (a *ArrowRows) Row(i int) (values.Row, error) {
	out := make(values.Row, len(a.fields))
	for k, f := range a.fields {
		if k >= len(a.Cols) || a.Cols[k] == nil {
			continue
		}
		v, err := values.ArrowValue(a.Cols[k], i, f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		out[k] = v
	}
	return out, nil
}

// HasBefore reports whether the event carries a before image.
func (e *Event) HasBefore() bool { return e.Before != nil || e.BeforeArrow != nil }

// HasAfter reports whether the event carries an after image.
func (e *Event) HasAfter() bool { return e.After != nil || e.AfterArrow != nil }

// BeforeRow returns the before image as a Row (nil when the event has
// none), built from the Arrow columns when it is held there. A Row in
// Before takes precedence over BeforeArrow.
func (e *Event) BeforeRow() (values.Row, error) {
	if e.Before == nil && e.BeforeArrow != nil {
		return e.BeforeArrow.Row(e.BeforePos)
	}
	return e.Before, nil
}

// AfterRow returns the after image as a Row, as BeforeRow does.
func (e *Event) AfterRow() (values.Row, error) {
	if e.After == nil && e.AfterArrow != nil {
		return e.AfterArrow.Row(e.AfterPos)
	}
	return e.After, nil
}

// MaterializeRows turns images held as Arrow columns into Rows in Before
// and After, for a consumer that keeps or changes the rows.
func (e *Event) MaterializeRows() error {
	var err error
	if e.Before, err = e.BeforeRow(); err != nil {
		return fmt.Errorf("before: %w", err)
	}
	if e.After, err = e.AfterRow(); err != nil {
		return fmt.Errorf("after: %w", err)
	}
	e.BeforeArrow, e.AfterArrow, e.BeforePos, e.AfterPos = nil, nil, 0, 0
	return nil
}
