package debezium

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

var allConnectModes = func() (out []ConnectOptions) {
	for _, tm := range []TimePrecisionMode{"", TimeAdaptive, TimeAdaptiveMicroseconds, TimeConnect, TimeISOString} {
		for _, dm := range []DecimalHandlingMode{"", DecimalPrecise, DecimalDouble, DecimalString} {
			out = append(out, ConnectOptions{TimePrecision: tm, DecimalHandling: dm})
		}
	}
	return out
}()

func newConnect(t *testing.T, o ConnectOptions) *ConnectJSON {
	t.Helper()
	f, err := NewConnectJSON(Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}, o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// encodeConnect encodes e of c and checks key and value as JsonConverter
// would; it returns the value's schema and payload members.
func encodeConnect(t *testing.T, f *ConnectJSON, c *cdc.Commit, e *cdc.Event) (key, value *connectSchema, keyPayload, payload map[string]json.RawMessage) {
	t.Helper()
	k, err := f.AppendKey(nil, c, e)
	if err != nil {
		t.Fatal(err)
	}
	v, err := f.AppendValue(nil, c, e, 1_717_331_701_234)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(v, '\n') || slices.Contains(k, '\n') {
		t.Fatal("not one line")
	}
	key, kp := decodeConnect(t, k)
	value, vp := decodeConnect(t, v)
	if err := json.Unmarshal(kp, &keyPayload); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(vp, &payload); err != nil {
		t.Fatal(err)
	}
	return key, value, keyPayload, payload
}

// TestConnectEveryTypeEveryMode encodes rows of every Iceberg type, with
// nulls, boundaries and pre-1970 instants, in every mode, for every op,
// and checks each record against Connect's rules, then the values against
// the rows they came from.
func TestConnectEveryTypeEveryMode(t *testing.T) {
	updated := fullRow()
	updated[colName] = "renamed"
	events := []cdc.Event{
		{Op: cdc.OpCreate, RowID: 1000, LUSN: 7, After: fullRow(), Index: 3},
		{Op: cdc.OpUpdate, RowID: 12, LUSN: 7, Before: fullRow(), After: updated, Index: 1},
		{Op: cdc.OpUpdate, RowID: 13, LUSN: 7, Before: sparseRow(), After: pastRow(), Index: 2, Source: "equality-delete", PairedRowID: 9},
		{Op: cdc.OpDelete, RowID: 11, LUSN: 5, Before: sparseRow(), Index: 0},
		{Op: cdc.OpSnapshot, RowID: 0, LUSN: 1, After: pastRow(), Index: 0},
	}
	for _, o := range allConnectModes {
		t.Run(fmt.Sprintf("%s/%s", o.TimePrecision, o.DecimalHandling), func(t *testing.T) {
			f := newConnect(t, o)
			for _, keyed := range []bool{true, false} {
				for i := range events {
					c := goldenCommit(keyed)
					e := &events[i]
					ks, vs, kp, p := encodeConnect(t, f, c, e)
					if vs.Name != "icecdc.shop.orders.Envelope" || vs.Version == nil || *vs.Version != envelopeVersion {
						t.Fatalf("envelope schema name %q version %v", vs.Name, vs.Version)
					}
					if ks.Name != "icecdc.shop.orders.Key" || ks.optional() {
						t.Fatalf("key schema %q optional %v", ks.Name, ks.optional())
					}
					checkKey(t, ks, kp, keyed, e)
					row := vs.field("after")
					if row.Name != "icecdc.shop.orders.Value" || !row.optional() || vs.field("before").Name != row.Name {
						t.Fatalf("row schema %q optional %v", row.Name, row.optional())
					}
					checkRowSchema(t, row, f.Options())
					for _, img := range []struct {
						name string
						row  values.Row
					}{{"before", e.Before}, {"after", e.After}} {
						if img.row == nil {
							if string(p[img.name]) != "null" {
								t.Fatalf("%s: %s, want null", img.name, p[img.name])
							}
							continue
						}
						checkRowValues(t, row, p[img.name], img.row, f.Options())
					}
					checkSourceAndTimes(t, p, c, e)
				}
			}
		})
	}
}

func checkKey(t *testing.T, ks *connectSchema, kp map[string]json.RawMessage, keyed bool, e *cdc.Event) {
	t.Helper()
	want := "_row_id"
	wantVal := fmt.Sprint(e.RowID)
	if keyed {
		want = "id"
		row := e.After
		if e.Op == cdc.OpDelete {
			row = e.Before
		}
		wantVal = fmt.Sprint(row[colID])
	}
	if len(ks.Fields) != 1 || ks.Fields[0].Field != want || ks.Fields[0].Type != "int64" || ks.Fields[0].optional() {
		t.Fatalf("key fields %+v, want required int64 %s", ks.Fields, want)
	}
	if len(kp) != 1 || string(kp[want]) != wantVal {
		t.Fatalf("key payload %v, want %s=%s", kp, want, wantVal)
	}
}

// wantSchema says what Connect schema each column of allTypesSchema gets
// in a mode: its type and logical name.
func wantSchema(o ConnectOptions, col int) (typ, name string) {
	switch col {
	case colID, colBig:
		return "int64", ""
	case colFlag:
		return "boolean", ""
	case colSmall:
		return "int32", ""
	case colRatio:
		return "float", ""
	case colAmount:
		return "double", ""
	case colPrice, colBalance:
		switch o.DecimalHandling {
		case DecimalDouble:
			return "double", ""
		case DecimalString:
			return "string", ""
		}
		return "bytes", connectDecimal
	case colDay:
		switch o.TimePrecision {
		case TimeConnect:
			return "int32", connectDate
		case TimeISOString:
			return "string", dbzIsoDate
		}
		return "int32", dbzDate
	case colClock:
		switch o.TimePrecision {
		case TimeConnect:
			return "int32", connectTime
		case TimeISOString:
			return "string", dbzIsoTime
		}
		return "int64", dbzMicroTime
	case colLocalTS, colLocalTSNs:
		switch o.TimePrecision {
		case TimeConnect:
			return "int64", connectTimestamp
		case TimeISOString:
			return "string", dbzIsoTS
		}
		if col == colLocalTSNs {
			return "int64", dbzNanoTS
		}
		return "int64", dbzMicroTS
	case colUTCTS, colUTCTSNs:
		return "string", dbzZonedTS
	case colName:
		return "string", ""
	case colUID:
		return "string", dbzUUID
	case colCode, colBlob:
		return "bytes", ""
	case colAddress:
		return "struct", ""
	case colTags, colItems:
		return "array", ""
	case colAttrs, colScores, colByDay:
		return "map", ""
	}
	panic(col)
}

func checkRowSchema(t *testing.T, row *connectSchema, o ConnectOptions) {
	t.Helper()
	sc := allTypesSchema()
	if len(row.Fields) != len(sc.Fields()) {
		t.Fatalf("%d fields, want %d", len(row.Fields), len(sc.Fields()))
	}
	for i, f := range sc.Fields() {
		s := row.Fields[i]
		typ, name := wantSchema(o, i)
		if s.Field != f.Name || s.Type != typ || s.Name != name || s.optional() == f.Required {
			t.Errorf("column %s: schema %s %q optional=%v, want %s %q optional=%v", f.Name, s.Type, s.Name, s.optional(), typ, name, !f.Required)
		}
		if name == connectDecimal {
			d := f.Type.(iceberg.DecimalType)
			if s.Parameters["scale"] != fmt.Sprint(d.Scale()) || s.Parameters["connect.decimal.precision"] != fmt.Sprint(d.Precision()) {
				t.Errorf("column %s: parameters %v", f.Name, s.Parameters)
			}
		}
	}
	addr := row.field("address")
	if addr.field("city").optional() || !addr.field("street").optional() || addr.field("geo").Type != "struct" {
		t.Errorf("nested struct schema: %+v", addr)
	}
	if items := row.field("items").Items; items.optional() || items.field("sku").optional() {
		t.Errorf("list of required structs: %+v", items)
	}
	if tags := row.field("tags").Items; !tags.optional() || tags.Type != "string" {
		t.Errorf("list of optional strings: %+v", tags)
	}
	if m := row.field("scores"); m.Keys.Type != "int32" || m.Keys.optional() || m.Values.Type != "double" {
		t.Errorf("map<int, double>: %+v %+v", m.Keys, m.Values)
	}
	bd := row.field("by_day")
	if typ, name := wantSchema(o, colDay); bd.Keys.Type != typ || bd.Keys.Name != name || bd.Values.Type != "array" {
		t.Errorf("map<date, list>: %+v", bd.Keys)
	}
}

// checkRowValues compares each payload member with the row value it
// stands for, decoded the way a Connect consumer of the mode reads it.
func checkRowValues(t *testing.T, schema *connectSchema, raw json.RawMessage, r values.Row, o ConnectOptions) {
	t.Helper()
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	sc := allTypesSchema()
	for i, f := range sc.Fields() {
		got := p[f.Name]
		v := r[i]
		if v == nil {
			if string(got) != "null" {
				t.Errorf("column %s: %s, want null", f.Name, got)
			}
			continue
		}
		var want string
		switch x := v.(type) {
		case values.Decimal:
			plain, err := compileType(f.Type).appendDecimal(nil, x)
			if err != nil {
				t.Fatal(err)
			}
			switch o.withDefaults().DecimalHandling {
			case DecimalPrecise:
				if d := decodeDecimal(t, schema.Fields[i], got); `"`+d+`"` != string(plain) {
					t.Errorf("column %s: decimal %s, want %s", f.Name, d, plain)
				}
				continue
			case DecimalString:
				want = string(plain)
			case DecimalDouble:
				fl, _ := new(big.Float).SetString(strings.Trim(string(plain), `"`))
				d, _ := fl.Float64()
				want = string(appendJSONFloat(nil, d, 64))
			}
		case values.Date:
			want = fmt.Sprint(int32(x))
			if o.TimePrecision == TimeISOString {
				want = string(appendDate(nil, int64(x)))
			}
		case values.Time:
			switch o.TimePrecision {
			case TimeConnect:
				want = fmt.Sprint(int64(x) / 1000)
			case TimeISOString:
				want = string(appendTimeOfDay(nil, int64(x)))
			default:
				want = fmt.Sprint(int64(x))
			}
		case values.Timestamp:
			switch o.TimePrecision {
			case TimeConnect:
				want = fmt.Sprint(int64(math.Floor(float64(x) / 1000)))
			case TimeISOString:
				want = string(appendTimestamp(nil, int64(x), 1e6, 6, false))
			default:
				want = fmt.Sprint(int64(x))
			}
		case values.TimestampNano:
			switch o.TimePrecision {
			case TimeConnect:
				want = new(big.Int).Div(big.NewInt(int64(x)), big.NewInt(1e6)).String() // Euclidean: floor for a positive divisor
			case TimeISOString:
				want = string(appendTimestamp(nil, int64(x), 1e9, 9, false))
			default:
				want = fmt.Sprint(int64(x))
			}
		case values.TimestampTZ, values.TimestampTZNano:
			// ZonedTimestamp in every mode: as debezium-json writes it.
			want = string(mustPlain(t, f.Type, v))
		case []values.MapEntry:
			if f.Name == "scores" {
				var pairs [][]json.RawMessage
				if err := json.Unmarshal(got, &pairs); err != nil || len(pairs) != len(x) {
					t.Errorf("column %s: %s, want %d pairs", f.Name, got, len(x))
				}
				for k := range pairs {
					if string(pairs[k][0]) != fmt.Sprint(x[k].Key) {
						t.Errorf("column %s: key %s, want %v", f.Name, pairs[k][0], x[k].Key)
					}
				}
				continue
			}
			if f.Name == "by_day" {
				// Date keys are strings under isostring: an object then.
				var n int
				if o.TimePrecision == TimeISOString {
					var m map[string]json.RawMessage
					if err := json.Unmarshal(got, &m); err != nil || m["1969-12-31"] == nil {
						t.Errorf("column %s: %s, want an object keyed by ISO dates", f.Name, got)
					}
					n = len(m)
				} else {
					var pairs [][]json.RawMessage
					if err := json.Unmarshal(got, &pairs); err != nil || string(pairs[0][0]) != "-1" {
						t.Errorf("column %s: %s, want pairs keyed by days", f.Name, got)
					}
					n = len(pairs)
				}
				if n != len(x) {
					t.Errorf("column %s: %d entries, want %d", f.Name, n, len(x))
				}
				continue
			}
			want = string(mustPlain(t, f.Type, v))
		case values.Row:
			continue // nested values are checked by the schema walk
		default:
			// Every other type is written as debezium-json writes it.
			want = string(mustPlain(t, f.Type, v))
		}
		if string(got) != want {
			t.Errorf("column %s: %s, want %s", f.Name, got, want)
		}
	}
}

func mustPlain(t *testing.T, typ iceberg.Type, v any) []byte {
	t.Helper()
	b, err := compileType(typ).appendValue(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkSourceAndTimes(t *testing.T, p map[string]json.RawMessage, c *cdc.Commit, e *cdc.Event) {
	t.Helper()
	var env struct {
		Op     string
		TsMs   int64 `json:"ts_ms"`
		TsUs   int64 `json:"ts_us"`
		TsNs   int64 `json:"ts_ns"`
		Source struct {
			TsMs     int64 `json:"ts_ms"`
			TsUs     int64 `json:"ts_us"`
			TsNs     int64 `json:"ts_ns"`
			Sequence string
			Table    string
			RowID    int64   `json:"row_id"`
			Paired   *string `json:"paired"`
			Snapshot string
		}
		Transaction struct {
			ID         string
			TotalOrder int64 `json:"total_order"`
		}
	}
	b, _ := json.Marshal(p)
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	if env.Op != e.Op.String() || env.TsUs != env.TsMs*1000 || env.TsNs != env.TsMs*1_000_000 ||
		env.Source.TsMs != c.Snapshot.TimestampMs || env.Source.TsUs != env.Source.TsMs*1000 || env.Source.TsNs != env.Source.TsMs*1_000_000 {
		t.Errorf("op and times: %+v", env)
	}
	var seq []string
	if err := json.Unmarshal([]byte(env.Source.Sequence), &seq); err != nil || len(seq) != 2 ||
		seq[0] != fmt.Sprint(c.Snapshot.SequenceNumber) || seq[1] != fmt.Sprint(e.Index) {
		t.Errorf("source.sequence %q", env.Source.Sequence)
	}
	if env.Source.RowID != e.RowID || (env.Source.Paired != nil) != (e.Source != "") || env.Source.Snapshot != "false" {
		t.Errorf("source %+v", env.Source)
	}
	if env.Transaction.ID != fmt.Sprintf("%s:%d", c.Table.UUID, c.Snapshot.SequenceNumber) || env.Transaction.TotalOrder != int64(e.Index)+1 {
		t.Errorf("transaction %+v", env.Transaction)
	}
}

// TestConnectSchemaFollowsTheTable checks that every kind of schema
// change gives the events of the new schema a Connect schema of their
// own, with the change in it.
func TestConnectSchemaFollowsTheTable(t *testing.T) {
	base := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "price", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 4, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "city", Type: iceberg.PrimitiveTypes.String},
		}}},
	)
	fields := base.Fields()
	type change struct {
		name   string
		schema *iceberg.Schema
		check  func(row *connectSchema) error
	}
	with := func(id int, fs ...iceberg.NestedField) *iceberg.Schema {
		return iceberg.NewSchemaWithIdentifiers(id, []int{1}, fs...)
	}
	names := func(s *connectSchema) []string {
		var out []string
		for _, f := range s.Fields {
			out = append(out, f.Field)
		}
		return out
	}
	changes := []change{
		{"added", with(1, append(slices.Clone(fields), iceberg.NestedField{ID: 6, Name: "note", Type: iceberg.PrimitiveTypes.String})...),
			func(r *connectSchema) error {
				if f := r.field("note"); f == nil || !f.optional() || f.Type != "string" {
					return errors.New("no optional string note")
				}
				return nil
			}},
		{"renamed", with(2, fields[0], iceberg.NestedField{ID: 2, Name: "title", Type: iceberg.PrimitiveTypes.String}, fields[2], fields[3]),
			func(r *connectSchema) error {
				if r.field("name") != nil || r.field("title") == nil {
					return fmt.Errorf("fields %v", names(r))
				}
				return nil
			}},
		{"dropped", with(3, fields[0], fields[1], fields[3]),
			func(r *connectSchema) error {
				if r.field("price") != nil || len(r.Fields) != 3 {
					return fmt.Errorf("fields %v", names(r))
				}
				return nil
			}},
		{"widened", with(4, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true}, fields[1],
			iceberg.NestedField{ID: 3, Name: "price", Type: iceberg.DecimalTypeOf(12, 2)}, fields[3]),
			func(r *connectSchema) error {
				if r.field("id").Type != "int64" || r.field("price").Parameters["connect.decimal.precision"] != "12" {
					return fmt.Errorf("id %s, price %v", r.field("id").Type, r.field("price").Parameters)
				}
				return nil
			}},
		{"reordered", with(5, fields[0], fields[3], fields[2], fields[1]),
			func(r *connectSchema) error {
				if got := strings.Join(names(r), ","); got != "id,addr,price,name" {
					return fmt.Errorf("fields %s", got)
				}
				return nil
			}},
		{"nested", with(6, fields[0], fields[1], fields[2], iceberg.NestedField{ID: 4, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 5, Name: "city", Type: iceberg.PrimitiveTypes.String}, {ID: 7, Name: "zip", Type: iceberg.PrimitiveTypes.String},
		}}}),
			func(r *connectSchema) error {
				if r.field("addr").field("zip") == nil {
					return errors.New("no addr.zip")
				}
				return nil
			}},
	}
	f := newConnect(t, ConnectOptions{})
	encode := func(sc *iceberg.Schema) (*connectSchema, string) {
		c := goldenCommit(true)
		c.Table.Schema = sc
		r := make(values.Row, len(sc.Fields()))
		for i, fl := range sc.Fields() {
			switch fl.Type.(type) {
			case iceberg.Int32Type:
				r[i] = int32(1)
			case iceberg.Int64Type:
				r[i] = int64(1)
			}
		}
		_, vs, _, _ := encodeConnect(t, f, c, &cdc.Event{Op: cdc.OpCreate, RowID: 1, LUSN: 7, After: r})
		b, _ := json.Marshal(vs.field("after"))
		return vs.field("after"), string(b)
	}
	_, before := encode(base)
	for _, ch := range changes {
		row, after := encode(ch.schema)
		if after == before {
			t.Errorf("%s: the Connect schema did not change", ch.name)
		}
		if err := ch.check(row); err != nil {
			t.Errorf("%s: %v", ch.name, err)
		}
		// Back to the first schema: its own Connect schema again.
		if _, again := encode(base); again != before {
			t.Errorf("%s: the base schema's Connect schema changed", ch.name)
		}
	}
}

