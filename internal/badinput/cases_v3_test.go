package badinput

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/variant"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/internal/scenario"
)

// The v3 cases run on a small table of their own, written by iceberg-go
// in the case's directory: one append of three rows (id, a variant doc, a
// geometry shape under a CRS that names no srid), the row at position 1
// being the bad one. Nothing in that file may come out as an event: the
// right answer of a file with a bad row is an error naming the file, the
// column and the row position.

// v3CRS is the shape column's CRS in the untouched case table: one that
// names no srid, so events carry srid null and the CRS in the schema.
const v3CRS = "ESRI:102008"

func v3Schema() (*iceberg.Schema, error) {
	geo, err := iceberg.GeometryTypeOf(v3CRS)
	if err != nil {
		return nil, err
	}
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "doc", Type: iceberg.VariantType{}},
		iceberg.NestedField{ID: 3, Name: "shape", Type: geo},
	), nil
}

// wkbPoint is POINT(x y).
func wkbPoint(x, y byte) []byte {
	return []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, x, 0x40, 0, 0, 0, 0, 0, 0, y, 0x40}
}

// v3Docs are the docs of the case table's first and last rows.
func v3Docs() (first, last variant.Value) {
	first, err := variant.ParseJSON(`{"a":1,"b":[true,"x"]}`, false)
	if err != nil {
		panic(err)
	}
	if last, err = variant.ParseJSON(`[1,2,3]`, false); err != nil {
		panic(err)
	}
	return first, last
}

// v3Table writes the case table under dir with doc at position 1 given
// by bad; it returns the table and the path of its one data file.
func v3Table(dir string, bad any) (*table.Table, string, error) {
	ctx := context.Background()
	sc, err := v3Schema()
	if err != nil {
		return nil, "", err
	}
	env, err := scenario.NewEnv(ctx, dir)
	if err != nil {
		return nil, "", err
	}
	defer env.Close()
	tbl, err := env.CreateTable(ctx, table.Identifier{"bookshop", "v3"}, sc, nil, 3, nil)
	if err != nil {
		return nil, "", err
	}
	first, last := v3Docs()
	tbl, err = scenario.Append(ctx, tbl, []map[string]any{
		{"id": int64(1), "doc": first, "shape": wkbPoint(1, 2)},
		{"id": int64(2), "doc": bad, "shape": wkbPoint(3, 4)},
		{"id": int64(3), "doc": last, "shape": nil},
	})
	if err != nil {
		return nil, "", err
	}
	snap := tbl.CurrentSnapshot()
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, "", err
	}
	list, err := snap.Manifests(fs)
	if err != nil {
		return nil, "", err
	}
	for _, m := range list {
		entries, err := m.FetchEntries(fs, false)
		if err != nil {
			return nil, "", err
		}
		for _, e := range entries {
			if e.DataFile().ContentType() == iceberg.EntryContentData {
				return tbl, LocalPath(e.DataFile().FilePath()), nil
			}
		}
	}
	return nil, "", fmt.Errorf("v3 case table: no data file")
}

// shredded is a shredded variant column's value at one row: the residual
// value (nil: null) and typed_value, built by typed on the typed_value
// builder (nil: null).
type shredded struct {
	meta  []byte // nil: the file's default
	value []byte
	typed func(b array.Builder) error
}

// reshred rewrites the data file at path with arrow-go, its doc column
// shredded as typ holds it (row i of rows; metadata meta unless the row
// says otherwise), every other column as it was, and fixes
// the manifest's file size (the file's length changes).
func reshred(tbl *table.Table, path string, typ *extensions.VariantType, meta []byte, rows []shredded) error {
	ctx := context.Background()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return err
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		rdr.Close()
		return err
	}
	old, err := fr.ReadTable(ctx)
	rdr.Close()
	if err != nil {
		return err
	}
	defer old.Release()
	if int(old.NumRows()) != len(rows) {
		return fmt.Errorf("reshred: %d rows in the file, %d given", old.NumRows(), len(rows))
	}
	sb := array.NewStructBuilder(memory.DefaultAllocator, typ.StorageType().(*arrow.StructType))
	defer sb.Release()
	for _, r := range rows {
		sb.Append(true)
		if r.meta != nil {
			sb.FieldBuilder(0).(*array.BinaryBuilder).Append(r.meta)
		} else {
			sb.FieldBuilder(0).(*array.BinaryBuilder).Append(meta)
		}
		vb := sb.FieldBuilder(1).(*array.BinaryBuilder)
		if r.value == nil {
			vb.AppendNull()
		} else {
			vb.Append(r.value)
		}
		tb := sb.FieldBuilder(2)
		if r.typed == nil {
			tb.AppendNull()
		} else if err := r.typed(tb); err != nil {
			return err
		}
	}
	storage := sb.NewArray()
	defer storage.Release()
	doc := array.NewExtensionArrayWithStorage(typ, storage)
	defer doc.Release()

	fields := old.Schema().Fields()
	cols := make([]arrow.Column, len(fields))
	for i, f := range fields {
		if f.Name == "doc" {
			f.Type = typ
			fields[i] = f
			ch := arrow.NewChunked(typ, []arrow.Array{doc})
			cols[i] = *arrow.NewColumn(f, ch)
			ch.Release()
			continue
		}
		cols[i] = *old.Column(i)
	}
	sc := arrow.NewSchema(fields, nil)
	nt := array.NewTable(sc, cols, old.NumRows())
	defer nt.Release()
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pqarrow.WriteTable(nt, out, nt.NumRows(), parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())); err != nil {
		out.Close()
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	return scenario.RewriteEntries(ctx, tbl, *tbl.CurrentSnapshot(), func(_ iceberg.DataFile, f *scenario.FileFields) {
		f.FileSize = st.Size()
	})
}

