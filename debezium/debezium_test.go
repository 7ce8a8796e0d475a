package debezium

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// updateGolden rewrites the golden files of the package's tests instead of
// comparing with them: go test ./cdc -run Golden -update.
var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden")

// allTypesSchema has a field of every Iceberg primitive type, nested
// structs, lists and maps with string and non-string keys.
func allTypesSchema() *iceberg.Schema {
	opt := func(id int, name string, t iceberg.Type) iceberg.NestedField {
		return iceberg.NestedField{ID: id, Name: name, Type: t}
	}
	return iceberg.NewSchemaWithIdentifiers(1, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		opt(2, "flag", iceberg.PrimitiveTypes.Bool),
		opt(3, "small", iceberg.PrimitiveTypes.Int32),
		opt(4, "big", iceberg.PrimitiveTypes.Int64),
		opt(5, "ratio", iceberg.PrimitiveTypes.Float32),
		opt(6, "amount", iceberg.PrimitiveTypes.Float64),
		opt(7, "price", iceberg.DecimalTypeOf(9, 2)),
		opt(8, "balance", iceberg.DecimalTypeOf(38, 10)),
		opt(9, "day", iceberg.PrimitiveTypes.Date),
		opt(10, "clock", iceberg.PrimitiveTypes.Time),
		opt(11, "local_ts", iceberg.PrimitiveTypes.Timestamp),
		opt(12, "utc_ts", iceberg.PrimitiveTypes.TimestampTz),
		opt(13, "local_ts_ns", iceberg.PrimitiveTypes.TimestampNs),
		opt(14, "utc_ts_ns", iceberg.PrimitiveTypes.TimestampTzNs),
		opt(15, "name", iceberg.PrimitiveTypes.String),
		opt(16, "uid", iceberg.PrimitiveTypes.UUID),
		opt(17, "code", iceberg.FixedTypeOf(4)),
		opt(18, "blob", iceberg.PrimitiveTypes.Binary),
		opt(19, "address", &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 30, Name: "street", Type: iceberg.PrimitiveTypes.String},
			{ID: 31, Name: "city", Type: iceberg.PrimitiveTypes.String, Required: true},
			{ID: 32, Name: "geo", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 33, Name: "lat", Type: iceberg.PrimitiveTypes.Float64},
				{ID: 34, Name: "lon", Type: iceberg.PrimitiveTypes.Float64},
			}}},
		}}),
		opt(20, "tags", &iceberg.ListType{ElementID: 35, Element: iceberg.PrimitiveTypes.String}),
		opt(21, "items", &iceberg.ListType{ElementID: 36, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 37, Name: "sku", Type: iceberg.PrimitiveTypes.String, Required: true},
			{ID: 38, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		}}, ElementRequired: true}),
		opt(22, "attrs", &iceberg.MapType{KeyID: 39, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 40, ValueType: iceberg.PrimitiveTypes.Int64}),
		opt(23, "scores", &iceberg.MapType{KeyID: 41, KeyType: iceberg.PrimitiveTypes.Int32,
			ValueID: 42, ValueType: iceberg.PrimitiveTypes.Float64}),
		opt(24, "by_day", &iceberg.MapType{KeyID: 43, KeyType: iceberg.PrimitiveTypes.Date,
			ValueID: 44, ValueType: &iceberg.ListType{ElementID: 45, Element: iceberg.PrimitiveTypes.String}}),
	)
}

// Indexes into allTypesSchema rows.
const (
	colID = iota
	colFlag
	colSmall
	colBig
	colRatio
	colAmount
	colPrice
	colBalance
	colDay
	colClock
	colLocalTS
	colUTCTS
	colLocalTSNs
	colUTCTSNs
	colName
	colUID
	colCode
	colBlob
	colAddress
	colTags
	colItems
	colAttrs
	colScores
	colByDay
	numAllTypesCols
)

// fullRow sets every field, with values that exercise each encoding.
func fullRow() values.Row {
	return values.Row{
		int64(42),
		true,
		int32(-7),
		int64(math.MaxInt64),
		float32(0.1),
		1234.5,
		values.Decimal{Unscaled: "12345", Scale: 2},
		values.Decimal{Unscaled: "-12345678901234567890123456789012345678", Scale: 10},
		values.Date(19_876),                       // 2024-06-02
		values.Time(45_296_789_012),               // 12:34:56.789012
		values.Timestamp(1_717_331_696_789_012),   // 2024-06-02T12:34:56.789012
		values.TimestampTZ(1_717_331_696_000_001), // 2024-06-02T12:34:56.000001Z
		values.TimestampNano(1_717_331_696_123_456_789),
		values.TimestampTZNano(-1), // 1969-12-31T23:59:59.999999999Z
		"Zoë \"quoted\"\n\ttab \u2028 <&>",
		values.UUID{0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00},
		[]byte{0xde, 0xad, 0xbe, 0xef},
		[]byte("hello\x00"),
		values.Row{"1 Main St", "Springfield", values.Row{44.0462, -123.0220}},
		[]any{"a", nil, "c"},
		[]any{values.Row{"SKU-1", int32(2)}, values.Row{"SKU-2", nil}},
		[]values.MapEntry{{Key: "x", Value: int64(1)}, {Key: "y\"", Value: nil}},
		[]values.MapEntry{{Key: int32(1), Value: 0.5}, {Key: int32(-2), Value: math.Inf(-1)}},
		[]values.MapEntry{{Key: values.Date(-1), Value: []any{"eve"}}, {Key: values.Date(0), Value: []any{}}},
	}
}

