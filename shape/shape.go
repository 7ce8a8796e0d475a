package shape

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/values"
)

// errNoSchema is a commit without a schema: nothing to resolve columns
// against.
var errNoSchema = errors.New("no schema")

var (
	_ cdc.Policy = (*Shaping)(nil)
	_ cdc.Stage  = (*Shaper)(nil)
)

// Shaping is a pipeline's column and row shaping, with Debezium's options:
// column.include.list / column.exclude.list, column.truncate.to.N.chars,
// column.mask.with.N.chars, column.mask.hash[.v2].<algorithm>.with.salt.<salt>
// and skipped.operations. Columns are named by fully-qualified regular
// expressions, <namespace>.<table>.<column>, matched whole and regardless
// of case, as Debezium matches <schema>.<table>.<column>; a list is
// comma-separated (a comma inside a pattern is written \,).
//
// It is applied once, before the encoders: what it removes or masks never
// reaches a sink, a log line, changed_fields, /status or an error.
type Shaping struct {
	Include, Exclude *ColumnList
	// Rules hold the masks, in Debezium's order: every truncation, then
	// every mask, hash and v2 hash; a column takes the first rule that
	// matches it, the others do not apply to it.
	Rules []ColumnRule
	// Skipped is skipped.operations: the events of these ops are not
	// delivered (their positions are checkpointed).
	Skipped map[cdc.Op]bool
}

// Empty reports whether s shapes nothing.
func (s *Shaping) Empty() bool {
	return s == nil || s.Include == nil && s.Exclude == nil && len(s.Rules) == 0 && len(s.Skipped) == 0
}

// SkippedOps returns the skipped operations (nil-safe).
func (s *Shaping) SkippedOps() map[cdc.Op]bool {
	if s == nil {
		return nil
	}
	return s.Skipped
}

// ColumnList is a list of fully-qualified column patterns.
type ColumnList struct {
	Option   string // the configuration key, for errors
	patterns []*regexp.Regexp
	texts    []string
}

// ParseColumnList parses a comma-separated list of patterns.
func ParseColumnList(option, value string) (*ColumnList, error) {
	l := &ColumnList{Option: option}
	for _, p := range splitPatterns(value) {
		if p == "" {
			continue
		}
		re, err := regexp.Compile("^(?i:" + p + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s: pattern %q: %v", option, p, regexpReason(err))
		}
		l.patterns = append(l.patterns, re)
		l.texts = append(l.texts, p)
	}
	if len(l.patterns) == 0 {
		return nil, fmt.Errorf("%s: empty list of columns", option)
	}
	return l, nil
}

