package debezium

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/sr/srfake"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// transcodedRecord is the oracle of the direct Avro writer, and what
// the format did before it: the event's debezium-connect-json message,
// its payload converted by the transcoder with the same registered
// schema.
func transcodedRecord(f *Avro, c *cdc.Commit, e *cdc.Event, part string) ([]byte, error) {
	return appendTranscoded(nil, nil, f, c, e, part, 1_717_331_701_234)
}

// appendTranscoded is transcodedRecord into dst, with msg as the Connect
// message's buffer.
func appendTranscoded(dst, msg []byte, f *Avro, c *cdc.Commit, e *cdc.Event, part string, tsMs int64) ([]byte, error) {
	role := byte('v')
	msg, err := f.conn.AppendValue(msg[:0], c, e, tsMs)
	if part == "key" {
		role = 'k'
		msg, err = f.conn.AppendKey(msg[:0], c, e)
	}
	if err != nil {
		return dst, err
	}
	s, _, err := f.tableSchema(c, role)
	if err != nil {
		return dst, err
	}
	_, payload, ok := splitConnect(msg)
	if !ok {
		return dst, fmt.Errorf("not a Connect message: %s", msg)
	}
	return f.appendWire(dst, s, payload, func() string { return recordWhat(c, role) })
}

func directRecord(f *Avro, c *cdc.Commit, e *cdc.Event, part string) ([]byte, error) {
	if part == "key" {
		return f.AppendKey(nil, c, e)
	}
	return f.AppendValue(nil, c, e, 1_717_331_701_234)
}

// randomString mixes ASCII, escapes, multi-byte runes, U+2028 and bytes
// that are not UTF-8.
func randomString(r *rand.Rand) string {
	parts := []string{"a", "Zoë", "\"", "\\", "\n", "\t", "\x01", "\u2028", "€", "😀", "\xff", "\xe2\x82", "/", " ", "_row"}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func randomDigits(r *rand.Rand, max int) string {
	n := 1 + r.IntN(max)
	b := []byte{}
	if r.IntN(2) == 0 {
		b = append(b, '-')
	}
	for i := range n {
		d := byte('0' + r.IntN(10))
		if i == 0 && n > 1 && d == '0' {
			d = '1'
		}
		b = append(b, d)
	}
	return string(b)
}

func randomFloat(r *rand.Rand) float64 {
	switch r.IntN(8) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1 - 2*r.IntN(2))
	case 2:
		return math.Copysign(0, -1)
	case 3:
		return r.NormFloat64() * 1e-9
	case 4:
		return r.NormFloat64() * 1e300
	}
	return r.NormFloat64() * 1e4
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// randomRow is a row of v3Schema with random values, each optional one
// null one time in five.
func randomRow(r *rand.Rand, id int64) values.Row {
	opt := func(v any) any {
		if r.IntN(5) == 0 {
			return nil
		}
		return v
	}
	str := func() any { return opt(randomString(r)) }
	list := func(n int, f func() any) []any {
		l := make([]any, r.IntN(n))
		for i := range l {
			l[i] = f()
		}
		return l
	}
	maps := func(n int, k, v func() any) []values.MapEntry {
		m := make([]values.MapEntry, r.IntN(n))
		for i := range m {
			m[i] = values.MapEntry{Key: k(), Value: v()}
		}
		return m
	}
	var uid values.UUID
	copy(uid[:], randomBytes(r, 16))
	return values.Row{
		id,
		opt(r.IntN(2) == 0),
		opt(r.Int32() - r.Int32()),
		opt(r.Int64() - r.Int64()),
		opt(float32(randomFloat(r))),
		opt(randomFloat(r)),
		opt(values.Decimal{Unscaled: randomDigits(r, 9), Scale: 2}),
		opt(values.Decimal{Unscaled: randomDigits(r, 38), Scale: 10}),
		opt(values.Date(r.Int32N(200_000) - 100_000)),
		opt(values.Time(r.Int64N(microsPerDay))),
		opt(values.Timestamp(r.Int64() - r.Int64())),
		opt(values.TimestampTZ(r.Int64N(1<<60) - 1<<59)),
		opt(values.TimestampNano(r.Int64() - r.Int64())),
		opt(values.TimestampTZNano(r.Int64() - r.Int64())),
		str(),
		opt(uid),
		opt(randomBytes(r, 4)),
		opt(randomBytes(r, r.IntN(40))),
		opt(values.Row{str(), randomString(r), opt(values.Row{opt(randomFloat(r)), opt(randomFloat(r))})}),
		opt(list(5, str)),
		opt(list(4, func() any { return values.Row{randomString(r), opt(r.Int32())} })),
		opt(maps(4, func() any { return randomString(r) }, func() any { return opt(r.Int64()) })),
		opt(maps(4, func() any { return r.Int32() }, func() any { return opt(randomFloat(r)) })),
		opt(maps(3, func() any { return values.Date(r.Int32N(1000)) }, func() any { return opt(list(3, str)) })),
		opt(values.VariantJSON(`{"k":` + strconv.Quote(randomString(r)) + `,"n":[1,2.5,null]}`)),
		opt(append([]byte{1, 1, 0, 0, 0}, randomBytes(r, r.IntN(16))...)),
		opt(randomBytes(r, 5)),
		opt(randomBytes(r, 9)),
		nil,
	}
}

