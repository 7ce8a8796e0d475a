package debezium

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

func TestDebeziumJSONKey(t *testing.T) {
	row := fullRow()
	other := fullRow()
	other[colID] = int64(99)
	other[colAddress] = nil

	cases := []struct {
		name  string
		keys  []string
		event cdc.Event
		want  string
	}{
		{"no key fields", nil, cdc.Event{Op: cdc.OpCreate, RowID: 1000, After: row}, `{"_row_id":1000}`},
		{"no key fields, delete", nil, cdc.Event{Op: cdc.OpDelete, RowID: -1, Before: row}, `{"_row_id":-1}`},
		{"one field", []string{"id"}, cdc.Event{Op: cdc.OpCreate, RowID: 1, After: row}, `{"id":42}`},
		{"snapshot read", []string{"id"}, cdc.Event{Op: cdc.OpSnapshot, RowID: 1, After: row}, `{"id":42}`},
		{"update keys from after", []string{"id"}, cdc.Event{Op: cdc.OpUpdate, RowID: 1, Before: other, After: row},
			`{"id":42}`},
		{"delete keys from before", []string{"id"}, cdc.Event{Op: cdc.OpDelete, RowID: 1, Before: other}, `{"id":99}`},
		{"several fields in key order", []string{"name", "id", "price"}, cdc.Event{Op: cdc.OpCreate, After: row},
			`{"name":"Zoë \"quoted\"\n\ttab \u2028 <&>","id":42,"price":"123.45"}`},
		{"nested field", []string{"address.city", "id"}, cdc.Event{Op: cdc.OpCreate, After: row},
			`{"address.city":"Springfield","id":42}`},
		{"deeply nested field", []string{"address.geo.lat"}, cdc.Event{Op: cdc.OpCreate, After: row},
			`{"address.geo.lat":44.0462}`},
		{"field under a null struct", []string{"address.city"}, cdc.Event{Op: cdc.OpDelete, Before: other},
			`{"address.city":null}`},
		{"typed key values", []string{"uid", "day", "utc_ts"}, cdc.Event{Op: cdc.OpCreate, After: row},
			`{"uid":"123e4567-e89b-12d3-a456-426614174000","day":"2024-06-02","utc_ts":"2024-06-02T12:34:56.000001Z"}`},
	}
	f := &JSON{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goldenCommit(false)
			c.Table.KeyFields = tc.keys
			got, err := f.AppendKey([]byte("k="), c, &tc.event)
			if err != nil {
				t.Fatal(err)
			}
			if want := "k=" + tc.want; string(got) != want {
				t.Errorf("got  %s\nwant %s", got, want)
			}
			if !json.Valid(got[2:]) {
				t.Errorf("invalid JSON: %s", got)
			}
		})
	}
}

func TestDebeziumJSONKeyErrors(t *testing.T) {
	badRow := fullRow()
	badRow[colID] = "42"
	shortStruct := fullRow()
	shortStruct[colAddress] = values.Row{}

	cases := []struct {
		name  string
		keys  []string
		event cdc.Event
		want  string
	}{
		{"unknown field", []string{"nope"}, cdc.Event{Op: cdc.OpCreate, After: fullRow()}, `key field "nope": not in the schema`},
		{"field in a list", []string{"items.sku"}, cdc.Event{Op: cdc.OpCreate, After: fullRow()},
			`key field "items.sku": not a top-level or struct field`},
		{"no row image", []string{"id"}, cdc.Event{Op: cdc.OpCreate, Before: fullRow()}, `no row image for op c`},
		{"delete without before", []string{"id"}, cdc.Event{Op: cdc.OpDelete, After: fullRow()}, `no row image for op d`},
		{"wrong value type", []string{"id"}, cdc.Event{Op: cdc.OpCreate, After: badRow},
			`field "id": want int64 for long, got string`},
		{"short struct", []string{"address.city"}, cdc.Event{Op: cdc.OpCreate, After: shortStruct},
			`field "address.city": want at least 2 values for struct, got 0`},
		{"not a struct", []string{"address.city"}, cdc.Event{Op: cdc.OpCreate, After: func() values.Row {
			r := fullRow()
			r[colAddress] = "x"
			return r
		}()}, `field "address.city": want values.Row for struct, got string`},
	}
	f := &JSON{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goldenCommit(false)
			c.Table.KeyFields = tc.keys
			got, err := f.AppendKey([]byte("kept"), c, &tc.event)
			if err == nil {
				t.Fatalf("no error; encoded %s", got)
			}
			if !strings.HasPrefix(err.Error(), "encode key of event 9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55:7:") ||
				!strings.HasSuffix(err.Error(), tc.want) {
				t.Errorf("error %q, want it to name the event and end in %q", err, tc.want)
			}
			if string(got) != "kept" {
				t.Errorf("dst = %q after an error, want it unchanged", got)
			}
		})
	}
}

