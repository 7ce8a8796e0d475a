package rowfilter_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc/cdctest"
	"github.com/icecdc/icecdc/rowfilter"
	"github.com/icecdc/icecdc/values"
)

// filterSchema has a column of each kind a filter compares.
func filterSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "price", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 4, Name: "weight", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 6, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 7, Name: "ref", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: 8, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 9, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 10, Name: "n", Type: iceberg.PrimitiveTypes.Int32},
	)
}

// TestRowFilterErrorsHideLiterals takes every error path of the filter's
// tokenizer, parser and binding with a literal that must not show (a
// masked column's value, say): the error is one line without it, and so
// is the filter as logs show it (Redact). On main, 8 of the
// attacker's 18 malformed filters leaked theirs.
func TestRowFilterErrorsHideLiterals(t *testing.T) {
	const secret, number = "SECRETVAL2@example.com", "913572468"
	sc := filterSchema()
	for _, tc := range []struct{ filter, want string }{
		// The tokenizer.
		{"customer = '" + secret, "unterminated string: the quote at byte 11"},
		{`customer = "` + secret, "unterminated quoted name"},
		{"customer = `" + secret, "unterminated quoted name"},
		{"customer = 'x' ; '" + secret + "'", `";" at byte 15`},
		{"customer = '" + secret + "' ☃", "the character at byte"},
		// The parser.
		{"'" + secret + "' = customer", "a string at byte 0 where a column was expected"},
		{number + " = id", "a literal at byte 0 where a column was expected"},
		{"customer = 'x' '" + secret + "'", "unexpected a string at byte 15 after the condition"},
		{"customer = 'x' " + strings.ReplaceAll(secret, "@example.com", ""), "unexpected a name"},
		{"customer = 'x' \"" + secret + "\"", "unexpected a quoted name"},
		{"customer = 'x' " + number, "unexpected a literal"},
		{"customer IS '" + secret + "'", "customer IS: want NULL or NOT NULL, found a string"},
		{"customer NOT '" + secret + "'", "customer NOT: want IN or BETWEEN, found a string"},
		{"customer IN '" + secret + "'", "customer IN: want a parenthesised list of literals, found a string"},
		{"customer IN ('x' '" + secret + "')", "customer IN: missing ')', found a string"},
		{"id BETWEEN 1 '" + secret + "'", "id BETWEEN: want AND, found a string"},
		{"id BETWEEN " + number + " OR 2", "id BETWEEN: want AND, found OR"},
		{"customer '" + secret + "'", "customer followed by a string"},
		{"customer SECRETVAL2", "customer followed by a name"},
		{"customer " + number, "customer followed by a literal"},
		{"customer =", "the condition ends where a literal was expected"},
		{"id = " + number + " AND", "the condition ends where a column was expected"},
		{"customer = NULL", "IS NULL"},
		{`customer = "` + secret + `"`, "customer compared with a quoted name at byte 11"},
		{"customer = SECRETVAL2", "customer compared with a name at byte 11"},
		{"(customer = '" + secret + "' '" + secret + "')", "missing ')' for the '(' at byte 0: found a string"},
		{"upper(customer) = '" + secret + "'", "functions are not accepted"},
		{"customer LIKE '" + secret + "'", "customer followed by LIKE"},
		{strings.Repeat("(", rowfilter.MaxDepth+1) + "id = " + number + strings.Repeat(")", rowfilter.MaxDepth+1), "nested deeper than 64 levels"},
		{strings.Repeat("NOT ", rowfilter.MaxDepth+1) + "customer = '" + secret + "'", "nested deeper than 64 levels"},
		{"customer = '" + secret + "' OR " + strings.Repeat("x", rowfilter.MaxBytes), "more than the 65536 a filter may have"},
		// The binding to the schema.
		{"id = '" + secret + "'", "want an integer, got a string"},
		{"id = " + number + "0000000000000000000", "want an integer, got a number"},
		{"n = " + number + "000", "want an integer, got a number"},
		{"price = " + number + ".1.2", "want a number, got a number that does not parse as one"},
		{"weight = " + number + ".1.2", "want a number, got a number that does not parse as one"},
		{"amount = " + number + ".1.2", "want a number, got a number"},
		{"day = '" + secret + "'", "want a 'YYYY-MM-DD' date, got a string"},
		{"at = '" + secret + "'", "timestamp, got a string"},
		{"ref = '" + secret + "'", "want a 'uuid', got a string"},
		{"flag = '" + secret + "'", "want TRUE or FALSE, got a string"},
		{"customer = " + number, "want a 'string', got a number"},
		{"customer = TRUE", "want a 'string', got TRUE"},
	} {
		rf, err := rowfilter.Parse(tc.filter)
		if err == nil {
			_, err = rf.Bind(sc)
		}
		short := tc.filter
		if len(short) > 80 {
			short = short[:80] + "…"
		}
		if err == nil {
			t.Errorf("%s: accepted", short)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "SECRETVAL2") || strings.Contains(msg, number) || strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %q; want one line saying %q, without the literal", short, msg, tc.want)
		}
		if red := rowfilter.Redact(tc.filter); strings.Contains(red, "SECRETVAL2") || strings.Contains(red, number) {
			t.Errorf("Redact(%s) = %q: shows a literal", short, red)
		}
	}
}