// sparseRow has nulls wherever the schema allows them, and empty
// collections.
func sparseRow() values.Row {
	r := make(values.Row, numAllTypesCols)
	r[colID] = int64(43)
	r[colAddress] = values.Row{nil, "Shelbyville", nil}
	r[colTags] = []any{}
	r[colItems] = []any{}
	r[colAttrs] = []values.MapEntry{}
	r[colScores] = []values.MapEntry{}
	return r
}

// pastRow has pre-1970 and boundary values.
func pastRow() values.Row {
	r := fullRow()
	r[colID] = int64(44)
	r[colFlag] = false
	r[colBig] = int64(math.MinInt64)
	r[colRatio] = float32(math.NaN())
	r[colAmount] = -0.000001
	r[colPrice] = values.Decimal{Unscaled: "-5", Scale: 2}
	r[colBalance] = values.Decimal{Unscaled: "0", Scale: 10}
	r[colDay] = values.Date(-25_567)                          // 1900-01-01
	r[colClock] = values.Time(0)                              // midnight
	r[colLocalTS] = values.Timestamp(-1)                      // 1969-12-31T23:59:59.999999
	r[colUTCTS] = values.TimestampTZ(-62_135_596_800_000_000) // 0001-01-01T00:00:00Z
	r[colLocalTSNs] = values.TimestampNano(math.MinInt64)
	r[colUTCTSNs] = values.TimestampTZNano(0)
	r[colName] = "bad utf-8: \xff\xfe, control: \x01\x1f\x7f"
	r[colBlob] = []byte{}
	return r
}

func goldenCommit(keyed bool) *cdc.Commit {
	t := cdc.TableInfo{
		Catalog:   "local",
		Namespace: "shop",
		Name:      "orders",
		UUID:      "9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55",
		Schema:    allTypesSchema(),
	}
	if keyed {
		t.KeyFields = []string{"id"}
	}
	return &cdc.Commit{
		Table: t,
		Snapshot: cdc.SnapshotInfo{
			ID:             3_051_729_675_574_597_004,
			ParentID:       1_111_111_111_111_111_111,
			SequenceNumber: 7,
			TimestampMs:    1_717_331_700_000,
			Operation:      "overwrite",
			HasLineage:     true,
		},
	}
}

func TestDebeziumJSONGolden(t *testing.T) {
	updated := fullRow()
	updated[colName] = "renamed"
	updated[colAmount] = 99.0
	updated[colAddress] = values.Row{"2 Side St", "Springfield", nil}

	cases := []struct {
		name   string
		keyed  bool
		marker cdc.SnapshotMarker
		event  cdc.Event
	}{
		{"create", true, cdc.SnapshotNone, cdc.Event{Op: cdc.OpCreate, RowID: 1000, LUSN: 7, After: fullRow(), Index: 3}},
		{"update", true, cdc.SnapshotNone, cdc.Event{Op: cdc.OpUpdate, RowID: 12, LUSN: 7, Before: fullRow(), After: updated, Index: 1}},
		{"update_paired", true, cdc.SnapshotNone, cdc.Event{Op: cdc.OpUpdate, RowID: 13, LUSN: 7, Before: sparseRow(), After: fullRow(),
			Index: 2, Source: "equality-delete", PairedRowID: 9}},
		{"delete", true, cdc.SnapshotNone, cdc.Event{Op: cdc.OpDelete, RowID: 11, LUSN: 5, Before: sparseRow(), Index: 0}},
		{"read", false, cdc.SnapshotRead, cdc.Event{Op: cdc.OpSnapshot, RowID: 0, LUSN: 1, After: pastRow(), Index: 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goldenCommit(tc.keyed)
			tc.event.Snapshot = tc.marker
			c.Events = []cdc.Event{tc.event}
			f := &JSON{Envelope: Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}}
			key, err := f.AppendKey(nil, c, &c.Events[0])
			if err != nil {
				t.Fatal(err)
			}
			value, err := f.AppendValue(nil, c, &c.Events[0], 1_717_331_701_234)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range [][]byte{key, value} {
				if !json.Valid(line) {
					t.Fatalf("invalid JSON: %s", line)
				}
				if bytes.ContainsAny(line, "\n\r") {
					t.Fatalf("not one line: %q", line)
				}
			}
			got := append(append(append(key, '\n'), value...), '\n')
			checkGolden(t, "debezium_"+tc.name+".golden", got)
			checkEnvelope(t, c, &c.Events[0], value)
		})
	}
}