func TestDebeziumJSONValueErrors(t *testing.T) {
	bad := fullRow()
	bad[colAmount] = "12.5"
	cases := []struct {
		name   string
		commit func(*cdc.Commit)
		event  cdc.Event
		want   string
	}{
		{"after value", nil, cdc.Event{Op: cdc.OpCreate, RowID: 5, After: bad},
			`encode event 9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55:7:5:c: after: field "amount": want float64 for double, got string`},
		{"before value", nil, cdc.Event{Op: cdc.OpDelete, RowID: 6, Before: bad},
			`encode event 9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55:7:6:d: before: field "amount": want float64 for double, got string`},
		{"row length", nil, cdc.Event{Op: cdc.OpCreate, RowID: 7, After: values.Row{int64(1)}},
			`encode event 9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55:7:7:c: after: row: want 24 values for struct, got 1`},
		{"unknown op", nil, cdc.Event{Op: 'x', RowID: 8, After: fullRow()},
			`encode event 9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55:7:8:x: unknown op 'x'`},
		{"no schema", func(c *cdc.Commit) { c.Table.Schema = nil }, cdc.Event{Op: cdc.OpCreate, RowID: 9, After: fullRow()},
			`encode event 9c12f7a5-6d4b-4c6e-8a43-2f1e0d9b7c55:7:9:c: no schema`},
	}
	f := &JSON{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goldenCommit(true)
			if tc.commit != nil {
				tc.commit(c)
			}
			got, err := f.AppendValue([]byte("kept"), c, &tc.event, 0)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v, want %s", err, tc.want)
			}
			if string(got) != "kept" {
				t.Errorf("dst = %q after an error, want it unchanged", got)
			}
		})
	}
	_, err := f.AppendValue(nil, goldenCommit(true), &cdc.Event{Op: cdc.OpCreate, After: bad}, 0)
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Field != "amount" || ve.Type != "double" || ve.Got != "string" {
		t.Errorf("errors.As(%v) = %+v, want the ValueError of field amount", err, ve)
	}
}

// TestDebeziumJSONEnvelopeStrings checks that envelope strings are escaped
// and the snapshot marker passed through.
func TestDebeziumJSONEnvelopeStrings(t *testing.T) {
	c := goldenCommit(false)
	c.Table.Namespace = "we\"ird\nns"
	c.Table.UUID = "u\\id"
	f := &JSON{Envelope: Envelope{Pipeline: "p\x00", Version: "v"}}
	got, err := f.AppendValue(nil, c, &cdc.Event{Op: cdc.OpSnapshot, After: fullRow(), Snapshot: cdc.SnapshotLast}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Source struct {
			Name, Snapshot, Schema string
			TableUUID              string `json:"table_uuid"`
		}
		Transaction struct{ ID string }
	}
	if err := json.Unmarshal(got, &env); err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	if env.Source.Name != "p\x00" || env.Source.Snapshot != "last" || env.Source.Schema != "we\"ird\nns" ||
		env.Source.TableUUID != "u\\id" || env.Transaction.ID != "u\\id:7" {
		t.Errorf("decoded %+v from %s", env, got)
	}
}
