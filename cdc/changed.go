package cdc

import (
	"math"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/values"
)

// ChangedFields returns the paths of the fields whose values differ
// between before and after, both rows of schema sc, in schema order. A path
// is the field's name, and for a field inside a struct the names from the
// top-level column down joined by '.' (address.city). A struct that is null
// on one side only is one changed field (address); lists and maps are
// compared whole and named as one field, never by element.
func ChangedFields(sc *iceberg.Schema, before, after values.Row) []string {
	if sc == nil {
		return nil
	}
	return appendChanged(nil, "", sc.Fields(), before, after)
}

func appendChanged(dst []string, prefix string, fields []iceberg.NestedField, before, after values.Row) []string {
	for i, f := range fields {
		path := f.Name
		if prefix != "" {
			path = prefix + "." + f.Name
		}
		b, a := rowValue(before, i), rowValue(after, i)
		if st, ok := f.Type.(*iceberg.StructType); ok && b != nil && a != nil {
			br, bok := b.(values.Row)
			ar, aok := a.(values.Row)
			if bok && aok {
				dst = appendChanged(dst, path, st.FieldList, br, ar)
				continue
			}
		}
		if !sameValue(b, a) {
			dst = append(dst, path)
		}
	}
	return dst
}

// rowValue is r[i], or nil (null) past the end of r.
func rowValue(r values.Row, i int) any {
	if i < len(r) {
		return r[i]
	}
	return nil
}

// sameValue compares two values of one field, whole. Unlike values.ValueEqual it
// takes NaN to equal NaN, so that a row whose float is NaN on both sides is
// not reported as changed on every update.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		if y, ok := b.(float64); ok && math.IsNaN(x) && math.IsNaN(y) {
			return true
		}
	case float32:
		if y, ok := b.(float32); ok && x != x && y != y {
			return true
		}
	}
	return values.ValueEqual(a, b)
}