// TestConnectRefusesWhatConnectCannotExpress: a column of a type with no
// Connect form fails the table with its name, and a null where Connect
// requires a value fails the event with the field's name; nothing is
// silently dropped.
func TestConnectRefusesWhatConnectCannotExpress(t *testing.T) {
	f := newConnect(t, ConnectOptions{})
	// Variant, geometry and geography have Debezium's forms, nested too.
	t.Run("v3 types nested", func(t *testing.T) {
		c := goldenCommit(false)
		c.Table.Schema = iceberg.NewSchema(1,
			iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.VariantType{}},
			iceberg.NestedField{ID: 2, Name: "s", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 3, Name: "shape", Type: iceberg.GeometryType{}}}}},
			iceberg.NestedField{ID: 4, Name: "l", Type: &iceberg.ListType{ElementID: 5, Element: iceberg.GeographyType{}}})
		e := &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: values.Row{values.VariantJSON(`{"a":[1]}`), values.Row{[]byte{1}}, []any{[]byte{2}, nil}}}
		_, vs, _, p := encodeConnect(t, f, c, e)
		if v := vs.field("after").field("v"); v.Type != "string" || v.Name != dbzJSON {
			t.Fatalf("schema of v %+v", v)
		}
		if sh := vs.field("after").field("s").field("shape"); sh.Type != "struct" || sh.Name != dbzGeometry {
			t.Fatalf("schema of s.shape %+v", sh)
		}
		want := `{"v":"{\"a\":[1]}","s":{"shape":{"wkb":"AQ==","srid":4326}},"l":[{"wkb":"Ag==","srid":4326},null]}`
		if string(p["after"]) != want {
			t.Fatalf("after %s, want %s", p["after"], want)
		}
	})
	t.Run("unknown is an always-null optional string", func(t *testing.T) {
		c := goldenCommit(false)
		c.Table.Schema = iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "u", Type: iceberg.UnknownType{}})
		_, vs, _, p := encodeConnect(t, f, c, &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: values.Row{nil}})
		if u := vs.field("after").field("u"); u.Type != "string" || !u.optional() || u.Name != icecdcUnknown {
			t.Fatalf("schema %+v", u)
		}
		if !strings.Contains(string(p["after"]), `"u":null`) {
			t.Fatalf("after %s", p["after"])
		}
	})
	t.Run("null in a required field", func(t *testing.T) {
		c := goldenCommit(true)
		r := fullRow()
		r[colAddress] = values.Row{"street", nil, nil} // city is required
		_, err := f.AppendValue(nil, c, &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: r}, 0)
		if err == nil || !strings.Contains(err.Error(), `field "address.city"`) {
			t.Fatalf("err = %v", err)
		}
		r = fullRow()
		r[colItems] = []any{nil}
		_, err = f.AppendValue(nil, c, &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: r}, 0)
		if err == nil || !strings.Contains(err.Error(), `field "items[0]"`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a value of the wrong Go type", func(t *testing.T) {
		c := goldenCommit(true)
		r := fullRow()
		r[colDay] = "2024-06-02"
		out, err := f.AppendValue([]byte("keep"), c, &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: r}, 0)
		if err == nil || !strings.Contains(err.Error(), `field "day"`) || string(out) != "keep" {
			t.Fatalf("err = %v, out %q", err, out)
		}
	})
}

