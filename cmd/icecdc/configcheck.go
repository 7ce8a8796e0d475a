package main

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/icecdc/icecdc/internal/suggest"
)

// decodeConfig parses raw, expands ${NAME} inside its scalar values (see
// expandEnv), checks every key and value against the yaml tags and field
// types of c, and decodes it into c.
//
// The check walks the parsed nodes beside the struct by reflection, so
// that every section gets the same errors without a line per setting:
// an unknown key lists the section's keys with the nearest as a
// suggestion, and a value of the wrong type says what is wanted. yaml.v3
// itself only offers Go's view ("field x not found in type struct {…}",
// "cannot unmarshal !!int into time.Duration").
func decodeConfig(raw []byte, getenv func(string) string, c *Config) error {
	marked, refs := markRefs(string(raw))
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(marked), &doc); err != nil {
		return syntaxError(raw, refs.unmark(err.Error()))
	}
	if len(doc.Content) == 0 {
		return nil // an empty file: validate says what is missing
	}
	ck := &checker{getenv: getenv, refs: refs, seen: map[*yaml.Node]bool{}, lines: map[string]int{}}
	ck.walk(doc.Content[0], reflect.TypeOf(c).Elem(), "")
	c.lines = ck.lines
	if len(ck.missing) > 0 {
		slices.Sort(ck.missing)
		return fmt.Errorf("config: environment variable %s is not set", strings.Join(slices.Compact(ck.missing), ", "))
	}
	if len(ck.errs) > 0 {
		return firstError(ck.errs)
	}
	if err := doc.Content[0].Decode(c); err != nil {
		// The check above refuses what yaml.v3 would; this is what it
		// did not foresee, kept to its first line.
		return fmt.Errorf("config: %s", firstLine(strings.TrimPrefix(refs.unmark(err.Error()), "yaml: unmarshal errors:\n")))
	}
	c.transformOrder = mappingKeys(doc.Content[0], "transforms")
	return nil
}

// mappingKeys returns the keys of the mapping under key in the document
// n, in the order the file lists them; nil when there is none.
func mappingKeys(n *yaml.Node, key string) []string {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != key || n.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		var keys []string
		m := n.Content[i+1]
		for j := 0; j+1 < len(m.Content); j += 2 {
			keys = append(keys, m.Content[j].Value)
		}
		return keys
	}
	return nil
}

