package cdc

import (
	"bytes"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// BoundFilter is a RowFilter resolved against one schema.
type BoundFilter struct {
	root boundNode
}

type boundNode interface {
	eval(r Row) tri
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

func (n boundAnd) eval(r Row) tri {
	v := triTrue
	for _, x := range n {
		switch x.eval(r) {
		case triFalse:
			return triFalse
		case triUnknown:
			v = triUnknown
		}
	}
	return v
}

func (n boundOr) eval(r Row) tri {
	v := triFalse
	for _, x := range n {
		switch x.eval(r) {
		case triTrue:
			return triTrue
		case triUnknown:
			v = triUnknown
		}
	}
	return v
}

func (n boundNot) eval(r Row) tri {
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

func (n boundCmp) eval(r Row) tri {
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
func (f *RowFilter) Bind(sc *iceberg.Schema) (*BoundFilter, error) {
	root, err := bindFilter(f.root, sc)
	if err != nil {
		return nil, err
	}
	return &BoundFilter{root: root}, nil
}

// Keep reports whether the row satisfies the filter (true, not unknown).
func (b *BoundFilter) Keep(r Row) bool { return b.root.eval(r) == triTrue }

// bindFilter recurses once per level of the parsed condition, which
// ParseRowFilter bounds (MaxFilterDepth).
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
		return nil, fmt.Errorf("unknown column %q (the table's columns: %s)", c.col.name, BoundedList(fieldNames(sc), 20))
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

func compareOrdered[T int32 | int64 | float32 | float64 | string | Date | Timestamp | TimestampTZ | TimestampNano | TimestampTZNano](a, b any) int {
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
	wantKind := func(l filterLit, kind byte, what string) error {
		if l.kind != kind {
			return fmt.Errorf("want %s, got %s", what, l.describe())
		}
		return nil
	}
	switch t.(type) {
	case iceberg.BooleanType:
		return func(a, b any) int {
				x, y := a.(bool), b.(bool)
				switch {
				case x == y:
					return 0
				case !x:
					return -1
				}
				return 1
			}, func(l filterLit) (any, error) {
				if err := wantKind(l, 'b', "TRUE or FALSE"); err != nil {
					return nil, err
				}
				return l.text == "true", nil
			}, nil
	case iceberg.Int32Type:
		return compareOrdered[int32], func(l filterLit) (any, error) {
			if err := wantKind(l, 'n', "an integer"); err != nil {
				return nil, err
			}
			n, err := strconv.ParseInt(l.text, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("want an integer, got %s", l.describe())
			}
			return int32(n), nil
		}, nil
	case iceberg.Int64Type:
		return compareOrdered[int64], func(l filterLit) (any, error) {
			if err := wantKind(l, 'n', "an integer"); err != nil {
				return nil, err
			}
			n, err := strconv.ParseInt(l.text, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("want an integer, got %s", l.describe())
			}
			return n, nil
		}, nil
	case iceberg.Float32Type:
		return compareOrdered[float32], func(l filterLit) (any, error) {
			if err := wantKind(l, 'n', "a number"); err != nil {
				return nil, err
			}
			f, err := strconv.ParseFloat(l.text, 32)
			if err != nil { // strconv's error quotes the literal
				return nil, fmt.Errorf("want a number, got %s that does not parse as one", l.describe())
			}
			return float32(f), nil
		}, nil
	case iceberg.Float64Type:
		return compareOrdered[float64], func(l filterLit) (any, error) {
			if err := wantKind(l, 'n', "a number"); err != nil {
				return nil, err
			}
			f, err := strconv.ParseFloat(l.text, 64)
			if err != nil { // strconv's error quotes the literal
				return nil, fmt.Errorf("want a number, got %s that does not parse as one", l.describe())
			}
			return f, nil
		}, nil
	case iceberg.DecimalType:
		return func(a, b any) int {
				return decimalRat(a.(Decimal)).Cmp(b.(*big.Rat))
			}, func(l filterLit) (any, error) {
				if err := wantKind(l, 'n', "a number"); err != nil {
					return nil, err
				}
				r, ok := new(big.Rat).SetString(l.text)
				if !ok {
					return nil, fmt.Errorf("want a number, got %s", l.describe())
				}
				return r, nil
			}, nil
	case iceberg.StringType:
		return compareOrdered[string], func(l filterLit) (any, error) {
			if err := wantKind(l, 's', "a 'string'"); err != nil {
				return nil, err
			}
			return l.text, nil
		}, nil
	case iceberg.UUIDType:
		return func(a, b any) int {
				x, y := a.(UUID), b.(UUID)
				return bytes.Compare(x[:], y[:])
			}, func(l filterLit) (any, error) {
				if err := wantKind(l, 's', "a 'uuid'"); err != nil {
					return nil, err
				}
				u, err := uuid.Parse(l.text)
				if err != nil {
					return nil, fmt.Errorf("want a 'uuid', got %s", l.describe())
				}
				return UUID(u), nil
			}, nil
	case iceberg.DateType:
		return compareOrdered[Date], func(l filterLit) (any, error) {
			if err := wantKind(l, 's', "a 'YYYY-MM-DD' date"); err != nil {
				return nil, err
			}
			d, err := time.Parse(time.DateOnly, l.text)
			if err != nil {
				return nil, fmt.Errorf("want a 'YYYY-MM-DD' date, got %s", l.describe())
			}
			return Date(d.Unix() / 86400), nil
		}, nil
	case iceberg.TimestampType:
		return compareOrdered[Timestamp], timeLit(func(t time.Time) any { return Timestamp(t.UnixMicro()) }), nil
	case iceberg.TimestampTzType:
		return compareOrdered[TimestampTZ], timeLit(func(t time.Time) any { return TimestampTZ(t.UnixMicro()) }), nil
	case iceberg.TimestampNsType:
		return compareOrdered[TimestampNano], timeLit(func(t time.Time) any { return TimestampNano(t.UnixNano()) }), nil
	case iceberg.TimestampTzNsType:
		return compareOrdered[TimestampTZNano], timeLit(func(t time.Time) any { return TimestampTZNano(t.UnixNano()) }), nil
	}
	return nil, nil, fmt.Errorf("a %s column cannot be compared in a filter (only IS [NOT] NULL); compare booleans, numbers, decimals, strings, uuids, dates and timestamps", t)
}

// describe names the literal's kind, never its text: a literal may be a
// value of a masked column (see RedactFilter).
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

func decimalRat(d Decimal) *big.Rat {
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