func TestConnectOptionsValidate(t *testing.T) {
	for _, o := range []ConnectOptions{{TimePrecision: "micro"}, {DecimalHandling: "exact"}, {Prefix: `a"b`}} {
		if _, err := NewConnectJSON(Envelope{}, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	f := newConnect(t, ConnectOptions{Prefix: "dbz"})
	c := goldenCommit(true)
	ks, vs, _, _ := encodeConnect(t, f, c, &cdc.Event{Op: cdc.OpCreate, RowID: 1, After: fullRow()})
	if ks.Name != "dbz.shop.orders.Key" || vs.Name != "dbz.shop.orders.Envelope" {
		t.Fatalf("names %s %s", ks.Name, vs.Name)
	}
}

func TestConnectSnapshotMarker(t *testing.T) {
	f := newConnect(t, ConnectOptions{})
	c := goldenCommit(false)
	for _, tc := range []struct {
		marker cdc.SnapshotMarker
		want   string
	}{{cdc.SnapshotNone, "false"}, {cdc.SnapshotRead, "true"}, {cdc.SnapshotLast, "last"}} {
		resync := tc.marker == cdc.SnapshotLast
		v, err := f.AppendValue(nil, c, &cdc.Event{Op: cdc.OpSnapshot, RowID: 1, After: fullRow(), Snapshot: tc.marker, Resync: resync}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(v), `"snapshot":"`+tc.want+`"`) {
			t.Fatalf("marker %s missing: %s", tc.want, v)
		}
		if strings.Contains(string(v), `"resync":true`) != resync {
			t.Fatalf("resync with marker %s: %s", tc.want, v)
		}
		decodeConnect(t, v)
	}
	if _, err := f.AppendValue(nil, c, &cdc.Event{Op: cdc.OpSnapshot, RowID: 1, After: fullRow(), Snapshot: cdc.SnapshotLast + 1}, 0); err == nil {
		t.Fatal("an unknown snapshot marker was encoded")
	}
}

// TestUnscaledBytes checks the Decimal bytes against math/big's
// two's-complement arithmetic, at every byte-length boundary.
func TestUnscaledBytes(t *testing.T) {
	vals := []string{"0", "-0", "1", "-1", "127", "128", "-128", "-129", "255", "256", "32767", "-32768", "-32769",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
		"99999999999999999999999999999999999999", "-99999999999999999999999999999999999999", "000123", "-000128"}
	for n := 1; n < 17; n++ {
		p := new(big.Int).Lsh(big.NewInt(1), uint(8*n-1))
		vals = append(vals, p.String(), new(big.Int).Sub(p, big.NewInt(1)).String(), new(big.Int).Neg(p).String(),
			new(big.Int).Sub(new(big.Int).Neg(p), big.NewInt(1)).String())
	}
	for _, v := range vals {
		b := unscaledBytes(v)
		x := new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 {
			x.Sub(x, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		want, _ := new(big.Int).SetString(v, 10)
		if x.Cmp(want) != 0 {
			t.Errorf("%s: % x reads as %s", v, b, x)
		}
		if len(b) > 1 && (b[0] == 0 && b[1]&0x80 == 0 || b[0] == 0xff && b[1]&0x80 != 0) {
			t.Errorf("%s: % x is not minimal", v, b)
		}
	}
}

// appendConnectTimes writes what formatting each product writes,
// including at zero, below it and where the products overflow.
func TestAppendConnectTimes(t *testing.T) {
	for _, ms := range []int64{0, 1, -1, 9, 1_717_331_701_234, -1_717_331_701_234,
		math.MaxInt64 / 1_000_000, math.MaxInt64/1_000_000 + 1, math.MinInt64 / 1_000_000, math.MinInt64, math.MaxInt64} {
		want := `,"ts_ms":` + strconv.FormatInt(ms, 10) + `,"ts_us":` + strconv.FormatInt(ms*1000, 10) +
			`,"ts_ns":` + strconv.FormatInt(ms*1_000_000, 10)
		if got := string(appendConnectTimes([]byte("x"), ms)); got != "x"+want {
			t.Errorf("%d: got %s, want x%s", ms, got, want)
		}
	}
}
