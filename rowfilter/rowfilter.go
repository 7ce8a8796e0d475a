package rowfilter

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Filter keeps the rows of an on-demand snapshot that a condition
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
//
// A condition comes from whoever can write to the signal topic, so its
// cost is bounded: at most MaxBytes long and MaxDepth deep
// (parentheses and NOTs), parsed with that much recursion at most, and a
// chain of ANDs or ORs is one node, not a chain of nested ones. No error
// quotes a literal or a token where a literal may stand: a literal may be
// a value of a masked column.
type Filter struct {
	text string
	root filterNode
}

// The bounds of a condition. A filter is a few comparisons in practice;
// 64 KiB holds an IN list of thousands of ids.
const (
	MaxBytes = 64 << 10
	MaxDepth = 64
)

// filterNode is a parsed condition, not yet bound to a schema.
type filterNode interface{}

type (
	filterAnd []filterNode // two or more
	filterOr  []filterNode // two or more
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

// Parse parses a condition; its error says what is not accepted
// and where (a byte offset), never with a literal's text.
func Parse(text string) (*Filter, error) {
	if len(text) > MaxBytes {
		return nil, fmt.Errorf("%d bytes long, more than the %d a filter may have", len(text), MaxBytes)
	}
	toks, err := filterTokens(text)
	if err != nil {
		return nil, err
	}
	p := &filterParser{toks: toks, end: len(text)}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(p.toks) {
		return nil, fmt.Errorf("unexpected %s after the condition", p.describe(p.i))
	}
	return &Filter{text: text, root: root}, nil
}

// String returns the condition as written.
func (f *Filter) String() string { return f.text }

// Redact returns a condition with every literal replaced by ?, as
// logs and errors show it: a literal may be a value of a masked or
// excluded column (customer = 'jane@example.com'), which must not reach
// them. Column names (a name where a condition starts) and the shape of
// the condition stay; any other name or quoted name stands where a
// literal does (name = "jane", name = jane) and is a ? too, and so are
// TRUE and FALSE. A text that does not tokenize is shown as (a condition
// that does not parse).
func Redact(text string) string {
	if len(text) > MaxBytes {
		return "(a condition too long to show)"
	}
	toks, err := filterTokens(text)
	if err != nil {
		return "(a condition that does not parse)"
	}
	var b strings.Builder
	column, between, list := true, false, false
	for i, t := range toks {
		if i > 0 && t.text != ")" && t.text != "," && toks[i-1].text != "(" {
			b.WriteByte(' ')
		}
		show := t.text
		switch {
		case t.kind == 's' || t.kind == 'n':
			show, column = "?", false
		case t.kind == 'o':
			switch t.text {
			case "(":
				list = i > 0 && toks[i-1].kind == 'w' && strings.EqualFold(toks[i-1].text, "IN")
				column = !list
			case ")":
				list, column = false, false
			default: // a comparison, or a list's comma: a literal follows
				column = false
			}
		case t.kind == 'w' && isFilterKeyword(t.text):
			switch w := strings.ToUpper(t.text); w {
			case "TRUE", "FALSE":
				show = "?"
			case "AND":
				column, between = !between, false
			case "OR", "NOT":
				column = column || w == "OR"
			case "BETWEEN":
				between, column = true, false
			}
		case column: // a name where a condition starts: the column
			if t.kind == 'q' {
				show = strconv.Quote(t.text)
			}
			column = false
		default: // a name where a literal stands
			show = "?"
		}
		b.WriteString(show)
	}
	return b.String()
}

type filterToken struct {
	kind byte // 'w' word, 'q' quoted identifier, 's' string, 'n' number, 'o' operator or punctuation
	text string
	at   int // byte offset in the condition
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
					return nil, fmt.Errorf("unterminated string: the quote at byte %d is never closed", i)
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
			toks = append(toks, filterToken{'s', b.String(), i})
			i = j + 1
		case c == '"' || c == '`':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, fmt.Errorf("unterminated quoted name: the %c at byte %d is never closed", c, i)
			}
			toks = append(toks, filterToken{'q', s[i+1 : i+1+j], i})
			i += j + 2
		case c >= '0' && c <= '9' || (c == '-' || c == '+' || c == '.') && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '.'):
			j := i + 1
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			toks = append(toks, filterToken{'n', s[i:j], i})
			i = j
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] == '.' || unicode.IsLetter(rune(s[j])) || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, filterToken{'w', s[i:j], i})
			i = j
		default:
			for _, op := range []string{"<>", "!=", "<=", ">=", "=", "<", ">", "(", ")", ","} {
				if strings.HasPrefix(s[i:], op) {
					toks = append(toks, filterToken{'o', op, i})
					i += len(op)
					goto next
				}
			}
			// Outside any quote, so not a literal's; shown when it is
			// punctuation, else only its place.
			if c < 0x80 && (unicode.IsPunct(rune(c)) || unicode.IsSymbol(rune(c))) {
				return nil, fmt.Errorf("%q at byte %d is not accepted (%s)", s[i:i+1], i, filterAccepted)
			}
			return nil, fmt.Errorf("the character at byte %d is not accepted (%s)", i, filterAccepted)
		next:
		}
	}
	return toks, nil
}

