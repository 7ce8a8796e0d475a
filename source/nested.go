package source

import "github.com/apache/iceberg-go"

// rewriteNested is t, a struct, list or map, with the fields of its
// structs passed through field and its element, key and value types
// through typ, and whether either changed anything; any other t is
// returned as it is. field and typ recurse by calling back into it, so a
// rewrite of a schema's types (geo.go, defaults.go) walks every depth.
func rewriteNested(t iceberg.Type, typ func(iceberg.Type) (iceberg.Type, bool), field func(iceberg.NestedField) (iceberg.NestedField, bool)) (iceberg.Type, bool) {
	switch t := t.(type) {
	case *iceberg.StructType:
		var fields []iceberg.NestedField
		for i, f := range t.FieldList {
			g, ok := field(f)
			if !ok {
				continue
			}
			if fields == nil {
				fields = append([]iceberg.NestedField(nil), t.FieldList...)
			}
			fields[i] = g
		}
		if fields == nil {
			return t, false
		}
		return &iceberg.StructType{FieldList: fields}, true
	case *iceberg.ListType:
		e, ok := typ(t.Element)
		if !ok {
			return t, false
		}
		c := *t
		c.Element = e
		return &c, true
	case *iceberg.MapType:
		k, kok := typ(t.KeyType)
		v, vok := typ(t.ValueType)
		if !kok && !vok {
			return t, false
		}
		c := *t
		c.KeyType, c.ValueType = k, v
		return &c, true
	}
	return t, false
}
