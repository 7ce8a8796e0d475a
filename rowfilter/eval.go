package rowfilter

import (
	"bytes"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// Bound is a Filter resolved against one schema.
type Bound struct {
	root boundNode
}

type boundNode interface {
	eval(r values.Row) tri
}

// tri is SQL's three-valued truth.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

type (
	boundAnd []boundNode
	boundOr  []boundNode
	boundNot struct{ x boundNode }
	boundCmp struct {
		pos    int
		op     string
		vals   []any
		negate bool
		cmp    func(a, b any) int
	}
)

func (n boundAnd) eval(r values.Row) tri { return fold(n, r, triFalse) }

func (n boundOr) eval(r values.Row) tri { return fold(n, r, triTrue) }

// fold is SQL's AND (decided by triFalse) or OR (decided by triTrue) of
// xs on r: decided as soon as one term is, else unknown when a term is,
// else the other truth.
func fold(xs []boundNode, r values.Row, decided tri) tri {
	v := triTrue - decided // the other of triFalse and triTrue
	for _, x := range xs {
		switch x.eval(r) {
		case decided:
			return decided
		case triUnknown:
			v = triUnknown
		}
	}
	return v
}

func (n boundNot) eval(r values.Row) tri {
	switch v := n.x.eval(r); v {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	default:
		return v
	}
}

func truth(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

func (n boundCmp) eval(r values.Row) tri {
	var v any
	if n.pos < len(r) {
		v = r[n.pos]
	}
	if n.op == "isnull" {
		return truth((v == nil) != n.negate)
	}
	if v == nil {
		return triUnknown
	}
	var res bool
	switch n.op {
	case "=":
		res = n.cmp(v, n.vals[0]) == 0
	case "<>":
		res = n.cmp(v, n.vals[0]) != 0
	case "<":
		res = n.cmp(v, n.vals[0]) < 0
	case "<=":
		res = n.cmp(v, n.vals[0]) <= 0
	case ">":
		res = n.cmp(v, n.vals[0]) > 0
	case ">=":
		res = n.cmp(v, n.vals[0]) >= 0
	case "in":
		for _, x := range n.vals {
			if n.cmp(v, x) == 0 {
				res = true
				break
			}
		}
	case "between":
		res = n.cmp(v, n.vals[0]) >= 0 && n.cmp(v, n.vals[1]) <= 0
	}
	return truth(res != n.negate)
}

// Bind resolves the filter's columns and literals against sc: an unknown
// column, a column of a type the filter cannot compare, or a literal
// that is not a value of its column's type is an error naming them.
func (f *Filter) Bind(sc *iceberg.Schema) (*Bound, error) {
	root, err := bindFilter(f.root, sc)
	if err != nil {
		return nil, err
	}
	return &Bound{root: root}, nil
}

// Keep reports whether the row satisfies the filter (true, not unknown).
func (b *Bound) Keep(r values.Row) bool { return b.root.eval(r) == triTrue }

// bindFilter recurses once per level of the parsed condition, which
// Parse bounds (MaxDepth).
func bindFilter(n filterNode, sc *iceberg.Schema) (boundNode, error) {
	switch n := n.(type) {
	case filterAnd:
		xs, err := bindEach(n, sc)
		return boundAnd(xs), err
	case filterOr:
		xs, err := bindEach(n, sc)
		return boundOr(xs), err
	case filterNot:
		x, err := bindFilter(n.x, sc)
		return boundNot{x}, err
	case filterCmp:
		return bindCmp(n, sc)
	}
	return nil, fmt.Errorf("filter node %T", n)
}

func bindEach(ns []filterNode, sc *iceberg.Schema) ([]boundNode, error) {
	out := make([]boundNode, len(ns))
	for i, n := range ns {
		var err error
		if out[i], err = bindFilter(n, sc); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func bindCmp(c filterCmp, sc *iceberg.Schema) (boundNode, error) {
	pos := -1
	for i, f := range sc.Fields() {
		if f.Name == c.col.name || !c.col.quoted && strings.EqualFold(f.Name, c.col.name) {
			if pos >= 0 {
				return nil, fmt.Errorf("column %s matches more than one column: quote the name to match its case", c.col.name)
			}
			pos = i
		}
	}
	if pos < 0 {
		return nil, fmt.Errorf("unknown column %q (the table's columns: %s)", c.col.name, cdc.BoundedList(fieldNames(sc), 20))
	}
	field := sc.Fields()[pos]
	b := boundCmp{pos: pos, op: c.op, negate: c.negate}
	if c.op == "isnull" {
		return b, nil
	}
	cmp, conv, err := filterType(field.Type)
	if err != nil {
		return nil, fmt.Errorf("column %s: %v", field.Name, err)
	}
	b.cmp = cmp
	for _, l := range c.lits {
		v, err := conv(l)
		if err != nil {
			return nil, fmt.Errorf("column %s (%s): %v", field.Name, field.Type, err)
		}
		b.vals = append(b.vals, v)
	}
	return b, nil
}

func compareOrdered[T int32 | int64 | float32 | float64 | string | values.Date | values.Timestamp | values.TimestampTZ | values.TimestampNano | values.TimestampTZNano](a, b any) int {
	x, y := a.(T), b.(T)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// filterType returns how to compare values of t and how to turn a literal
// into one.
func filterType(t iceberg.Type) (func(a, b any) int, func(filterLit) (any, error), error) {
	switch t.(type) {
	case iceberg.BooleanType:
		return compareBool, boolLit, nil
	case iceberg.Int32Type:
		return compareOrdered[int32], intLit(32, func(n int64) any { return int32(n) }), nil
	case iceberg.Int64Type:
		return compareOrdered[int64], intLit(64, func(n int64) any { return n }), nil
	case iceberg.Float32Type:
		return compareOrdered[float32], floatLit(32, func(f float64) any { return float32(f) }), nil
	case iceberg.Float64Type:
		return compareOrdered[float64], floatLit(64, func(f float64) any { return f }), nil
	case iceberg.DecimalType:
		return compareDecimal, decimalLit, nil
	case iceberg.StringType:
		return compareOrdered[string], stringLit, nil
	case iceberg.UUIDType:
		return compareUUID, uuidLit, nil
	case iceberg.DateType:
		return compareOrdered[values.Date], dateLit, nil
	case iceberg.TimestampType:
		return compareOrdered[values.Timestamp], timeLit(func(t time.Time) any { return values.Timestamp(t.UnixMicro()) }), nil
	case iceberg.TimestampTzType:
		return compareOrdered[values.TimestampTZ], timeLit(func(t time.Time) any { return values.TimestampTZ(t.UnixMicro()) }), nil
	case iceberg.TimestampNsType:
		return compareOrdered[values.TimestampNano], timeLit(func(t time.Time) any { return values.TimestampNano(t.UnixNano()) }), nil
	case iceberg.TimestampTzNsType:
		return compareOrdered[values.TimestampTZNano], timeLit(func(t time.Time) any { return values.TimestampTZNano(t.UnixNano()) }), nil
	}
	return nil, nil, fmt.Errorf("a %s column cannot be compared in a filter (only IS [NOT] NULL); compare booleans, numbers, decimals, strings, uuids, dates and timestamps", t)
}

// wantKind refuses a literal of another kind than a column's, naming
// what the column takes.
func wantKind(l filterLit, kind byte, what string) error {
	if l.kind != kind {
		return fmt.Errorf("want %s, got %s", what, l.describe())
	}
	return nil
}

func compareBool(a, b any) int {
	x, y := a.(bool), b.(bool)
	switch {
	case x == y:
		return 0
	case !x:
		return -1
	}
	return 1
}

func boolLit(l filterLit) (any, error) {
	if err := wantKind(l, 'b', "TRUE or FALSE"); err != nil {
		return nil, err
	}
	return l.text == "true", nil
}

// intLit parses an integer literal of bits bits; to gives it the
// column's Go type.
func intLit(bits int, to func(int64) any) func(filterLit) (any, error) {
	return func(l filterLit) (any, error) {
		if err := wantKind(l, 'n', "an integer"); err != nil {
			return nil, err
		}
		n, err := strconv.ParseInt(l.text, 10, bits)
		if err != nil {
			return nil, fmt.Errorf("want an integer, got %s", l.describe())
		}
		return to(n), nil
	}
}

// floatLit parses a number literal of bits bits; to gives it the
// column's Go type.
func floatLit(bits int, to func(float64) any) func(filterLit) (any, error) {
	return func(l filterLit) (any, error) {
		if err := wantKind(l, 'n', "a number"); err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(l.text, bits)
		if err != nil { // strconv's error quotes the literal
			return nil, fmt.Errorf("want a number, got %s that does not parse as one", l.describe())
		}
		return to(f), nil
	}
}

func compareDecimal(a, b any) int {
	return decimalRat(a.(values.Decimal)).Cmp(b.(*big.Rat))
}

func decimalLit(l filterLit) (any, error) {
	if err := wantKind(l, 'n', "a number"); err != nil {
		return nil, err
	}
	r, ok := new(big.Rat).SetString(l.text)
	if !ok {
		return nil, fmt.Errorf("want a number, got %s", l.describe())
	}
	return r, nil
}

func stringLit(l filterLit) (any, error) {
	if err := wantKind(l, 's', "a 'string'"); err != nil {
		return nil, err
	}
	return l.text, nil
}

func compareUUID(a, b any) int {
	x, y := a.(values.UUID), b.(values.UUID)
	return bytes.Compare(x[:], y[:])
}

func uuidLit(l filterLit) (any, error) {
	if err := wantKind(l, 's', "a 'uuid'"); err != nil {
		return nil, err
	}
	u, err := uuid.Parse(l.text)
	if err != nil {
		return nil, fmt.Errorf("want a 'uuid', got %s", l.describe())
	}
	return values.UUID(u), nil
}

func dateLit(l filterLit) (any, error) {
	if err := wantKind(l, 's', "a 'YYYY-MM-DD' date"); err != nil {
		return nil, err
	}
	d, err := time.Parse(time.DateOnly, l.text)
	if err != nil {
		return nil, fmt.Errorf("want a 'YYYY-MM-DD' date, got %s", l.describe())
	}
	return values.Date(d.Unix() / 86400), nil
}

// describe names the literal's kind, never its text: a literal may be a
// value of a masked column (see Redact).
func (l filterLit) describe() string {
	switch l.kind {
	case 'n':
		return "a number"
	case 'b':
		return strings.ToUpper(l.text)
	}
	return "a string"
}

// timeLayouts are the timestamp literals a filter takes.
var timeLayouts = []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"}

func timeLit(to func(time.Time) any) func(filterLit) (any, error) {
	return func(l filterLit) (any, error) {
		if l.kind != 's' {
			return nil, fmt.Errorf("want a 'YYYY-MM-DD HH:MM:SS' timestamp, got %s", l.describe())
		}
		for _, layout := range timeLayouts {
			if t, err := time.Parse(layout, l.text); err == nil {
				return to(t), nil
			}
		}
		return nil, fmt.Errorf("want a 'YYYY-MM-DD HH:MM:SS' timestamp, got %s", l.describe())
	}
}

func decimalRat(d values.Decimal) *big.Rat {
	r, ok := new(big.Rat).SetString(d.Unscaled)
	if !ok {
		return new(big.Rat)
	}
	if d.Scale != 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(d.Scale))), nil)
		if d.Scale > 0 {
			r.Quo(r, new(big.Rat).SetInt(p))
		} else {
			r.Mul(r, new(big.Rat).SetInt(p))
		}
	}
	return r
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func fieldNames(sc *iceberg.Schema) []string {
	names := make([]string, 0, sc.NumFields())
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return names
}
