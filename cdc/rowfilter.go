package cdc

import (
	"bytes"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// RowFilter keeps the rows of an on-demand snapshot that a condition
// holds for (Debezium's additional-conditions). The condition is a small
// part of SQL's WHERE clause, written by hand because no library here
// parses one: comparisons of a top-level column with a literal (=, <>,
// !=, <, <=, >, >=), IS [NOT] NULL, [NOT] IN (literals), [NOT] BETWEEN
// literal AND literal, combined with AND, OR, NOT and parentheses.
// Column names are case-insensitive unless quoted ("Name" or `Name`).
// Literals are numbers, quoted strings (a quote inside doubled), TRUE and
// FALSE; a date is 'YYYY-MM-DD', a timestamp 'YYYY-MM-DD HH:MM:SS[.f]'
// (an offset or Z for timestamptz, else UTC). Comparisons follow SQL's
// three-valued logic: a null column satisfies only IS NULL.
type RowFilter struct {
	text string
	root filterNode
}

// filterNode is a parsed condition, not yet bound to a schema.
type filterNode interface{}

type (
	filterAnd struct{ l, r filterNode }
	filterOr  struct{ l, r filterNode }
	filterNot struct{ x filterNode }
	filterCmp struct {
		col    filterIdent
		op     string // = <> < <= > >= in between isnull
		lits   []filterLit
		negate bool // NOT IN, NOT BETWEEN, IS NOT NULL
	}
)

type filterIdent struct {
	name   string
	quoted bool
}

type filterLit struct {
	kind byte // 'n' number, 's' string, 'b' boolean
	text string
}

// ParseRowFilter parses a condition; its error says what is not accepted.
func ParseRowFilter(text string) (*RowFilter, error) {
	toks, err := filterTokens(text)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %q after the condition", p.toks[p.i].text)
	}
	return &RowFilter{text: text, root: root}, nil
}

// String returns the condition as written.
func (f *RowFilter) String() string { return f.text }

// RedactFilter returns a condition with every literal replaced by ?, as
// logs and errors show it: a literal may be a value of a masked or
// excluded column (customer = 'jane@example.com'), which must not reach
// them; column names and the shape of the condition stay. A text that
// does not tokenize is shown as (a condition that does not parse).
func RedactFilter(text string) string {
	toks, err := filterTokens(text)
	if err != nil {
		return "(a condition that does not parse)"
	}
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && t.text != ")" && t.text != "," && toks[i-1].text != "(" {
			b.WriteByte(' ')
		}
		switch t.kind {
		case 's', 'n':
			b.WriteByte('?')
		case 'q':
			b.WriteString(strconv.Quote(t.text))
		default:
			b.WriteString(t.text)
		}
	}
	return b.String()
}

type filterToken struct {
	kind byte // 'w' word, 'q' quoted identifier, 's' string, 'n' number, 'o' operator or punctuation
	text string
}

func filterTokens(s string) ([]filterToken, error) {
	var toks []filterToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for ; ; j++ {
				if j >= len(s) {
					return nil, fmt.Errorf("unterminated string starting at %q", s[i:])
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			toks = append(toks, filterToken{'s', b.String()})
			i = j + 1
		case c == '"' || c == '`':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated quoted name starting at %q", s[i:])
			}
			toks = append(toks, filterToken{'q', s[i+1 : i+1+j]})
			i += j + 2
		case c >= '0' && c <= '9' || (c == '-' || c == '+' || c == '.') && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '.'):
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			toks = append(toks, filterToken{'n', s[i:j]})
			i = j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '.' || unicode.IsLetter(rune(s[j])) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, filterToken{'w', s[i:j]})
			i = j
		default:
			for _, op := range []string{"<>", "!=", "<=", ">=", "=", "<", ">", "(", ")", ","} {
				if strings.HasPrefix(s[i:], op) {
					toks = append(toks, filterToken{'o', op})
					i += len(op)
					goto next
				}
			}
			return nil, fmt.Errorf("%q is not accepted (%s)", s[i:i+1], filterAccepted)
		next:
		}
	}
	return toks, nil
}

