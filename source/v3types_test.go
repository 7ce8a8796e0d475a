package source_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/variant"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/replay"
	"github.com/icecdc/icecdc/internal/scenario"
)

// v3TypesSchema has the types v3 added: variant, geometry and geography
// with the default CRS, an srid and a CRS that names none, and the
// nanosecond timestamps.
func v3TypesSchema(t *testing.T) *iceberg.Schema {
	t.Helper()
	g3857, err := iceberg.GeometryTypeOf("srid:3857")
	if err != nil {
		t.Fatal(err)
	}
	gother, err := iceberg.GeographyTypeOf("IGNF:LAMB93", "spherical")
	if err != nil {
		t.Fatal(err)
	}
	geo, _ := iceberg.GeometryTypeOf(iceberg.DefaultGeoCRS)
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "doc", Type: iceberg.VariantType{}},
		iceberg.NestedField{ID: 3, Name: "shape", Type: geo},
		iceberg.NestedField{ID: 4, Name: "mercator", Type: g3857},
		iceberg.NestedField{ID: 5, Name: "place", Type: gother},
		iceberg.NestedField{ID: 6, Name: "local_ns", Type: iceberg.PrimitiveTypes.TimestampNs},
		iceberg.NestedField{ID: 7, Name: "utc_ns", Type: iceberg.PrimitiveTypes.TimestampTzNs},
		iceberg.NestedField{ID: 8, Name: "note", Type: iceberg.PrimitiveTypes.String},
	)
}