// checkEnvelope decodes value with encoding/json and compares a few fields
// with the event, so that the golden files are not the only judge.
func checkEnvelope(t *testing.T, c *cdc.Commit, e *cdc.Event, value []byte) {
	t.Helper()
	var env struct {
		Before map[string]json.RawMessage
		After  map[string]json.RawMessage
		Op     string
		TsMs   int64 `json:"ts_ms"`
		Source struct {
			Connector      string
			Name           string
			Snapshot       string
			Table          string
			TableUUID      string `json:"table_uuid"`
			SnapshotID     int64  `json:"snapshot_id"`
			SequenceNumber int64  `json:"sequence_number"`
			RowID          int64  `json:"row_id"`
			LUSN           int64  `json:"last_updated_sequence_number"`
			EventIndex     int    `json:"event_index"`
			Paired         *string
			PairedRowID    int64 `json:"paired_row_id"`
		}
		Transaction struct {
			ID         string
			TotalOrder int `json:"total_order"`
		}
	}
	if err := json.Unmarshal(value, &env); err != nil {
		t.Fatalf("decode %s: %v", value, err)
	}
	top, source := objectKeys(t, value, ""), objectKeys(t, value, "source")
	want := "before after op ts_ms source transaction"
	if e.Op == cdc.OpUpdate {
		want = "before after op changed_fields ts_ms source transaction"
	}
	if strings.Join(top, " ") != want {
		t.Errorf("envelope keys %q, want %q", top, want)
	}
	wantSource := "version connector name ts_ms snapshot db schema table table_uuid snapshot_id " +
		"sequence_number operation row_id last_updated_sequence_number event_index"
	if e.Source != "" {
		wantSource += " paired paired_row_id"
	}
	if strings.Join(source, " ") != wantSource {
		t.Errorf("source keys %q, want %q", source, wantSource)
	}
	if env.Op != e.Op.String() || env.Source.Connector != "icecdc" || env.Source.Table != c.Table.Name ||
		env.Source.SnapshotID != c.Snapshot.ID || env.Source.SequenceNumber != c.Snapshot.SequenceNumber ||
		env.Source.RowID != e.RowID || env.Source.LUSN != e.LUSN || env.Source.EventIndex != e.Index ||
		env.Transaction.ID != c.Table.UUID+":7" || env.Transaction.TotalOrder != e.Index+1 {
		t.Errorf("decoded envelope does not match the event: %+v", env)
	}
	if (env.Source.Paired != nil) != (e.Source != "") || env.Source.PairedRowID != e.PairedRowID {
		t.Errorf("paired = %v, %d; event source %q, %d", env.Source.Paired, env.Source.PairedRowID,
			e.Source, e.PairedRowID)
	}
	if (env.Before == nil) != (e.Before == nil) || (env.After == nil) != (e.After == nil) {
		t.Errorf("before/after presence differs from the event")
	}
	img := env.After
	row := e.After
	if img == nil {
		img, row = env.Before, e.Before
	}
	if len(img) != numAllTypesCols {
		t.Fatalf("row image has %d fields, want %d", len(img), numAllTypesCols)
	}
	var id int64
	if err := json.Unmarshal(img["id"], &id); err != nil || id != row[colID].(int64) {
		t.Errorf("id = %s, want %d", img["id"], row[colID])
	}
	if s, ok := row[colName].(string); ok {
		var name string
		// []rune turns each invalid UTF-8 byte into U+FFFD, as the encoder does.
		if err := json.Unmarshal(img["name"], &name); err != nil || name != string([]rune(s)) {
			t.Errorf("name = %s, want %q", img["name"], s)
		}
	}
	if d, ok := row[colBalance].(values.Decimal); ok {
		var s string
		if err := json.Unmarshal(img["balance"], &s); err != nil || !strings.Contains(s, ".") ||
			len(s)-strings.IndexByte(s, '.')-1 != d.Scale {
			t.Errorf("balance = %s, want scale %d", img["balance"], d.Scale)
		}
	}
}

// objectKeys lists, in order, the keys of the top-level object of doc, or of
// its member object named member.
func objectKeys(t *testing.T, doc []byte, member string) []string {
	t.Helper()
	if member != "" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		doc = m[member]
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", doc)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// checkGolden compares got with testdata/name, or rewrites it under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cdc -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (rerun with -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