// encoded is the variant encoding of a JSON document (its value bytes;
// its dictionary must be empty, so documents with keys come as objects
// of typed fields).
func encoded(doc string) []byte {
	v, err := variant.ParseJSON(doc, false)
	if err != nil {
		panic(err)
	}
	return v.Bytes()
}

func v3Cases() []tcase {
	var cases []tcase
	add := func(name string, prep func(w *work) error) {
		cases = append(cases, tcase{name: "v3/" + name, group: "v3 types", prep: prep})
	}
	good, err := variant.ParseJSON(`{"key":[1,"two"]}`, false)
	if err != nil {
		panic(err)
	}
	meta, val := good.Metadata().Bytes(), good.Bytes()
	// A bad variant is written as its two buffers (scenario.RawVariant).
	raw := func(name string, m, v []byte) {
		add("variant "+name, func(w *work) error {
			tbl, data, err := v3Table(filepath.Join(w.dir, "v3"), scenario.RawVariant{Metadata: m, Value: v})
			if err != nil {
				return err
			}
			return w.badRow(tbl, data)
		})
	}
	raw("metadata truncated by 2 bytes", meta[:len(meta)-2], val)
	raw("metadata of its header byte alone", meta[:1], val)
	raw("metadata empty", []byte{}, val)
	raw("metadata dictionary size past its end", func() []byte {
		b := append([]byte(nil), meta...)
		b[1] = 0xff
		return b
	}(), val)
	raw("metadata offset past its end", func() []byte {
		b := append([]byte(nil), meta...)
		b[len(b)-len("key")-1] = 0x7f
		return b
	}(), val)
	raw("value truncated by 3 bytes", meta, val[:len(val)-3])
	raw("value empty", meta, []byte{})
	raw("value field id past the dictionary", variant.EmptyMetadataBytes[:], val)
	raw("value offset out of range", meta, func() []byte {
		b := append([]byte(nil), val...)
		b[len(b)/2] = 0xff
		return b
	}())
	raw("value array of 2^31 elements", meta, []byte{0x13, 0xff, 0xff, 0xff, 0x7f, 0})

	// Shredded columns whose typed_value disagrees with value: both set
	// where only one may be (a scalar, a list), a residual that is not an
	// object beside a shredded object, and one repeating a shredded field.
	shred := func(name string, typ *extensions.VariantType, meta []byte, bad shredded) {
		add("shredded variant "+name, func(w *work) error {
			tbl, data, err := v3Table(filepath.Join(w.dir, "v3"), good)
			if err != nil {
				return err
			}
			ok := shredded{value: encoded(`"fine"`)}
			if err := reshred(tbl, data, typ, meta, []shredded{ok, bad, ok}); err != nil {
				return err
			}
			return w.badRow(tbl, data)
		})
	}
	empty := variant.EmptyMetadataBytes[:]
	str := extensions.NewShreddedVariantType(arrow.BinaryTypes.String)
	// The control: a file shredded as the spec wants reads as the same
	// table unshredded.
	cases = append(cases, tcase{name: "v3/shredded variant that agrees (control)", group: "v3 types", control: true, prep: func(w *work) error {
		fine, err := variant.ParseJSON(`"fine"`, false)
		if err != nil {
			return err
		}
		tbl, data, err := v3Table(filepath.Join(w.dir, "v3"), fine)
		if err != nil {
			return err
		}
		if err := w.v3Truth(tbl); err != nil {
			return err
		}
		first, last := v3Docs()
		return reshred(tbl, data, str, empty, []shredded{
			{meta: first.Metadata().Bytes(), value: first.Bytes()},
			{typed: func(b array.Builder) error { b.(*array.StringBuilder).Append("fine"); return nil }},
			{meta: last.Metadata().Bytes(), value: last.Bytes()},
		})
	}})
	shred("string typed_value beside a value", str, empty, shredded{value: encoded(`7`), typed: func(b array.Builder) error {
		b.(*array.StringBuilder).Append("seven")
		return nil
	}})
	list := extensions.NewShreddedVariantType(arrow.ListOf(arrow.PrimitiveTypes.Int64))
	shred("list typed_value beside a value", list, empty, shredded{value: encoded(`"not a list"`), typed: func(b array.Builder) error {
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		el := lb.ValueBuilder().(*array.StructBuilder)
		el.Append(true)
		el.FieldBuilder(0).AppendNull()
		el.FieldBuilder(1).(*array.Int64Builder).Append(1)
		return nil
	}})
	obj := extensions.NewShreddedVariantType(arrow.StructOf(arrow.Field{Name: "key", Type: arrow.PrimitiveTypes.Int64}))
	objTyped := func(b array.Builder) error {
		ob := b.(*array.StructBuilder)
		ob.Append(true)
		kb := ob.FieldBuilder(0).(*array.StructBuilder)
		kb.Append(true)
		kb.FieldBuilder(0).AppendNull()
		kb.FieldBuilder(1).(*array.Int64Builder).Append(1)
		return nil
	}
	shred("object typed_value beside a value that is no object", obj, empty, shredded{value: encoded(`[1]`), typed: objTyped})
	shred("object typed_value beside a residual object repeating its field", obj, meta,
		shredded{value: val, typed: objTyped})

	// The geometry's CRS in the table's type changed to another than the
	// file's (one naming no srid, a projjson reference to no property,
	// strings no CRS is): the table lies about its file, and is refused
	// naming the file, the column or the metadata iceberg-go cannot
	// parse. (A table written with a CRS naming no srid reads, with srid
	// null and the CRS in the Connect schema: source's TestV3Types.)
	crs := func(name, typ string) {
		add("geometry type "+name, func(w *work) error {
			tbl, data, err := v3Table(filepath.Join(w.dir, "v3"), good)
			if err != nil {
				return err
			}
			w.meta = LocalPath(tbl.MetadataLocation())
			w.cols, w.expect = nil, nil
			raw, err := os.ReadFile(w.meta)
			if err != nil {
				return err
			}
			q, _ := json.Marshal("geometry(" + v3CRS + ")")
			nq, _ := json.Marshal(typ)
			if !strings.Contains(string(raw), string(q)) {
				return fmt.Errorf("v3 table metadata holds no %s", q)
			}
			w.name(w.meta, filepath.Base(data), "shape")
			return os.WriteFile(w.meta, []byte(strings.ReplaceAll(string(raw), string(q), string(nq))), 0o644)
		})
	}
	crs("an unknown authority (IGNF:LAMB93)", "geometry(IGNF:LAMB93)")
	crs("EPSG with a non-number (EPSG:4326x)", "geometry(EPSG:4326x)")
	crs("an srid past int32 (srid:99999999999)", "geometry(srid:99999999999)")
	crs("a negative srid (srid:-1)", "geometry(srid:-1)")
	crs("a projjson reference (projjson:crs_prop)", "geometry(projjson:crs_prop)")
	crs("a CRS of 64 KiB", "geometry("+strings.Repeat("X", 64<<10)+")")
	crs("a CRS with quotes and a newline", "geometry(a\"b\nc)")
	crs("an empty CRS", "geometry()")
	crs("two CRSs", "geometry(EPSG:4326, EPSG:3857)")
	crs("an unclosed CRS", "geometry(EPSG:4326")
	return cases
}