// mustVariant builds a variant with fn on a builder whose dictionary is
// seeded with keys, so that equal values can carry different dictionaries.
func mustVariant(t *testing.T, keys []string, fn func(b *variant.Builder) error) variant.Value {
	t.Helper()
	var b variant.Builder
	for _, k := range keys {
		b.AddKey(k)
	}
	if err := fn(&b); err != nil {
		t.Fatal(err)
	}
	v, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func parseVariant(t *testing.T, s string) variant.Value {
	t.Helper()
	v, err := variant.ParseJSON(s, false)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// point is the WKB of POINT(x y) with small integer coordinates.
func point(x, y byte) []byte {
	return []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, x, 0x40, 0, 0, 0, 0, 0, 0, y, 0x40}
}

// TestV3Types follows a table of variant, geometry, geography and
// nanosecond columns through inserts, an update of another column and an
// update of the variant, in both formats, and pins the text of each type.
func TestV3Types(t *testing.T) {
	f := newFixture(t, 3, nil, v3TypesSchema(t))
	obj := func(b *variant.Builder) error {
		start := b.Offset()
		fields := []variant.FieldEntry{b.NextField(start, "b")}
		if err := b.AppendInt(2); err != nil {
			return err
		}
		fields = append(fields, b.NextField(start, "a"))
		if err := b.AppendString("x"); err != nil {
			return err
		}
		return b.FinishObject(start, fields)
	}
	scalars := func(b *variant.Builder) error {
		start := b.Offset()
		var offs []int
		for _, add := range []func() error{
			func() error { return b.AppendDate(arrow.Date32(-1)) },
			func() error { return b.AppendTimestamp(arrow.Timestamp(1_500_000), true, true) },
			func() error { return b.AppendTimestamp(arrow.Timestamp(-1), true, false) },
			func() error { return b.AppendBinary([]byte{0, 1, 254}) },
			func() error { return b.AppendFloat32(0.1) },
			func() error { return b.AppendFloat64(1e21) },
			func() error { return b.AppendFloat64(100) },
			func() error { return b.AppendDecimal4(3, 12300) },
			func() error { return b.AppendInt(-9223372036854775808) },
			func() error { return b.AppendString("q\"\n\u00e9") },
			func() error { return b.AppendNull() },
			func() error { return b.AppendBool(false) },
		} {
			offs = append(offs, b.NextElement(start))
			if err := add(); err != nil {
				return err
			}
		}
		return b.FinishArray(start, offs)
	}
	ts := arrow.Timestamp(-1) // 1969-12-31T23:59:59.999999999
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, []map[string]any{
			{"id": int64(1), "doc": mustVariant(t, []string{"zzz", "b"}, obj), "shape": point(1, 2), "mercator": point(3, 4), "place": point(5, 6),
				"local_ns": ts, "utc_ns": arrow.Timestamp(1_700_000_000_123456789), "note": "one"},
			{"id": int64(2), "doc": mustVariant(t, nil, scalars), "local_ns": arrow.Timestamp(1_500_000_001), "note": "two"},
			{"id": int64(3), "doc": parseVariant(t, `{"big":123456789012345678901234567890,"dec":-0.50,"list":[1,[],{}]}`), "note": "three"},
			{"id": int64(4), "doc": parseVariant(t, `null`), "note": "four"},
		})
	})
	f.do("update note", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, iceberg.EqualTo(iceberg.Reference("id"), int64(1)), func(r map[string]any) map[string]any {
			// the same object, built with another dictionary
			r["doc"], r["note"] = mustVariant(t, []string{"a"}, obj), "uno"
			return r
		})
	})
	f.do("update doc", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, iceberg.EqualTo(iceberg.Reference("id"), int64(3)), func(r map[string]any) map[string]any {
			r["doc"] = parseVariant(t, `{"dec":2}`)
			return r
		})
	})
	src := f.open()
	snaps, err := src.Snapshots(f.ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	inline := &debezium.JSON{VariantHandling: debezium.VariantJSON}
	var dbz, dbzInline, connect string
	for _, si := range snaps {
		c, err := src.Commit(f.ctx, si)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Materialize(f.ctx); err != nil {
			t.Fatal(err)
		}
		if err := replay.CheckArrowPaths(c); err != nil {
			t.Fatalf("snapshot %d: %v", si.SequenceNumber, err)
		}
		for _, mode := range []debezium.TimePrecisionMode{debezium.TimeAdaptive, debezium.TimeConnect, debezium.TimeISOString} {
			enc, err := debezium.NewConnectJSON(debezium.Envelope{}, debezium.ConnectOptions{TimePrecision: mode})
			if err != nil {
				t.Fatal(err)
			}
			for i := range c.Events {
				b, err := enc.AppendValue(nil, c, &c.Events[i], 0)
				if err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				connect += string(mode) + " " + string(b) + "\n"
			}
		}
		for i := range c.Events {
			b, err := (&debezium.JSON{}).AppendValue(nil, c, &c.Events[i], 0)
			if err != nil {
				t.Fatal(err)
			}
			dbz += string(b) + "\n"
			if b, err = inline.AppendValue(nil, c, &c.Events[i], 0); err != nil {
				t.Fatal(err)
			}
			dbzInline += string(b) + "\n"
		}
	}
	t.Log(dbz)
	for _, want := range []string{
		`"doc":"{\"a\":\"x\",\"b\":2}"`,
		`"doc":"[\"1969-12-31\",\"1970-01-01 00:00:01.5+00:00\",\"1969-12-31 23:59:59.999999\",\"AAH+\",0.1,1.0E21,100.0,12.3,-9223372036854775808,\"q\\\"\\né\",null,false]"`,
		`"doc":"{\"big\":123456789012345678901234567890,\"dec\":-0.5,\"list\":[1,[],{}]}"`,
		`"doc":"null"`,
		`"shape":{"wkb":"AQEAAAAAAAAAAAABQAAAAAAAAAJA","srid":4326}`,
		`"place":{"wkb":`, `"srid":null}`,
		`"local_ns":"1969-12-31T23:59:59.999999999"`, `"utc_ns":"2023-11-14T22:13:20.123456789Z"`,
		`"changed_fields":["note"]`, `"changed_fields":["doc"]`,
	} {
		if !strings.Contains(dbz, want) {
			t.Errorf("debezium-json: no %s", want)
		}
	}
	for _, want := range []string{`"doc":{"a":"x","b":2}`, `"doc":null,`, `"doc":{"dec":2}`} {
		if !strings.Contains(dbzInline, want) {
			t.Errorf("debezium-json, variant.handling.mode json: no %s", want)
		}
	}
	for _, want := range []string{
		`{"type":"string","optional":true,"name":"io.debezium.data.Json","version":1,"field":"doc"}`,
		`"name":"io.debezium.data.geometry.Geometry","version":1,"field":"shape"}`,
		`"name":"io.debezium.data.geometry.Geography","version":1,"parameters":{"crs":"IGNF:LAMB93"},"field":"place"}`,
		`"mercator":{"wkb":"AQEAAAAAAAAAAAADQAAAAAAAAARA","srid":3857}`,
		`adaptive {"schema"`, `"name":"io.debezium.time.NanoTimestamp","version":1,"field":"local_ns"}`, `"local_ns":-1,`, `"local_ns":1500000001,`,
		`"utc_ns":"2023-11-14T22:13:20.123456789Z"`,
		`"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"local_ns"}`,
		`"name":"io.debezium.time.IsoTimestamp","version":1,"field":"local_ns"}`, `"local_ns":"1969-12-31T23:59:59.999999999"`,
	} {
		if !strings.Contains(connect, want) {
			t.Errorf("debezium-connect-json: no %s", want)
		}
	}
	// The replay contract at every snapshot, and --net over every range
	// of snapshots (keys: the identifier id).
	if n, err := replay.CheckNet(f.ctx, f.check(), f.tbl); err != nil || n == 0 {
		t.Fatalf("net: %d ranges, %v", n, err)
	}
	// connect mode: -1 ns is the millisecond before the epoch; the row
	// of 1.5 s has 1500 ms.
	n := 0
	for _, line := range strings.Split(connect, "\n") {
		if !strings.HasPrefix(line, "connect ") || !strings.Contains(line, `"op":"c"`) {
			continue
		}
		for note, want := range map[string]string{"one": `"local_ns":-1,"utc_ns":"2023-11-14T22:13:20.123456789Z"`, "two": `"local_ns":1500,`} {
			if strings.Contains(line, `"note":"`+note+`"`) {
				n++
				if !strings.Contains(line, want) {
					t.Errorf("connect mode, row %s: no %s in %s", note, want, line)
				}
			}
		}
	}
	if n != 2 {
		t.Errorf("connect mode: %d rows checked, want 2", n)
	}
	// A nanosecond timestamp as the key, in both formats.
	f.keys = []string{"local_ns", "id"}
	ks := f.open()
	c, err := ks.Commit(f.ctx, snaps[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Materialize(f.ctx); err != nil {
		t.Fatal(err)
	}
	key, err := (&debezium.JSON{}).AppendKey(nil, c, &c.Events[0])
	if err != nil || string(key) != `{"local_ns":"1969-12-31T23:59:59.999999999","id":1}` {
		t.Errorf("debezium-json key %s, %v", key, err)
	}
	enc, err := debezium.NewConnectJSON(debezium.Envelope{}, debezium.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key, err = enc.AppendKey(nil, c, &c.Events[0])
	if err != nil || !strings.Contains(string(key), `"name":"io.debezium.time.NanoTimestamp"`) || !strings.HasSuffix(string(key), `"payload":{"local_ns":-1,"id":1}}`) {
		t.Errorf("debezium-connect-json key %s, %v", key, err)
	}
}

// TestInitialDefaults: a column added with a default after rows were
// written and some deleted by a vector shows the default in both images
// of an old row that is updated or deleted, also for a field added with
// a default inside a struct.
func TestInitialDefaults(t *testing.T) {
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 4, Name: "city", Type: iceberg.PrimitiveTypes.String}}}},
	)
	f := newFixture(t, 3, nil, sc)
	var rows []map[string]any
	for i := range 5 {
		rows = append(rows, map[string]any{"id": int64(i), "status": "new", "addr": map[string]any{"city": "x"}})
	}
	f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Append(ctx, tb, rows)
	})
	f.do("delete", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, iceberg.EqualTo(iceberg.Reference("id"), int64(0)))
	})
	f.do("add columns", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		tx := tb.NewTransaction()
		us := tx.UpdateSchema(true, false)
		us.AddColumn([]string{"prio"}, iceberg.PrimitiveTypes.Int32, "", false, iceberg.Int32Literal(7))
		us.AddColumn([]string{"addr", "zone"}, iceberg.PrimitiveTypes.String, "", false, iceberg.StringLiteral("z1"))
		if err := us.Commit(); err != nil {
			return nil, err
		}
		return tx.Commit(ctx)
	})
	f.do("update", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Update(ctx, tb, iceberg.EqualTo(iceberg.Reference("id"), int64(1)), func(r map[string]any) map[string]any {
			r["status"] = "paid"
			return r
		})
	})
	f.do("delete old", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
		return scenario.Delete(ctx, tb, iceberg.EqualTo(iceberg.Reference("id"), int64(2)))
	})
	src := f.open()
	snaps, err := src.Snapshots(f.ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var all string
	for _, si := range snaps {
		c, err := src.Commit(f.ctx, si)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Materialize(f.ctx); err != nil {
			t.Fatal(err)
		}
		for i := range c.Events {
			b, err := (&debezium.JSON{}).AppendValue(nil, c, &c.Events[i], 0)
			if err != nil {
				t.Fatal(err)
			}
			all += string(b) + "\n"
		}
	}
	t.Log(all)
	for _, want := range []string{
		`"before":{"id":1,"status":"new","addr":{"city":"x","zone":"z1"},"prio":7},"after":{"id":1,"status":"paid","addr":{"city":"x","zone":"z1"},"prio":7}`,
		`"changed_fields":["status"]`,
		`"before":{"id":2,"status":"new","addr":{"city":"x","zone":"z1"},"prio":7},"after":null`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s", want)
		}
	}
	if n, err := replay.CheckNet(f.ctx, f.check(), f.tbl); err != nil || n == 0 {
		t.Fatalf("net: %d ranges, %v", n, err)
	}
}