// TestAvroDirectMatchesTranscoder: the direct writer's key and value are
// byte for byte what the transcoder makes of the debezium-connect-json
// message of the same event, with the same schema id, for random rows of
// every column type in every time and decimal mode, keyed and not, every
// op, with and without a pairing; each value also decodes with twmb/avro
// by the registered schema to the Connect payload. Bad values fail both
// ways with the same message.
func TestAvroDirectMatchesTranscoder(t *testing.T) {
	reg := srfake.New()
	defer reg.Close()
	r := rand.New(rand.NewPCG(21, 5))
	ops := []cdc.Op{cdc.OpCreate, cdc.OpUpdate, cdc.OpDelete, cdc.OpSnapshot}
	var events []cdc.Event
	for i := range 120 {
		e := cdc.Event{Op: ops[i%len(ops)], RowID: r.Int64(), LUSN: r.Int64N(1000), Index: i,
			Snapshot: cdc.SnapshotMarker(i % 3), Resync: i%7 == 0}
		if e.Op != cdc.OpCreate && e.Op != cdc.OpSnapshot {
			e.Before = randomRow(r, int64(i))
		}
		if e.Op != cdc.OpDelete {
			e.After = randomRow(r, int64(i))
		}
		if i%5 == 0 {
			e.Source, e.PairedRowID = "equality-delete", r.Int64()
		}
		events = append(events, e)
	}
	events = append(events,
		cdc.Event{Op: cdc.OpCreate, After: v3Row(fullRow())},
		cdc.Event{Op: cdc.OpUpdate, Before: v3Row(sparseRow()), After: v3Row(pastRow()), Index: 2})
	// Bad values: a wrong Go type, a time out of range, too many digits,
	// a null in a required field, a short row.
	bad := []func(values.Row){
		func(row values.Row) { row[colSmall] = int64(1) },
		func(row values.Row) { row[colClock] = values.Time(microsPerDay) },
		func(row values.Row) { row[colPrice] = values.Decimal{Unscaled: "12345678901", Scale: 2} },
		func(row values.Row) { row[colAddress] = values.Row{nil, nil, nil} },
		func(row values.Row) { row[colItems] = []any{nil} },
		func(row values.Row) { row[colScores] = []values.MapEntry{{Key: nil, Value: 1.0}} },
	}
	failures := 0
	for _, o := range allConnectModes {
		f, cl := newAvroFormat(t, reg.URL(), o, AvroOptions{})
		for _, keyed := range []bool{true, false} {
			c := goldenCommit(keyed)
			c.Table.Schema = v3Schema()
			c.Table.UUID = "uuid-\xff-" + string(o.TimePrecision)
			for i := range events {
				e := &events[i]
				for _, part := range []string{"key", "value"} {
					got, err := directRecord(f, c, e, part)
					if err != nil {
						t.Fatalf("%v keyed %v event %d %s: %v", o, keyed, i, part, err)
					}
					want, err := transcodedRecord(f, c, e, part)
					if err != nil {
						t.Fatal(err)
					}
					if string(got) != string(want) {
						t.Fatalf("%v keyed %v event %d %s:\ndirect     % x\ntranscoded % x", o, keyed, i, part, got, want)
					}
					if part == "key" || i%10 != 0 {
						continue
					}
					dec, _, _ := decodeWire(t, cl, got)
					cj, _ := f.conn.AppendValue(nil, c, e, 1_717_331_701_234)
					schemaText, payload, _ := splitConnect(cj)
					var cs connectSchemaNode
					if err := json.Unmarshal(schemaText, &cs); err != nil {
						t.Fatal(err)
					}
					if err := sameAsConnect(&cs, dec, payload, "value"); err != nil {
						t.Fatalf("%v event %d: %v", o, i, err)
					}
				}
			}
			for k, spoil := range bad {
				row := v3Row(fullRow())
				spoil(row)
				e := &cdc.Event{Op: cdc.OpCreate, After: row}
				if keyed {
					e = &cdc.Event{Op: cdc.OpDelete, Before: row}
				}
				out, err := f.AppendValue([]byte("x"), c, e, 1)
				_, werr := f.conn.AppendValue(nil, c, e, 1)
				if err == nil || werr == nil || err.Error() != werr.Error() || string(out) != "x" {
					t.Fatalf("%v bad value %d: direct %q (%v), Connect's %v", o, k, out, err, werr)
				}
				failures++
			}
		}
	}
	if failures == 0 {
		t.Fatal("no bad value tried")
	}
}