// v3Truth makes the case run on tbl, untouched so far, and want its events.
func (w *work) v3Truth(tbl *table.Table) error {
	w.meta = LocalPath(tbl.MetadataLocation())
	res, err := Run(w.s.bin, []string{"changes", "--metadata", w.meta}, w.dir, Limits{Timeout: time.Minute})
	if err != nil {
		return err
	}
	if res.Exit != 0 {
		return fmt.Errorf("changes on the untouched v3 table: exit %d: %s", res.Exit, res.Stderr)
	}
	raw, err := os.ReadFile(w.meta)
	if err != nil {
		return err
	}
	md, err := ParseJSON(raw)
	if err != nil {
		return err
	}
	w.cols = SchemaColumns(md)
	w.expect, err = ParseEvents(res.Stdout, w.cols)
	if err == nil && len(w.expect) != 3 {
		err = fmt.Errorf("the untouched v3 table yields %d events, want 3", len(w.expect))
	}
	return err
}

// badRow makes the case run on tbl and want an error naming its data
// file, the doc column and the row position 1.
func (w *work) badRow(tbl *table.Table, data string) error {
	w.meta = LocalPath(tbl.MetadataLocation())
	w.cols, w.expect = nil, nil
	w.name(filepath.Base(data))
	w.must = append(w.must, "column doc", "position 1")
	return nil
}