// filterAccepted says what the language takes, for errors.
const filterAccepted = "icecdc takes comparisons of a column with a literal (=, <>, !=, <, <=, >, >=), IS [NOT] NULL, [NOT] IN (...), [NOT] BETWEEN ... AND ..., joined by AND, OR, NOT and parentheses"

type filterParser struct {
	toks []filterToken
	i    int
}

func (p *filterParser) peekWord(w string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == 'w' && strings.EqualFold(p.toks[p.i].text, w)
}

func (p *filterParser) peekOp(op string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == 'o' && p.toks[p.i].text == op
}

func (p *filterParser) or() (filterNode, error) {
	l, err := p.and()
	for err == nil && p.peekWord("OR") {
		p.i++
		var r filterNode
		if r, err = p.and(); err == nil {
			l = filterOr{l, r}
		}
	}
	return l, err
}

func (p *filterParser) and() (filterNode, error) {
	l, err := p.not()
	for err == nil && p.peekWord("AND") {
		p.i++
		var r filterNode
		if r, err = p.not(); err == nil {
			l = filterAnd{l, r}
		}
	}
	return l, err
}

func (p *filterParser) not() (filterNode, error) {
	if p.peekWord("NOT") {
		p.i++
		x, err := p.not()
		return filterNot{x}, err
	}
	if p.peekOp("(") {
		p.i++
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peekOp(")") {
			return nil, fmt.Errorf("missing ')'")
		}
		p.i++
		return x, nil
	}
	return p.predicate()
}