// TestRowFilterBounded: the attacker's 3,000,000 '(' (and 1,200,000,
// which took main's RSS to 1.19 GB) are refused at once, by their
// length, without recursing; a condition of the largest size with the
// deepest nesting allowed, and one chain of thousands of ANDs, parse,
// bind and evaluate with a bounded stack and bounded allocation. On main
// the first case overflows the stack, which is fatal: the test binary
// dies.
func TestRowFilterBounded(t *testing.T) {
	sc := filterSchema()
	for _, n := range []int{3_000_000, 1_200_000} {
		text := strings.Repeat("(", n)
		before := allocated()
		_, err := rowfilter.Parse(text)
		if err == nil || !strings.Contains(err.Error(), "a filter may have") {
			t.Errorf("%d '(': %v; want a refusal by length", n, err)
		}
		if got := allocated() - before; got > 1<<20 {
			t.Errorf("%d '(': refusing it allocated %d bytes", n, got)
		}
	}
	deep := strings.Repeat("(", rowfilter.MaxDepth-1) + "NOT id = 1" + strings.Repeat(")", rowfilter.MaxDepth-1)
	chain := "id = 0" + strings.Repeat(" AND id <> 1", (rowfilter.MaxBytes-10)/12)
	wide := "id IN (0" + strings.Repeat(",1", (rowfilter.MaxBytes-20)/2) + ")"
	for name, text := range map[string]string{"deep": deep, "chain": chain, "wide": wide} {
		if len(text) > rowfilter.MaxBytes {
			t.Fatalf("%s: %d bytes", name, len(text))
		}
		before := allocated()
		rf, err := rowfilter.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := rf.Bind(sc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		row := make(values.Row, len(sc.Fields()))
		row[0] = int64(0)
		if !b.Keep(row) {
			t.Errorf("%s leaves id 0 out", name)
		}
		// In proportion to the condition's length: about 250 bytes per
		// byte of a list of one-digit literals (tokens, literals, their
		// bound values), 16 MiB at most, and garbage once bound.
		if got := allocated() - before; got > 512*rowfilter.MaxBytes {
			t.Errorf("%s: %d bytes allocated for a %d-byte condition", name, got, len(text))
		}
	}
}

func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// TestRowFilter checks the filter language on values of every type it
// compares, and that what it does not take is refused with one line.
func TestRowFilter(t *testing.T) {
	sc := cdctest.Info("s", "t").Schema
	for _, tc := range []struct {
		filter string
		keep   []int64
	}{
		{"id = 3", []int64{3}},
		{"ID <> 3 AND id < 5", []int64{1, 2, 4}},
		{"id != 3 and id <= 2", []int64{1, 2}},
		{"id BETWEEN 2 AND 4", []int64{2, 3, 4}},
		{"id NOT BETWEEN 2 AND 4", []int64{1, 5}},
		{"id NOT IN (1,2,3)", []int64{4, 5}},
		{"NOT id >= 4 AND (id > 1 OR id = 1)", []int64{1, 2, 3}},
		{"id IS NULL", nil},
		{"id IS NOT NULL AND `id` > 4", []int64{5}},
	} {
		rf, err := rowfilter.Parse(tc.filter)
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		b, err := rf.Bind(sc)
		if err != nil {
			t.Fatalf("%s: %v", tc.filter, err)
		}
		var kept []int64
		for v := int64(1); v <= 5; v++ {
			if b.Keep(values.Row{v}) {
				kept = append(kept, v)
			}
		}
		if fmt.Sprint(kept) != fmt.Sprint(tc.keep) {
			t.Errorf("%s kept %v, want %v", tc.filter, kept, tc.keep)
		}
		if b.Keep(values.Row{nil}) != strings.Contains(tc.filter, "IS NULL") {
			t.Errorf("%s on a null: SQL keeps a null only for IS NULL", tc.filter)
		}
	}
	for _, tc := range []struct{ filter, want string }{
		{"id LIKE 'a%'", "LIKE"},
		{"upper(id) = 'A'", "functions are not accepted"},
		{"id = other", "only literals"},
		{"id = NULL", "IS NULL"},
		{"id + 1 = 2", `"+"`},
		{"id = 'three'", "want an integer"},
		{"nope = 1", `unknown column "nope"`},
		{`"ID" = 1`, `unknown column "ID"`},
		{"id = 1 ; DROP TABLE x", `";"`},
		{"(id = 1", "missing ')'"},
	} {
		rf, err := rowfilter.Parse(tc.filter)
		if err == nil {
			_, err = rf.Bind(sc)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line saying %s", tc.filter, err, tc.want)
		}
	}
}

// TestRedact: logs and errors show a filter's shape without its
// literals, which may be values of masked columns; an error binding a
// literal names its kind, not its text.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"customer = 'jane@example.com' OR id <= 1":                          "customer = ? OR id <= ?",
		"`Name` IN ('a', 'it''s') AND id NOT BETWEEN -1 AND 2.5e3":          `"Name" IN (?, ?) AND id NOT BETWEEN ? AND ?`,
		"id IS NOT NULL AND flag = TRUE":                                    "id IS NOT NULL AND flag = ?",
		`name = "jane" OR name = jane OR (id BETWEEN 1 AND 2 AND x IN (y))`: `name = ? OR name = ? OR (id BETWEEN ? AND ? AND x IN (?))`,
		"id = 'unterminated secret":                                         "(a condition that does not parse)",
	} {
		if got := rowfilter.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	sc := cdctest.Info("s", "t").Schema
	rf, err := rowfilter.Parse("id = 'jane@example.com'")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rf.Bind(sc); err == nil || strings.Contains(err.Error(), "jane") || !strings.Contains(err.Error(), "want an integer, got a string") {
		t.Errorf("bind: %v; want the literal's kind without its text", err)
	}
}
