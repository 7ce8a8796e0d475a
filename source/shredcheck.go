package source

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/variant"
	iceio "github.com/apache/iceberg-go/io"
)

// A shredded variant stores a value in typed_value or in value, and
// both only for an object whose residual value holds the fields not
// shredded. iceberg-go un-shreds while it reads and arrow-go's
// un-shredding does not check that the two agree: a list in typed_value
// beside a value drops the value, a residual object repeating a shredded
// field yields the field twice, and the other disagreements fail without
// naming the column or the row. So the variant columns of a data file
// that holds typed_value are checked here first, from the file's own
// columns, before its rows become events.

// shredBatchRows bounds the rows of one record batch of the check: the
// variant columns of those rows are all it holds at a time.
const shredBatchRows = 1024

// shreddedVariants lists the top-level variant columns of a file's Arrow
// schema that hold typed_value, with their Parquet leaf columns.
func shreddedVariants(md *metadata.FileMetaData) (map[string][]int, error) {
	as, err := pqarrow.FromParquet(md.Schema, &pqarrow.ArrowReadProperties{}, md.KeyValueMetadata())
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	var out map[string][]int
	for _, f := range as.Fields() {
		if vt, ok := f.Type.(*extensions.VariantType); ok && hasTypedValue(vt) {
			if out == nil {
				out = map[string][]int{}
			}
			out[f.Name] = nil
		}
	}
	if out == nil {
		return nil, nil
	}
	sc := md.Schema
	for i := 0; i < sc.NumColumns(); i++ {
		if p := sc.Column(i).ColumnPath(); len(p) > 0 {
			if leaves, ok := out[p[0]]; ok {
				out[p[0]] = append(leaves, i)
			}
		}
	}
	return out, nil
}

func hasTypedValue(vt *extensions.VariantType) bool {
	_, ok := vt.StorageType().(*arrow.StructType).FieldIdx("typed_value")
	return ok
}

// checkShredded reads the shredded variant columns cols (of
// shreddedVariants) of the data file at path and returns the first
// disagreement of a value with its typed_value, naming the column and
// the row position.
func checkShredded(ctx context.Context, fs iceio.IO, path string, md *metadata.FileMetaData, cols map[string][]int) error {
	f, err := fs.Open(path)
	if err != nil {
		return fileError("open", "data file", path, err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f, file.WithMetadata(md))
	if err != nil {
		return fmt.Errorf("read data file %s: %w", path, err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: shredBatchRows}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("read data file %s: %w", path, err)
	}
	var leaves []int
	for _, l := range cols {
		leaves = append(leaves, l...)
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return fmt.Errorf("read data file %s: %w", path, err)
	}
	defer rr.Release()
	var base int64
	for rr.Next() {
		rec := rr.RecordBatch()
		for c, fld := range rec.Schema().Fields() {
			va, ok := rec.Column(c).(*extensions.VariantArray)
			if !ok {
				continue
			}
			st := va.Storage().(*array.Struct)
			for i := 0; i < st.Len(); i++ {
				if st.IsNull(i) {
					continue
				}
				if err := shreddedAgrees(st, va.Metadata().Value(i), i); err != nil {
					return fmt.Errorf("read data file %s: column %s at position %d: variant: %w", path, fld.Name, base+int64(i), err)
				}
			}
		}
		base += rec.NumRows()
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("read data file %s: %w", path, err)
	}
	return nil
}

// shreddedAgrees checks row i of a shredded group (a struct of value and
// typed_value) and the groups nested in its typed_value.
func shreddedAgrees(group *array.Struct, meta []byte, i int) error {
	st := group.DataType().(*arrow.StructType)
	var value *array.Binary
	if k, ok := st.FieldIdx("value"); ok {
		value, _ = group.Field(k).(*array.Binary)
	}
	k, ok := st.FieldIdx("typed_value")
	if !ok {
		return nil
	}
	typed := group.Field(k)
	if typed.IsNull(i) {
		return nil
	}
	both := value != nil && value.IsValid(i)
	switch tv := typed.(type) {
	case *array.Struct:
		if both {
			if err := residualAgrees(tv, meta, value.Value(i)); err != nil {
				return err
			}
		}
		for j, f := range tv.DataType().(*arrow.StructType).Fields() {
			g, ok := tv.Field(j).(*array.Struct)
			if !ok {
				continue
			}
			if err := shreddedAgrees(g, meta, i); err != nil {
				return fmt.Errorf("field %s: %w", f.Name, err)
			}
		}
		return nil
	case array.ListLike:
		if both {
			return errors.New("shredded list in typed_value beside a value")
		}
		elems, ok := tv.ListValues().(*array.Struct)
		if !ok {
			return nil
		}
		start, end := tv.ValueOffsets(i)
		for j := start; j < end; j++ {
			if err := shreddedAgrees(elems, meta, int(j)); err != nil {
				return fmt.Errorf("element %d: %w", j-start, err)
			}
		}
		return nil
	}
	if both {
		return fmt.Errorf("shredded %s in typed_value beside a value", typed.DataType())
	}
	return nil
}

// residualAgrees checks the value beside a shredded object: an object
// holding none of the shredded fields.
func residualAgrees(obj *array.Struct, meta, value []byte) error {
	m, err := variant.NewMetadata(meta)
	if err != nil {
		return err
	}
	v, err := variant.NewWithMetadata(m, value)
	if err != nil {
		return err
	}
	if v.Type() != variant.Object {
		return errors.New("residual value that is no object beside a shredded object")
	}
	ov := v.Value().(variant.ObjectValue)
	for j := range ov.NumElements() {
		fe, err := ov.FieldAt(j)
		if err != nil {
			return err
		}
		if _, dup := obj.DataType().(*arrow.StructType).FieldIdx(fe.Key); dup {
			return fmt.Errorf("field %q both shredded and in the residual value", fe.Key)
		}
	}
	return nil
}
