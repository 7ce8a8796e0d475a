// Package replay checks the change contract (docs/contract.md) the way a
// consumer sees it: the debezium-json events of snapshots 1..k, applied to
// a map keyed by _row_id, must reproduce live(S_k), values included, at
// every k. Tests of source and of the command use it.
package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/variant"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/debezium"
	"github.com/icecdc/icecdc/internal/scenario"
	"github.com/icecdc/icecdc/values"
)

// Event is a decoded debezium-json envelope, as a consumer reads it.
type Event struct {
	Op            string         `json:"op"`
	ChangedFields []string       `json:"changed_fields"`
	Before        map[string]any `json:"before"`
	After         map[string]any `json:"after"`
	Source        struct {
		SnapshotID  int64  `json:"snapshot_id"`
		Seq         int64  `json:"sequence_number"`
		RowID       int64  `json:"row_id"`
		LUSN        int64  `json:"last_updated_sequence_number"`
		EventIndex  int    `json:"event_index"`
		Paired      string `json:"paired"`
		PairedRowID int64  `json:"paired_row_id"`
	} `json:"source"`
}

// Encode renders a commit's events as debezium-json lines and decodes them
// back, so the check covers the encoding a consumer receives.
func Encode(c *cdc.Commit) ([]Event, error) {
	enc := &debezium.JSON{Envelope: debezium.Envelope{Pipeline: "test", Version: "test"}}
	var out []Event
	for i := range c.Events {
		b, err := enc.AppendValue(nil, c, &c.Events[i], 0)
		if err != nil {
			return nil, err
		}
		var ev Event
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(&ev); err != nil {
			return nil, fmt.Errorf("event %d: %w: %s", i, err, b)
		}
		out = append(out, ev)
	}
	return out, nil
}

// State is the consumer's view: row id → row values (JSON-normalised).
type State map[int64]map[string]any

// Apply applies one snapshot's events in order and checks each against
// the state it finds: a delete or update must carry the before image the
// state holds, an insert must not find its row id.
func (s State) Apply(evs []Event) error {
	phase := 0
	for i, ev := range evs {
		p := map[string]int{"d": 0, "u": 1, "c": 2}[ev.Op]
		if p < phase {
			return fmt.Errorf("event %d (%s row %d) after a later phase: deletes, updates, inserts must come in that order", i, ev.Op, ev.Source.RowID)
		}
		phase = p
		if ev.Source.EventIndex != i {
			return fmt.Errorf("event %d has event_index %d", i, ev.Source.EventIndex)
		}
		id := ev.Source.RowID
		if ev.Source.Paired != "" {
			// An update paired from an equality delete and an insert: the
			// removed row has the old id, the new row a new one.
			id = ev.Source.PairedRowID
			if _, taken := s[ev.Source.RowID]; taken {
				return fmt.Errorf("event %d: paired update to row %d, which the consumer already has", i, ev.Source.RowID)
			}
		}
		if ev.Op == "u" {
			if err := CheckChangedFields(ev); err != nil {
				return fmt.Errorf("event %d (u row %d): %w", i, ev.Source.RowID, err)
			}
		}
		cur, ok := s[id]
		switch ev.Op {
		case "d", "u":
			if !ok {
				return fmt.Errorf("event %d: %s of row %d, which the consumer does not have", i, ev.Op, id)
			}
			if !sameRow(cur, ev.Before) {
				return fmt.Errorf("event %d: %s of row %d: before %v, consumer has %v", i, ev.Op, id, ev.Before, cur)
			}
			delete(s, id)
			if ev.Op == "u" {
				s[ev.Source.RowID] = ev.After
			}
		case "c":
			if ok {
				return fmt.Errorf("event %d: insert of row %d, which the consumer already has: %v", i, id, cur)
			}
			s[id] = ev.After
		default:
			return fmt.Errorf("event %d: op %q", i, ev.Op)
		}
	}
	return nil
}

// Live reads live(S) through the oracle and normalises values as JSON.
func Live(ctx context.Context, tbl *table.Table, snapshotID int64) (State, error) {
	rows, err := scenario.LiveRows(ctx, tbl, snapshotID)
	if err != nil {
		return nil, err
	}
	var fields []iceberg.NestedField
	if snap := tbl.Metadata().SnapshotByID(snapshotID); snap != nil && snap.SchemaID != nil {
		if sc := schemaByID(tbl, *snap.SchemaID); sc != nil {
			fields = sc.Fields()
		}
	}
	out := State{}
	for id, r := range rows {
		for _, f := range fields {
			if v, ok := r.Values[f.Name]; ok && v != nil {
				if r.Values[f.Name], err = eventForm(v, f.Type); err != nil {
					return nil, fmt.Errorf("row %d: column %s: %w", id, f.Name, err)
				}
			}
		}
		b, err := json.Marshal(r.Values)
		if err != nil {
			return nil, err
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			return nil, err
		}
		out[id] = m
	}
	return out, nil
}