// yamlLineRE finds the line number in a yaml.v3 syntax error.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxError is a YAML syntax error in one line, naming a tab where one
// indents a line (YAML allows only spaces there, and yaml.v3 calls it "a
// character that cannot start any token").
func syntaxError(raw []byte, msg string) error {
	upTo := -1
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		upTo, _ = strconv.Atoi(m[1])
	}
	for i, line := range strings.Split(string(raw), "\n") {
		// The scanner may stop on the line before the tab.
		if upTo >= 0 && i > upTo && !strings.Contains(msg, "tab") {
			break
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if strings.Contains(indent, "\t") {
			return fmt.Errorf("config: line %d: a tab indents the line: YAML indents with spaces only", i+1)
		}
	}
	return fmt.Errorf("config: %s", firstLine(strings.TrimPrefix(msg, "yaml: ")))
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// firstError is the first of errs (errors.Join's included) with a count
// of the others: an error is one line, and two run together read as one.
func firstError(errs []error) error {
	var flat []error
	for _, err := range errs {
		flat = flattenErrors(flat, err)
	}
	switch len(flat) {
	case 0:
		return nil
	case 1:
		return flat[0]
	case 2:
		return fmt.Errorf("%w (and 1 more error)", flat[0])
	}
	return fmt.Errorf("%w (and %d more errors)", flat[0], len(flat)-1)
}

// checker walks a parsed configuration beside its Go type.
type checker struct {
	getenv  func(string) string
	refs    *envRefs
	missing []string
	errs    []error
	// seen holds the nodes already walked: an anchored node is checked
	// (and expanded) once however many aliases name it, which also keeps
	// an alias bomb from costing more than its size.
	seen map[*yaml.Node]bool
	// lines are the line numbers of the settings by dotted path
	// (tables[0].name), for the errors of Config.validate.
	lines map[string]int
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

func (ck *checker) fail(n *yaml.Node, path, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if path != "" {
		msg = path + ": " + msg
	}
	ck.errs = append(ck.errs, fmt.Errorf("config: line %d: %s", n.Line, msg))
}

func (ck *checker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || ck.seen[n] {
		return
	}
	ck.seen[n] = true
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // the setting's default
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		ck.scalar(n, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		ck.section(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			ck.fail(n, path, "want a section of key: value pairs, not %s", describe(n, nil))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			kpath := joinPath(path, ck.refs.unmark(k.Value))
			ck.lines[kpath] = k.Line
			ck.walk(k, t.Key(), path)
			ck.walk(n.Content[i+1], t.Elem(), kpath)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			ck.fail(n, path, "want a list ([a, b] or lines starting with -), not %s", describe(n, nil))
			return
		}
		for i, e := range n.Content {
			ck.lines[fmt.Sprintf("%s[%d]", path, i)] = e.Line
			ck.walk(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Interface:
	default:
		ck.scalar(n, t, path)
	}
}

// section checks the keys of a mapping against the fields of struct t.
func (ck *checker) section(n *yaml.Node, t reflect.Type, path string) {
	fields, names := yamlFields(t)
	if n.Kind != yaml.MappingNode {
		ck.fail(n, path, "want a section with keys (%s), not %s", strings.Join(names, ", "), describe(n, nil))
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" { // <<: *defaults
			if v.Kind == yaml.SequenceNode {
				for _, m := range v.Content {
					ck.walk(m, t, path)
				}
			} else {
				ck.walk(v, t, path)
			}
			continue
		}
		ft, ok := fields[k.Value]
		if !ok {
			ft, ok = inlineMapFor(t, k.Value)
		}
		if !ok {
			key := ck.refs.unmark(k.Value)
			ck.fail(k, path, "unknown key %q (%svalid keys: %s)", key, didYouMean(key, names), strings.Join(names, ", "))
			continue
		}
		ck.lines[joinPath(path, k.Value)] = k.Line
		ck.walk(v, ft, joinPath(path, k.Value))
	}
}

// scalar expands a value and checks that it decodes into t.
func (ck *checker) scalar(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode {
		ck.fail(n, path, "%s is not %s", describe(n, nil), want(t))
		return
	}
	v, used, missing, err := ck.refs.expand(n.Value, n.Line, ck.getenv)
	if err != nil {
		ck.errs = append(ck.errs, err)
		return
	}
	ck.missing = append(ck.missing, missing...)
	n.Value = v
	if len(used) > 0 {
		// A plain value is typed by its text, which is now the
		// variable's: chunk: ${CHUNK} is a number. A string setting
		// keeps the text as it is (a "null" or "~" stays that text),
		// and a quoted or tagged value stays what it says.
		if t.Kind() != reflect.String && n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			n.Tag = ""
		}
	}
	if len(missing) > 0 {
		return
	}
	err = n.Decode(reflect.New(t).Interface())
	if err == nil && isInteger(t) && !reflect.PointerTo(t).Implements(unmarshalerType) && n.ShortTag() == "!!float" {
		err = errors.New("a fraction") // which yaml.v3 would cut to a whole number
	}
	if err != nil {
		if reflect.PointerTo(t).Implements(unmarshalerType) && len(used) == 0 {
			ck.fail(n, path, "%s", firstLine(err.Error())) // the type's own words
			return
		}
		ck.fail(n, path, "%s is not %s", describe(n, used), wantValue(t, n.Value))
	}
}

// describe names a node in an error: a short value as written (never a
// value that came from the environment: it may be a secret), or what
// kind of node it is.
func describe(n *yaml.Node, fromEnv []string) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a section"
	case yaml.SequenceNode:
		return "a list"
	}
	if len(fromEnv) > 0 {
		return "the value of ${" + strings.Join(fromEnv, "}${") + "}"
	}
	v := n.Value
	if utf8.RuneCountInString(v) > 40 {
		v = string([]rune(v)[:40]) + "…"
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 || v == "" || strings.ContainsAny(v, "\n\t") {
		return strconv.Quote(v)
	}
	return v
}

// want says what a setting of type t is written as.
func want(t reflect.Type) string {
	switch t {
	case durationType:
		return "a duration (e.g. 1s)"
	case reflect.TypeFor[byteSize]():
		return "a size (bytes, or a number with a unit such as 512MiB)"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number, 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a text value"
	case reflect.Struct:
		_, names := yamlFields(t)
		return "a section with keys (" + strings.Join(names, ", ") + ")"
	}
	return "a value of this setting"
}

// wantValue is want, saying the range when v is a number too large for t.
func wantValue(t reflect.Type, v string) string {
	if t == durationType || t == reflect.TypeFor[byteSize]() {
		return want(t)
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if _, err := strconv.ParseInt(v, 0, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			bits := t.Bits()
			return fmt.Sprintf("a whole number from %d to %d", int64(-1)<<(bits-1), int64(math.MaxInt64>>(64-bits)))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if _, err := strconv.ParseInt(v, 0, 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return fmt.Sprintf("a whole number from 0 to %d", uint64(math.MaxUint64>>(64-t.Bits())))
		}
	}
	return want(t)
}

// yamlFields lists the keys of struct t as yaml.v3 reads them (the tag's
// name, or the field's name in lower case; inline structs' keys too) and
// their types, in the struct's order.
func yamlFields(t reflect.Type) (map[string]reflect.Type, []string) {
	fields := map[string]reflect.Type{}
	var names []string
	var add func(reflect.Type)
	add = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if !f.IsExported() || tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Struct {
				add(f.Type)
				continue
			}
			if strings.Contains(","+opts+",", ",inline,") && f.Type.Kind() == reflect.Map {
				// Its keys are taken by inlineMapFor; errors list their forms.
				if d, ok := reflect.Zero(f.Type).Interface().(interface{ DocumentedKeys() []string }); ok {
					names = append(names, d.DocumentedKeys()...)
				}
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			if _, dup := fields[name]; !dup {
				names = append(names, name)
			}
			fields[name] = f.Type
		}
	}
	add(t)
	return fields, names
}

// keyAcceptor is an inline map type that takes some of its struct's
// other keys (cmd's ColumnMasks).
type keyAcceptor interface{ AcceptsKey(string) bool }

// inlineMapFor returns the value type of t's inline map that accepts key.
func inlineMapFor(t reflect.Type, key string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Type.Kind() != reflect.Map || !strings.Contains(","+opts+",", ",inline,") {
			continue
		}
		if a, ok := reflect.Zero(f.Type).Interface().(keyAcceptor); ok && a.AcceptsKey(key) {
			return f.Type.Elem(), true
		}
	}
	return nil, false
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// didYouMean suggests the name closest to key, if one is close enough to
// be a typo.
func didYouMean(key string, names []string) string {
	if best := suggest.Closest(key, names); best != "" {
		return fmt.Sprintf("did you mean %q? ", best)
	}
	return ""
}

func isInteger(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}
