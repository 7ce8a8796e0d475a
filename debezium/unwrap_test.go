package debezium

import (
	"fmt"
	"strings"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/unwraptest"
)

// unwrapFieldSets are the add.fields (and add.headers) the tests take:
// none, the usual ones, and every kind of reference (a transaction field,
// a bare source field, a top-level one, renames, fields null or absent in
// the envelope).
var unwrapFieldSets = [][]string{
	nil,
	{"op", "table", "source.ts_ms"},
	{"ts_ms:processed", "transaction.id", "total_order", "source.snapshot", "resync", "paired", "paired_row_id",
		"sequence_number", "source.row_id:rid", "db", "schema", "name", "version", "connector", "last_updated_sequence_number"},
}

// unwrapEvents are one of each op, a paired update, and the last row of
// an initial read re-emitted after a history loss.
func unwrapEvents() []cdc.Event {
	updated := fullRow()
	updated[colName] = "renamed"
	return []cdc.Event{
		{Op: cdc.OpDelete, RowID: 11, LUSN: 5, Before: sparseRow(), Index: 0},
		{Op: cdc.OpUpdate, RowID: 12, LUSN: 7, Before: fullRow(), After: updated, Index: 1},
		{Op: cdc.OpUpdate, RowID: 13, LUSN: 7, Before: sparseRow(), After: pastRow(), Index: 2, Source: "equality-delete", PairedRowID: 9},
		{Op: cdc.OpCreate, RowID: 1000, LUSN: 7, After: fullRow(), Index: 3},
		{Op: cdc.OpSnapshot, RowID: 0, LUSN: 1, After: pastRow(), Index: 4, Snapshot: cdc.SnapshotLast, Resync: true},
	}
}

// unwrapFormats are the formats with a flattened form, as the tests build
// them.
func unwrapFormats(t *testing.T) map[string]cdc.Encoder {
	return map[string]cdc.Encoder{
		"debezium-json":         &JSON{Envelope: Envelope{Pipeline: "shop-cdc", Version: "0.1.0"}},
		"debezium-connect-json": newConnect(t, ConnectOptions{}),
	}
}

// TestUnwrapMatchesTheEnvelope: for every delete mode, add.fields set,
// prefix and format, the flattened records of a commit's events (one of
// each op, with the tombstone after the delete that the Kafka sink
// writes) equal what ExtractNewRecordState's rules (internal/unwraptest)
// make of the envelope records of the same events, record by record:
// key, value and headers.
func TestUnwrapMatchesTheEnvelope(t *testing.T) {
	const tsMs = 1_717_331_701_234
	for name, inner := range unwrapFormats(t) {
		for _, mode := range deleteHandlings {
			for fi, fields := range unwrapFieldSets {
				for _, prefix := range []string{"__", "x_"} {
					for _, keyed := range []bool{true, false} {
						t.Run(fmt.Sprintf("%s/%s/fields%d/%s/keyed=%v", name, mode, fi, prefix, keyed), func(t *testing.T) {
							c := goldenCommit(keyed)
							u, err := NewUnwrap(inner, UnwrapOptions{DeleteHandling: mode, AddFields: fields, AddHeaders: fields,
								AddFieldsPrefix: prefix, AddHeadersPrefix: prefix})
							if err != nil {
								t.Fatal(err)
							}
							oracle := unwraptest.Options{Mode: string(mode), AddFields: fields, AddHeaders: fields,
								FieldsPrefix: prefix, HeadersPrefix: prefix, Connect: name == "debezium-connect-json"}
							var got, want []unwraptest.Record
							evs := unwrapEvents()
							for i := range evs {
								e := &evs[i]
								key, err := inner.AppendKey(nil, c, e)
								if err != nil {
									t.Fatal(err)
								}
								env, err := inner.AppendValue(nil, c, e, tsMs)
								if err != nil {
									t.Fatal(err)
								}
								envelope := []unwraptest.Record{{Key: key, Value: env}}
								if e.Op == cdc.OpDelete {
									envelope = append(envelope, unwraptest.Record{Key: key})
								}
								for _, r := range envelope {
									out, err := unwraptest.Apply(oracle, r)
									if err != nil {
										t.Fatal(err)
									}
									want = append(want, out...)
								}
								got = append(got, flattened(t, u, c, e, tsMs)...)
							}
							if len(got) != len(want) {
								t.Fatalf("%d records, want %d:\n%s\nwant:\n%s", len(got), len(want), show(got), show(want))
							}
							for i := range got {
								if d := unwraptest.Diff(got[i], want[i]); d != "" {
									t.Fatalf("record %d: %s", i, d)
								}
							}
						})
					}
				}
			}
		}
	}
}

// flattened returns the records u makes of e, with the tombstone the
// Kafka sink writes after a delete when the mode keeps it.
func flattened(t *testing.T, u *Unwrap, c *cdc.Commit, e *cdc.Event, tsMs int64) []unwraptest.Record {
	t.Helper()
	var out []unwraptest.Record
	key, err := u.AppendKey(nil, c, e)
	if err != nil {
		t.Fatal(err)
	}
	if u.Keep(c, e) {
		v, err := u.AppendValue(nil, c, e, tsMs)
		if err != nil {
			t.Fatal(err)
		}
		if len(v) == 0 {
			v = nil
		}
		r := unwraptest.Record{Key: key, Value: v}
		for _, h := range u.AppendHeaders(nil, c, e, tsMs) {
			r.Headers = append(r.Headers, unwraptest.Header{Key: h.Key, Value: h.Value})
		}
		out = append(out, r)
	}
	if e.Op == cdc.OpDelete && u.Options().DeleteHandling.KeepsTombstones() {
		r := unwraptest.Record{Key: key}
		for _, h := range u.TombstoneHeaders() {
			r.Headers = append(r.Headers, unwraptest.Header{Key: h.Key, Value: h.Value})
		}
		out = append(out, r)
	}
	return out
}

func show(rs []unwraptest.Record) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %s -> %.200s %v\n", r.Key, r.Value, len(r.Headers))
	}
	return b.String()
}