// TestAvroDirectArrowMatchesTranscoder: events whose images are Arrow
// columns (the pairs of arrowCases, fits and misfits) give the bytes the
// transcoder makes of their Connect message, or fail both ways.
func TestAvroDirectArrowMatchesTranscoder(t *testing.T) {
	compared := 0
	for n, tc := range arrowCases() {
		// A registry per case: the fake one compares a new schema with
		// every schema it holds.
		reg := srfake.New()
		defer reg.Close()
		var fs []*Avro
		for _, o := range []ConnectOptions{{}, {TimePrecision: TimeConnect, DecimalHandling: DecimalString}, {TimePrecision: TimeISOString, DecimalHandling: DecimalDouble}} {
			f, _ := newAvroFormat(t, reg.URL(), o, AvroOptions{})
			fs = append(fs, f)
		}
		arr, _, err := array.FromJSON(memory.DefaultAllocator, tc.dt, strings.NewReader(tc.vals))
		if err != nil {
			t.Fatal(err)
		}
		for _, required := range []bool{false, true} {
			sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
				iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
				iceberg.NestedField{ID: 2, Name: "v", Type: tc.typ, Required: required},
				iceberg.NestedField{ID: 3, Name: "missing", Type: iceberg.PrimitiveTypes.String},
			)
			idb := array.NewInt64Builder(memory.DefaultAllocator)
			for i := range arr.Len() {
				idb.Append(int64(i))
			}
			img := cdc.NewArrowRows(sc, []arrow.Array{idb.NewArray(), arr, nil})
			for _, keys := range [][]string{nil, {"id"}, {"v", "id"}} {
				c := &cdc.Commit{Table: cdc.TableInfo{Namespace: "ns", Name: "t" + strconv.Itoa(n), UUID: "u", Schema: sc, KeyFields: keys}}
				for i := range arr.Len() {
					for _, e := range []cdc.Event{
						{Op: cdc.OpCreate, RowID: int64(i), AfterArrow: img, AfterPos: i},
						{Op: cdc.OpUpdate, RowID: int64(i), BeforeArrow: img, BeforePos: (i + 1) % arr.Len(), AfterArrow: img, AfterPos: i},
					} {
						for _, f := range fs {
							for _, part := range []string{"key", "value"} {
								got, gerr := directRecord(f, c, &e, part)
								want, werr := transcodedRecord(f, c, &e, part)
								if (gerr == nil) != (werr == nil) || string(got) != string(want) {
									t.Fatalf("case %d (%s as %s, required %v, keys %v) row %d %s %s:\ndirect     % x (%v)\ntranscoded % x (%v)",
										n, tc.dt, tc.typ, required, keys, i, e.Op, part, got, gerr, want, werr)
								}
								if gerr == nil {
									compared++
								}
							}
						}
					}
				}
			}
		}
	}
	if compared == 0 {
		t.Fatal("no record compared")
	}
}