// Diff describes how two states differ, or returns "" when equal.
func Diff(got, want State) string {
	var ids []int64
	for id := range got {
		ids = append(ids, id)
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var b bytes.Buffer
	for _, id := range ids {
		g, gok := got[id]
		w, wok := want[id]
		switch {
		case !gok:
			fmt.Fprintf(&b, "row %d missing from replay (live: %v)\n", id, w)
		case !wok:
			fmt.Fprintf(&b, "row %d in replay but not live: %v\n", id, g)
		case !sameRow(g, w):
			fmt.Fprintf(&b, "row %d: replay %v, live %v\n", id, g, w)
		}
	}
	return b.String()
}

// sameRow compares two row images, a column one of them lacks counting as
// null: after a column is added, images written before it have no such key.
func sameRow(a, b map[string]any) bool {
	for k, v := range a {
		if !sameValue(v, b[k]) {
			return false
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok && v != nil {
			return false
		}
	}
	return true
}

// sameValue is reflect.DeepEqual, except that a json.Number equals a Go
// number of the same text: a default filled in by Project comes as the
// JSON decoding of events gives numbers, while some callers decode their
// rows into Go numbers.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		if _, isNum := b.(json.Number); !isNum && isNumber(b) {
			return x.String() == fmt.Sprint(b)
		}
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			return len(x) == len(y) && sameRow(x, y)
		}
	case []any:
		if y, ok := b.([]any); ok && len(x) == len(y) {
			for i := range x {
				if !sameValue(x[i], y[i]) {
					return false
				}
			}
			return true
		}
	}
	if _, isNum := b.(json.Number); isNum && isNumber(a) {
		return sameValue(b, a)
	}
	return reflect.DeepEqual(a, b)
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return true
	}
	return false
}

// Project rewrites every row from schema from to schema to, matching
// columns by field id, nested struct fields too, as a consumer does when
// the images of the next snapshot's events come in a new schema
// (docs/contract.md: images use the event's snapshot schema): a renamed
// column takes its new name, a dropped one goes, an added one takes its
// initial default (or null).
func (s State) Project(from, to *iceberg.Schema) {
	if from == nil || to == nil || from.ID == to.ID {
		return
	}
	for id, row := range s {
		s[id] = projectStruct(row, from.AsStruct().FieldList, to.AsStruct().FieldList)
	}
}

// projectStruct is Project for one struct value.
func projectStruct(row map[string]any, from, to []iceberg.NestedField) map[string]any {
	out := make(map[string]any, len(to))
	for _, f := range to {
		i := slices.IndexFunc(from, func(o iceberg.NestedField) bool { return o.ID == f.ID })
		if i < 0 {
			out[f.Name] = jsonValue(f.InitialDefault)
			continue
		}
		v, ok := row[from[i].Name]
		if !ok {
			continue
		}
		fs, fok := from[i].Type.(*iceberg.StructType)
		ts, tok := f.Type.(*iceberg.StructType)
		if m, isMap := v.(map[string]any); isMap && fok && tok {
			v = projectStruct(m, fs.FieldList, ts.FieldList)
		}
		out[f.Name] = v
	}
	return out
}

// jsonValue is v as the JSON decoding of events gives it (numbers as
// json.Number).
func jsonValue(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return v
	}
	return out
}

// eventForm is a top-level value as the oracle reads it, in the form
// debezium-json gives the types whose Go value marshals otherwise (the
// v3 types): nanosecond timestamps as text with nine digits, a variant
// as its JSON text, a geometry or geography as {wkb, srid}.
func eventForm(v any, typ iceberg.Type) (any, error) {
	switch t := typ.(type) {
	case iceberg.TimestampNsType:
		if ts, ok := v.(arrow.Timestamp); ok {
			return time.Unix(0, int64(ts)).UTC().Format("2006-01-02T15:04:05.000000000"), nil
		}
	case iceberg.TimestampTzNsType:
		if ts, ok := v.(arrow.Timestamp); ok {
			return time.Unix(0, int64(ts)).UTC().Format("2006-01-02T15:04:05.000000000Z"), nil
		}
	case iceberg.VariantType:
		if x, ok := v.(variant.Value); ok {
			b, err := values.AppendVariantJSON(nil, x)
			return string(b), err
		}
	case iceberg.GeometryType:
		return geoForm(v, t.CRS())
	case iceberg.GeographyType:
		return geoForm(v, t.CRS())
	}
	return v, nil
}

func geoForm(v any, crs string) (any, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("geometry value %T, want []byte", v)
	}
	var srid any
	var n int
	switch _, err := fmt.Sscanf(strings.ToLower(crs), "srid:%d", &n); {
	case crs == iceberg.DefaultGeoCRS:
		srid = 4326
	case err == nil:
		srid = n
	default:
		if _, err := fmt.Sscanf(strings.ToLower(crs), "epsg:%d", &n); err == nil {
			srid = n
		}
	}
	return map[string]any{"wkb": b, "srid": srid}, nil
}
