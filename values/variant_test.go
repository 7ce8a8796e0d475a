package values

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/variant"
	"github.com/apache/iceberg-go"
)

// variantColumn builds a variant column of typ (shredded or not) from
// JSON documents; "" is a null.
func variantColumn(t *testing.T, typ *extensions.VariantType, docs []string) arrow.Array {
	t.Helper()
	b := extensions.NewVariantBuilder(memory.DefaultAllocator, typ)
	defer b.Release()
	for _, d := range docs {
		if d == "" {
			b.AppendNull()
			continue
		}
		v, err := variant.ParseJSON(d, false)
		if err != nil {
			t.Fatal(err)
		}
		b.Append(v)
	}
	return b.NewArray()
}

// TestVariantShreddedEqualsUnshredded reads the same documents from an
// unshredded column and from columns shredded into typed_value (an
// object with typed fields, a list, a scalar), and wants one text each.
func TestVariantShreddedEqualsUnshredded(t *testing.T) {
	docs := []string{
		`{"a":1,"b":"x","c":[1,2.5,null]}`, `{"a":-7}`, `{"b":"only","z":true}`, `[1,2,3]`, `"text"`,
		`12345678901234567890123456789.01`, `1.5e300`, `null`, "",
	}
	want := []string{
		`{"a":1,"b":"x","c":[1,2.5,null]}`, `{"a":-7}`, `{"b":"only","z":true}`, `[1,2,3]`, `"text"`,
		`12345678901234567890123456789.01`, `1.5E300`, `null`, "",
	}
	types := map[string]*extensions.VariantType{
		"unshredded": extensions.NewDefaultVariantType(),
		"object": extensions.NewShreddedVariantType(arrow.StructOf(
			arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: "b", Type: arrow.BinaryTypes.String})),
		"list":   extensions.NewShreddedVariantType(arrow.ListOf(arrow.PrimitiveTypes.Int64)),
		"scalar": extensions.NewShreddedVariantType(arrow.BinaryTypes.String),
	}
	for name, typ := range types {
		t.Run(name, func(t *testing.T) {
			col := variantColumn(t, typ, docs)
			defer col.Release()
			if name != "unshredded" && !col.(*extensions.VariantArray).IsShredded() {
				t.Fatal("column is not shredded")
			}
			for i := range docs {
				v, err := ArrowValue(col, i, iceberg.VariantType{})
				if err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
				got := ""
				if v != nil {
					got = string(v.(VariantJSON))
				}
				if got != want[i] {
					t.Errorf("row %d: %s, want %s", i, got, want[i])
				}
			}
		})
	}
}

// TestVariantBadBytes: a variant whose metadata or value is truncated or
// points out of range is an error, never a panic.
func TestVariantBadBytes(t *testing.T) {
	good, err := variant.ParseJSON(`{"key":[1,"two"]}`, false)
	if err != nil {
		t.Fatal(err)
	}
	meta, val := good.Metadata().Bytes(), good.Bytes()
	cases := map[string][2][]byte{
		"empty metadata":           {nil, val},
		"truncated metadata":       {meta[:len(meta)-2], val},
		"bad version":              {append([]byte{0x02}, meta[1:]...), val},
		"truncated value":          {meta, val[:len(val)-3]},
		"empty value":              {meta, {}},
		"field id past dictionary": {variant.EmptyMetadataBytes[:], val},
		"offset out of range": {meta, func() []byte {
			b := append([]byte(nil), val...)
			b[len(b)/2] = 0xff
			return b
		}()},
	}
	for name, mv := range cases {
		t.Run(name, func(t *testing.T) {
			typ := extensions.NewDefaultVariantType()
			st := typ.StorageType().(*arrow.StructType)
			sb := array.NewStructBuilder(memory.DefaultAllocator, st)
			defer sb.Release()
			sb.Append(true)
			sb.FieldBuilder(0).(*array.BinaryBuilder).Append(mv[0])
			sb.FieldBuilder(1).(*array.BinaryBuilder).Append(mv[1])
			storage := sb.NewArray()
			defer storage.Release()
			col := array.NewExtensionArrayWithStorage(typ, storage)
			defer col.Release()
			v, err := ArrowValue(col, 0, iceberg.VariantType{})
			if err == nil {
				t.Fatalf("no error; value %v", v)
			}
			if !strings.HasPrefix(err.Error(), "variant: ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q", err)
			}
		})
	}
}

func TestAppendVariantJSONNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`0.001`, `0.001`}, {`1e-4`, `1.0E-4`}, {`1e7`, `1.0E7`}, {`-123.25e0`, `-123.25`},
		{`100.00`, `100`}, {`-0.00`, `0`}, {`0.10`, `0.1`}, {`9223372036854775807`, `9223372036854775807`},
		{`"\u0001\u2028/"`, `"\u0001` + "\u2028" + `/"`},
	} {
		v, err := variant.ParseJSON(tc.in, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendVariantJSON(nil, v)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
}