// TestVariantMalformed: a data file whose variant bytes are truncated or
// point out of range stops the read with one line naming the file, the
// column and the row position; no panic.
func TestVariantMalformed(t *testing.T) {
	good, err := variant.ParseJSON(`{"key":[1,"two"]}`, false)
	if err != nil {
		t.Fatal(err)
	}
	meta, val := good.Metadata().Bytes(), good.Bytes()
	for name, raw := range map[string]scenario.RawVariant{
		"truncated metadata":       {Metadata: meta[:len(meta)-2], Value: val},
		"truncated value":          {Metadata: meta, Value: val[:len(val)-3]},
		"field id past dictionary": {Metadata: variant.EmptyMetadataBytes[:], Value: val},
	} {
		t.Run(name, func(t *testing.T) {
			sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
				iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
				iceberg.NestedField{ID: 2, Name: "doc", Type: iceberg.VariantType{}})
			f := newFixture(t, 3, nil, sc)
			f.do("append", func(ctx context.Context, tb *table.Table) (*table.Table, error) {
				return scenario.Append(ctx, tb, []map[string]any{{"id": int64(1), "doc": good}, {"id": int64(2), "doc": raw}})
			})
			src := f.open()
			snaps, err := src.Snapshots(f.ctx, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			c, err := src.Commit(f.ctx, snaps[0])
			if err == nil {
				err = c.Materialize(f.ctx)
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, ".parquet") || !strings.Contains(msg, "column doc") || !strings.Contains(msg, "position 1") || strings.Contains(msg, "\n") {
				t.Errorf("error %q does not name the file, the column and the position on one line", msg)
			}
		})
	}
}