// filterAccepted says what the language takes, for errors.
const filterAccepted = "icecdc takes comparisons of a column with a literal (=, <>, !=, <, <=, >, >=), IS [NOT] NULL, [NOT] IN (...), [NOT] BETWEEN ... AND ..., joined by AND, OR, NOT and parentheses"

// filterParser is a recursive-descent parser whose recursion is bounded:
// each level of parentheses or NOT is one level of depth, and a
// condition deeper than MaxDepth is refused before the stack grows
// with it.
type filterParser struct {
	toks  []filterToken
	i     int
	depth int
	end   int // the condition's length, for "at the end"
}

func (p *filterParser) peekWord(w string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == 'w' && strings.EqualFold(p.toks[p.i].text, w)
}

func (p *filterParser) peekOp(op string) bool {
	return p.i < len(p.toks) && p.toks[p.i].kind == 'o' && p.toks[p.i].text == op
}

// describe names token i for an error by its kind and place, never by
// its text unless it is an operator or a keyword: a name may stand
// where a literal does.
func (p *filterParser) describe(i int) string {
	if i >= len(p.toks) {
		return "the end of the condition"
	}
	t := p.toks[i]
	what := "a name"
	switch {
	case t.kind == 'o':
		what = strconv.Quote(t.text)
	case t.kind == 'w' && isFilterKeyword(t.text) && !strings.EqualFold(t.text, "TRUE") && !strings.EqualFold(t.text, "FALSE"):
		what = strings.ToUpper(t.text)
	case t.kind == 'w':
	case t.kind == 'q':
		what = "a quoted name"
	case t.kind == 's':
		what = "a string"
	default:
		what = "a literal" // a number or a boolean
	}
	return fmt.Sprintf("%s at byte %d", what, t.at)
}

// deeper enters one level of nesting, or refuses the condition.
func (p *filterParser) deeper() error {
	if p.depth++; p.depth > MaxDepth {
		return fmt.Errorf("nested deeper than %d levels of parentheses and NOT at byte %d", MaxDepth, p.toks[p.i].at)
	}
	return nil
}

func (p *filterParser) or() (filterNode, error) {
	xs, err := p.list("OR", p.and)
	switch {
	case err != nil:
		return nil, err
	case len(xs) == 1:
		return xs[0], nil
	}
	return filterOr(xs), nil
}

func (p *filterParser) and() (filterNode, error) {
	xs, err := p.list("AND", p.not)
	switch {
	case err != nil:
		return nil, err
	case len(xs) == 1:
		return xs[0], nil
	}
	return filterAnd(xs), nil
}