// splitPatterns splits at commas not escaped with a backslash.
func splitPatterns(s string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == ',':
			cur.WriteByte(',')
			i++
		case s[i] == ',':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

func regexpReason(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}

func (l *ColumnList) matches(fqn string) bool {
	if l == nil {
		return false
	}
	for _, re := range l.patterns {
		if re.MatchString(fqn) {
			return true
		}
	}
	return false
}

// missing returns the patterns of l that spell one column of table
// literally (no regular-expression syntax beyond an escaped dot) and name
// none of cols: a mistyped column.
func (l *ColumnList) missing(table string, cols []string) []string {
	var out []string
	for _, p := range l.texts {
		lit := strings.ReplaceAll(p, `\.`, ".")
		if strings.ContainsAny(lit, `\^$*+?()[]{}|`) {
			continue
		}
		col, ok := cutPrefixFold(lit, table+".")
		if !ok || strings.Contains(col, ".") {
			continue
		}
		if !slices.ContainsFunc(cols, func(c string) bool { return strings.EqualFold(c, col) }) {
			out = append(out, col)
		}
	}
	return out
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// RuleKind is what a column rule does to a value.
type RuleKind uint8

const (
	RuleTruncate RuleKind = iota // column.truncate.to.N.chars
	RuleMask                     // column.mask.with.N.chars
	RuleHash                     // column.mask.hash[.v2].<algorithm>.with.salt.<salt>
)

// ColumnRule is one of Debezium's column masks.
type ColumnRule struct {
	Kind    RuleKind
	Length  int // truncate: the most characters; mask: the number of '*'
	Hasher  *Hasher
	Columns *ColumnList // Columns.Option is the rule's configuration key
}

var (
	truncateKey = regexp.MustCompile(`^column\.truncate\.to\.(\d+)\.chars$`)
	maskKey     = regexp.MustCompile(`^column\.mask\.with\.(\d+)\.chars$`)
	hashKey     = regexp.MustCompile(`^column\.mask\.hash\.(v2\.)?([^.]+)\.with\.salt\.(.*)$`)
)

// Parse builds the shaping of a pipeline from Debezium's options
// (key: value). Its errors name the option.
func Parse(opts map[string]string) (*Shaping, error) {
	s := &Shaping{}
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a stable order among rules of one kind
	var truncs, masks, hashes, hashesV2 []ColumnRule
	for _, k := range keys {
		v := opts[k]
		switch k {
		case "column.include.list", "column.exclude.list":
			l, err := ParseColumnList(k, v)
			if err != nil {
				return nil, err
			}
			if k == "column.include.list" {
				s.Include = l
			} else {
				s.Exclude = l
			}
			continue
		case "skipped.operations":
			sk, err := ParseSkippedOperations(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			s.Skipped = sk
			continue
		}
		var r ColumnRule
		switch {
		case truncateKey.MatchString(k):
			r.Kind = RuleTruncate
			n, err := strconv.Atoi(truncateKey.FindStringSubmatch(k)[1])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("%s: the length must be a number of at least 1", k)
			}
			r.Length = n
		case maskKey.MatchString(k):
			r.Kind = RuleMask
			n, err := strconv.Atoi(maskKey.FindStringSubmatch(k)[1])
			if err != nil || n < 1 || n > 1<<16 {
				return nil, fmt.Errorf("%s: the number of characters must be 1 to 65536", k)
			}
			r.Length = n
		case hashKey.MatchString(k):
			m := hashKey.FindStringSubmatch(k)
			ver := HashV1
			if m[1] != "" {
				ver = HashV2
			}
			h, err := NewHasher(m[2], m[3], ver)
			if err != nil {
				// The salt is a secret of sorts: the error names the
				// algorithm and never repeats the key whole.
				return nil, fmt.Errorf("column.mask.hash.%s%s.with.salt.…: %w", m[1], m[2], err)
			}
			r.Kind, r.Hasher = RuleHash, h
		default:
			if i := strings.Index(k, ".with.salt."); i >= 0 {
				k = k[:i] + ".with.salt.…" // the salt stays out of errors
			}
			return nil, fmt.Errorf("%s: unknown option (want column.truncate.to.N.chars, column.mask.with.N.chars, column.mask.hash.<algorithm>.with.salt.<salt> or column.mask.hash.v2.<algorithm>.with.salt.<salt>)", k)
		}
		l, err := ParseColumnList(ruleName(k, r), v)
		if err != nil {
			return nil, err
		}
		r.Columns = l
		switch {
		case r.Kind == RuleTruncate:
			truncs = append(truncs, r)
		case r.Kind == RuleMask:
			masks = append(masks, r)
		case r.Hasher.version == HashV1:
			hashes = append(hashes, r)
		default:
			hashesV2 = append(hashesV2, r)
		}
	}
	if s.Include != nil && s.Exclude != nil {
		return nil, errors.New("column.include.list and column.exclude.list: set one of them, not both")
	}
	s.Rules = slices.Concat(truncs, masks, hashes, hashesV2)
	return s, nil
}

// ruleName is the rule's option as errors name it: a hash's without its
// salt.
func ruleName(key string, r ColumnRule) string {
	if r.Kind != RuleHash {
		return key
	}
	m := hashKey.FindStringSubmatch(key)
	return "column.mask.hash." + m[1] + m[2] + ".with.salt.…"
}

// ParseSkippedOperations parses skipped.operations: a comma-separated list
// of c, u, d, r and t (Debezium's truncate, which icecdc never emits), or
// none.
func ParseSkippedOperations(v string) (map[cdc.Op]bool, error) {
	out := map[cdc.Op]bool{}
	parts := strings.Split(v, ",")
	for _, p := range parts {
		switch p = strings.TrimSpace(p); p {
		case "none":
			if len(parts) > 1 {
				return nil, errors.New("'none' cannot be listed with other operations")
			}
		case "c", "u", "d", "r":
			out[cdc.Op(p[0])] = true
		case "t":
		default:
			return nil, fmt.Errorf("%q: want a comma-separated list of c, u, d, r, t, or none", p)
		}
	}
	return out, nil
}

// Shaper is Shaping resolved for one table. Columns are matched by name
// against each schema the table's events come in, so a column added later
// is shaped too; a column a rule matched when the shaper was made is
// followed by field id, so a rename keeps its mask, and a schema without
// it stops the table with an error naming the rule.
type Shaper struct {
	table string
	sh    *Shaping
	held  map[int]string // field id -> the rule's option, for the columns masked at the start

	mu   sync.Mutex
	last *shapeView
}

// shapeView is a Shaper resolved against one schema.
type shapeView struct {
	from   *iceberg.Schema
	to     *iceberg.Schema
	keep   []int             // indexes of from's top-level fields to keep
	apply  []func(v any) any // per kept field; nil keeps the value
	masked []int             // field ids of `to` whose values a mask or hash replaced
	gone   map[int]bool      // every field id (nested ones too) the view leaves out
}

// ForTable resolves s for table (namespace.table) against its current
// schema sc and key columns keys (empty: the row id): a *Shaper, or nil
// when s shapes nothing. Shaping runs first: it reads no stage before it.
// Its errors name the option; the pipeline names the table.
func (s *Shaping) ForTable(table string, sc *iceberg.Schema, keys []string, _ []cdc.Stage) (cdc.Stage, error) {
	if s.Empty() {
		return nil, nil
	}
	sh, err := s.forTable(table, sc, keys)
	if err != nil {
		return nil, err
	}
	return sh, nil
}

func (s *Shaping) forTable(table string, sc *iceberg.Schema, keys []string) (*Shaper, error) {
	if sc == nil {
		return nil, errNoSchema
	}
	sh := &Shaper{table: table, sh: s, held: map[int]string{}}
	var cols []string
	for _, f := range sc.Fields() {
		cols = append(cols, f.Name)
	}
	lists := []*ColumnList{s.Include, s.Exclude}
	for _, r := range s.Rules {
		lists = append(lists, r.Columns)
	}
	for _, l := range lists {
		if l == nil {
			continue
		}
		if miss := l.missing(table, cols); len(miss) > 0 {
			return nil, fmt.Errorf("%s: no column %q (the table's columns: %s)", l.Option, miss[0], strings.Join(cols, ", "))
		}
	}
	v, err := sh.view(sc)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		top, _, _ := strings.Cut(k, ".")
		f, ok := sc.FindFieldByName(top)
		if ok && v.gone[f.ID] {
			opt := "column.exclude.list"
			if s.Include != nil {
				opt = "column.include.list"
			}
			return nil, fmt.Errorf("%s: %q is the table's key and cannot be left out (choose the key with message.key.columns or tables[].key)", opt, k)
		}
	}
	for _, f := range sc.Fields() {
		if r := sh.ruleFor(table, f.Name); r != nil && !v.gone[f.ID] {
			sh.held[f.ID] = r.Columns.Option
		}
	}
	sh.last = v
	return sh, nil
}

func (sh *Shaper) ruleFor(table, col string) *ColumnRule {
	fqn := table + "." + col
	for i := range sh.sh.Rules {
		if sh.sh.Rules[i].Columns.matches(fqn) {
			return &sh.sh.Rules[i]
		}
	}
	return nil
}

// Excludes reports whether the top-level column holding col (a name or a
// path through structs) is left out; false for a nil shaper.
func (sh *Shaper) Excludes(col string) bool {
	if sh == nil {
		return false
	}
	top, _, _ := strings.Cut(col, ".")
	return sh.excluded(top)
}

func (sh *Shaper) excluded(col string) bool {
	fqn := sh.table + "." + col
	if sh.sh.Include != nil {
		return !sh.sh.Include.matches(fqn)
	}
	return sh.sh.Exclude.matches(fqn)
}

// view resolves the shaper against sc.
func (sh *Shaper) view(sc *iceberg.Schema) (*shapeView, error) {
	v := &shapeView{from: sc, gone: map[int]bool{}}
	present := map[int]bool{}
	var fields []iceberg.NestedField
	for i, f := range sc.Fields() {
		present[f.ID] = true
		if sh.excluded(f.Name) {
			markGone(v.gone, f)
			continue
		}
		r := sh.ruleFor(sh.table, f.Name)
		if opt, ok := sh.held[f.ID]; ok && r == nil {
			// Renamed out of the rule's pattern: the mask stays with the
			// column.
			r = sh.ruleByOption(opt)
		}
		fn, err := r.valueFunc(f)
		if err != nil {
			return nil, err
		}
		if r != nil && r.Kind != RuleTruncate {
			v.masked = append(v.masked, f.ID)
		}
		v.keep = append(v.keep, i)
		v.apply = append(v.apply, fn)
		fields = append(fields, f)
	}
	for id, opt := range sh.held {
		if !present[id] {
			return nil, cdc.Permanent(fmt.Errorf("%s: the masked column (field id %d) is not in schema %d: it was dropped; change the option and restart", opt, id, sc.ID))
		}
	}
	var ids []int
	for _, id := range sc.IdentifierFieldIDs {
		if !v.gone[id] {
			ids = append(ids, id)
		}
	}
	v.to = iceberg.NewSchemaWithIdentifiers(sc.ID, ids, fields...)
	return v, nil
}

func (sh *Shaper) ruleByOption(opt string) *ColumnRule {
	for i := range sh.sh.Rules {
		if sh.sh.Rules[i].Columns.Option == opt {
			return &sh.sh.Rules[i]
		}
	}
	return nil
}

// markGone adds f's id and every id nested in it.
func markGone(gone map[int]bool, f iceberg.NestedField) {
	gone[f.ID] = true
	if nt, ok := f.Type.(iceberg.NestedType); ok {
		for _, c := range nt.Fields() {
			markGone(gone, c)
		}
	}
}

// valueFunc returns what r does to values of f; nil for a nil rule. Masks
// and hashes apply to string columns, truncation to string and binary
// ones, as Debezium's apply to character columns only; a rule matching
// another column is refused, since Debezium would deliver its value
// unmasked.
func (r *ColumnRule) valueFunc(f iceberg.NestedField) (func(any) any, error) {
	if r == nil {
		return nil, nil
	}
	_, isString := f.Type.(iceberg.StringType)
	_, isBinary := f.Type.(iceberg.BinaryType)
	refuse := func(what string) error {
		return fmt.Errorf("%s: column %s is %s, and this option applies to %s only (leave it out with column.exclude.list)",
			r.Columns.Option, f.Name, f.Type, what)
	}
	switch r.Kind {
	case RuleTruncate:
		n := r.Length
		switch {
		case isString:
			return func(v any) any {
				if s, ok := v.(string); ok {
					return truncateUTF16(s, n)
				}
				return v
			}, nil
		case isBinary:
			return func(v any) any {
				if b, ok := v.([]byte); ok && len(b) > n {
					return b[:n:n]
				}
				return v
			}, nil
		}
		return nil, refuse("string and binary columns")
	case RuleMask:
		if !isString {
			return nil, refuse("string columns")
		}
		// Boxed once: a string made an interface on every call is an
		// allocation per masked value.
		var mask any = strings.Repeat("*", r.Length)
		// Debezium's mask replaces a null too.
		return func(any) any { return mask }, nil
	default:
		if !isString {
			return nil, refuse("string columns")
		}
		h := r.Hasher
		return func(v any) any {
			if s, ok := v.(string); ok {
				return h.Hash(s)
			}
			return v // null stays null, as Debezium's hash leaves it
		}, nil
	}
}

func (sh *Shaper) viewFor(sc *iceberg.Schema) (*shapeView, error) {
	if sc == nil {
		return nil, errNoSchema
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.last != nil && sh.last.from == sc {
		return sh.last, nil
	}
	v, err := sh.view(sc)
	if err != nil {
		return nil, err
	}
	sh.last = v
	return v, nil
}

// Apply shapes events of c: it drops the skipped operations' events and
// shapes every image. It returns the commit to encode them with (c with
// the shaped schema) and the kept events, which keep their indexes.
func (sh *Shaper) Apply(c *cdc.Commit, evs []cdc.Event) (*cdc.Commit, []cdc.Event, error) {
	v, err := sh.viewFor(c.Table.Schema)
	if err != nil {
		return nil, nil, err
	}
	kept := make([]cdc.Event, 0, len(evs))
	var slab cdc.RowSlab
	for _, e := range evs {
		if sh.sh.Skipped[e.Op] {
			continue
		}
		if err := e.MaterializeRows(); err != nil {
			return nil, nil, fmt.Errorf("event %d: %w", e.Index, err)
		}
		e.Before, e.After = v.shape(&slab, e.Before), v.shape(&slab, e.After)
		kept = append(kept, e)
	}
	sc := *c
	sc.Table.Schema = v.to
	sc.Table.MaskedFields = v.masked
	sc.Events, sc.Rest, sc.Total = nil, nil, 0
	return &sc, kept, nil
}

func (v *shapeView) shape(slab *cdc.RowSlab, r values.Row) values.Row {
	if r == nil {
		return nil
	}
	out := slab.Row(len(v.keep))
	for i, k := range v.keep {
		var x any
		if k < len(r) {
			x = r[k]
		}
		if fn := v.apply[i]; fn != nil {
			x = fn(x)
		}
		out[i] = x
	}
	return out
}

// SchemaChange returns ch as the shaped columns see it: the previous
// schema without the columns left out, and no change of theirs.
func (sh *Shaper) SchemaChange(ch *cdc.SchemaChange) (*cdc.SchemaChange, error) {
	if ch == nil {
		return nil, nil
	}
	out := *ch
	gone := map[int]bool{}
	if ch.Previous != nil {
		// The previous schema is shaped without holding it to the
		// columns masked now: an older schema may lack them.
		pv, err := (&Shaper{table: sh.table, sh: sh.sh}).view(ch.Previous)
		if err != nil {
			return nil, err
		}
		out.Previous = pv.to
		gone = pv.gone
	}
	sh.mu.Lock()
	last := sh.last
	sh.mu.Unlock()
	if last != nil {
		for id := range last.gone {
			gone[id] = true
		}
	}
	out.Changes = nil
	for _, fc := range ch.Changes {
		if fc.FieldID != 0 && gone[fc.FieldID] {
			continue
		}
		out.Changes = append(out.Changes, fc)
	}
	return &out, nil
}