var filterKeywords = []string{"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "TRUE", "FALSE", "LIKE", "SELECT"}

func (p *filterParser) predicate() (filterNode, error) {
	if p.i >= len(p.toks) {
		return nil, fmt.Errorf("the condition ends where a column was expected")
	}
	t := p.toks[p.i]
	var col filterIdent
	switch {
	case t.kind == 'q':
		col = filterIdent{t.text, true}
	case t.kind == 'w' && !isFilterKeyword(t.text):
		col = filterIdent{t.text, false}
	default:
		return nil, fmt.Errorf("%q where a column was expected: a condition starts with a column name (%s)", t.text, filterAccepted)
	}
	p.i++
	if p.i < len(p.toks) && p.toks[p.i].kind == 'o' && p.toks[p.i].text == "(" {
		return nil, fmt.Errorf("%s(...): functions are not accepted (%s)", col.name, filterAccepted)
	}
	c := filterCmp{col: col}
	if p.peekWord("IS") {
		p.i++
		if p.peekWord("NOT") {
			p.i++
			c.negate = true
		}
		if !p.peekWord("NULL") {
			return nil, fmt.Errorf("%s IS: want NULL or NOT NULL", col.name)
		}
		p.i++
		c.op = "isnull"
		return c, nil
	}
	if p.peekWord("NOT") {
		p.i++
		c.negate = true
		if !p.peekWord("IN") && !p.peekWord("BETWEEN") {
			return nil, fmt.Errorf("%s NOT: want IN or BETWEEN", col.name)
		}
	}
	switch {
	case p.peekWord("IN"):
		p.i++
		if !p.peekOp("(") {
			return nil, fmt.Errorf("%s IN: want a parenthesised list of literals", col.name)
		}
		p.i++
		for {
			l, err := p.literal(col)
			if err != nil {
				return nil, err
			}
			c.lits = append(c.lits, l)
			if p.peekOp(",") {
				p.i++
				continue
			}
			if !p.peekOp(")") {
				return nil, fmt.Errorf("%s IN: missing ')'", col.name)
			}
			p.i++
			break
		}
		c.op = "in"
		return c, nil
	case p.peekWord("BETWEEN"):
		p.i++
		lo, err := p.literal(col)
		if err != nil {
			return nil, err
		}
		if !p.peekWord("AND") {
			return nil, fmt.Errorf("%s BETWEEN: want AND", col.name)
		}
		p.i++
		hi, err := p.literal(col)
		if err != nil {
			return nil, err
		}
		c.op, c.lits = "between", []filterLit{lo, hi}
		return c, nil
	}
	if p.i >= len(p.toks) || p.toks[p.i].kind != 'o' || !strings.Contains("= <> != < <= > >=", p.toks[p.i].text) || p.toks[p.i].text == "(" || p.toks[p.i].text == ")" || p.toks[p.i].text == "," {
		what := "the end"
		if p.i < len(p.toks) {
			what = strconv.Quote(p.toks[p.i].text)
		}
		return nil, fmt.Errorf("%s followed by %s: not accepted (%s)", col.name, what, filterAccepted)
	}
	c.op = p.toks[p.i].text
	if c.op == "!=" {
		c.op = "<>"
	}
	p.i++
	l, err := p.literal(col)
	if err != nil {
		return nil, err
	}
	c.lits = []filterLit{l}
	return c, nil
}

func (p *filterParser) literal(col filterIdent) (filterLit, error) {
	if p.i >= len(p.toks) {
		return filterLit{}, fmt.Errorf("%s: the condition ends where a literal was expected", col.name)
	}
	t := p.toks[p.i]
	p.i++
	switch {
	case t.kind == 'n':
		return filterLit{'n', t.text}, nil
	case t.kind == 's':
		return filterLit{'s', t.text}, nil
	case t.kind == 'w' && (strings.EqualFold(t.text, "TRUE") || strings.EqualFold(t.text, "FALSE")):
		return filterLit{'b', strings.ToLower(t.text)}, nil
	case t.kind == 'w' && strings.EqualFold(t.text, "NULL"):
		return filterLit{}, fmt.Errorf("%s compared with NULL is never true: use IS NULL or IS NOT NULL", col.name)
	}
	return filterLit{}, fmt.Errorf("%s compared with %q: only literals are accepted, not columns or expressions (%s)", col.name, t.text, filterAccepted)
}

func isFilterKeyword(w string) bool {
	for _, k := range filterKeywords {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

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
	boundAnd struct{ l, r boundNode }
	boundOr  struct{ l, r boundNode }
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
	a, b := n.l.eval(r), n.r.eval(r)
	switch {
	case a == triFalse || b == triFalse:
		return triFalse
	case a == triTrue && b == triTrue:
		return triTrue
	}
	return triUnknown
}

func (n boundOr) eval(r Row) tri {
	a, b := n.l.eval(r), n.r.eval(r)
	switch {
	case a == triTrue || b == triTrue:
		return triTrue
	case a == triFalse && b == triFalse:
		return triFalse
	}
	return triUnknown
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

func bindFilter(n filterNode, sc *iceberg.Schema) (boundNode, error) {
	switch n := n.(type) {
	case filterAnd:
		l, err := bindFilter(n.l, sc)
		if err != nil {
			return nil, err
		}
		r, err := bindFilter(n.r, sc)
		return boundAnd{l, r}, err
	case filterOr:
		l, err := bindFilter(n.l, sc)
		if err != nil {
			return nil, err
		}
		r, err := bindFilter(n.r, sc)
		return boundOr{l, r}, err
	case filterNot:
		x, err := bindFilter(n.x, sc)
		return boundNot{x}, err
	case filterCmp:
		return bindCmp(n, sc)
	}
	return nil, fmt.Errorf("filter node %T", n)
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
		return nil, fmt.Errorf("unknown column %q (the table's columns: %s)", c.col.name, topLevelNames(sc))
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
			return float32(f), err
		}, nil
	case iceberg.Float64Type:
		return compareOrdered[float64], func(l filterLit) (any, error) {
			if err := wantKind(l, 'n', "a number"); err != nil {
				return nil, err
			}
			return strconv.ParseFloat(l.text, 64)
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