// list parses one or more terms of next joined by the word op.
func (p *filterParser) list(op string, next func() (filterNode, error)) ([]filterNode, error) {
	var xs []filterNode
	for {
		x, err := next()
		if err != nil {
			return nil, err
		}
		xs = append(xs, x)
		if !p.peekWord(op) {
			return xs, nil
		}
		p.i++
	}
}

func (p *filterParser) not() (filterNode, error) {
	if p.peekWord("NOT") || p.peekOp("(") {
		if err := p.deeper(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
	}
	if p.peekWord("NOT") {
		p.i++
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return filterNot{x}, nil
	}
	if p.peekOp("(") {
		open := p.toks[p.i].at
		p.i++
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if !p.peekOp(")") {
			return nil, fmt.Errorf("missing ')' for the '(' at byte %d: found %s", open, p.describe(p.i))
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
		return nil, fmt.Errorf("%s where a column was expected: a condition starts with a column name (%s)", p.describe(p.i), filterAccepted)
	}
	p.i++
	if p.peekOp("(") {
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
			return nil, fmt.Errorf("%s IS: want NULL or NOT NULL, found %s", col.name, p.describe(p.i))
		}
		p.i++
		c.op = "isnull"
		return c, nil
	}
	if p.peekWord("NOT") {
		p.i++
		c.negate = true
		if !p.peekWord("IN") && !p.peekWord("BETWEEN") {
			return nil, fmt.Errorf("%s NOT: want IN or BETWEEN, found %s", col.name, p.describe(p.i))
		}
	}
	switch {
	case p.peekWord("IN"):
		p.i++
		if !p.peekOp("(") {
			return nil, fmt.Errorf("%s IN: want a parenthesised list of literals, found %s", col.name, p.describe(p.i))
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
				return nil, fmt.Errorf("%s IN: missing ')', found %s", col.name, p.describe(p.i))
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
			return nil, fmt.Errorf("%s BETWEEN: want AND, found %s", col.name, p.describe(p.i))
		}
		p.i++
		hi, err := p.literal(col)
		if err != nil {
			return nil, err
		}
		c.op, c.lits = "between", []filterLit{lo, hi}
		return c, nil
	}
	if p.i >= len(p.toks) || p.toks[p.i].kind != 'o' || !isFilterComparison(p.toks[p.i].text) {
		return nil, fmt.Errorf("%s followed by %s: not accepted (%s)", col.name, p.describe(p.i), filterAccepted)
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

func isFilterComparison(op string) bool {
	switch op {
	case "=", "<>", "!=", "<", "<=", ">", ">=":
		return true
	}
	return false
}

func (p *filterParser) literal(col filterIdent) (filterLit, error) {
	if p.i >= len(p.toks) {
		return filterLit{}, fmt.Errorf("%s: the condition ends where a literal was expected", col.name)
	}
	t := p.toks[p.i]
	switch {
	case t.kind == 'n':
		p.i++
		return filterLit{'n', t.text}, nil
	case t.kind == 's':
		p.i++
		return filterLit{'s', t.text}, nil
	case t.kind == 'w' && (strings.EqualFold(t.text, "TRUE") || strings.EqualFold(t.text, "FALSE")):
		p.i++
		return filterLit{'b', strings.ToLower(t.text)}, nil
	case t.kind == 'w' && strings.EqualFold(t.text, "NULL"):
		return filterLit{}, fmt.Errorf("%s compared with NULL is never true: use IS NULL or IS NOT NULL", col.name)
	case t.kind == 'q':
		return filterLit{}, fmt.Errorf("%s compared with %s: a double-quoted or `quoted` text is a column name in SQL; write a string literal in single quotes", col.name, p.describe(p.i))
	}
	return filterLit{}, fmt.Errorf("%s compared with %s: only literals are accepted, not columns or expressions (%s)", col.name, p.describe(p.i), filterAccepted)
}

func isFilterKeyword(w string) bool {
	for _, k := range filterKeywords {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}
