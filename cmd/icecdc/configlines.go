package main

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/icecdc/icecdc/internal/suggest"
)

// locate gives each of validate's errors ("config: FIELD: …") the line of
// its setting in the file, which loadConfig puts before it as FILE:LINE,
// and a value refused for not being one of a list ("…: \"debezium-jsn\":
// want debezium-json, debezium-connect-json or debezium-avro") the
// nearest of the list. The key checks say their line themselves.
func (c *Config) locate(err error) []error {
	var out []error
	for _, e := range flattenErrors(nil, err) {
		out = append(out, c.locateOne(e))
	}
	return out
}

// flattenErrors appends the errors in err (errors.Join's, at any depth)
// to dst, leaving out nils.
func flattenErrors(dst []error, err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			dst = flattenErrors(dst, e)
		}
		return dst
	}
	if err != nil {
		dst = append(dst, err)
	}
	return dst
}

// refusedValue is a value a setting refused, and the values it takes.
var refusedValue = regexp.MustCompile(`^"([^"]*)": want ([^;(:]+)`)

func (c *Config) locateOne(err error) error {
	rest, ok := strings.CutPrefix(err.Error(), "config: ")
	if !ok || strings.HasPrefix(rest, "line ") {
		return err
	}
	field, msg, ok := strings.Cut(rest, ": ")
	if !ok || strings.ContainsAny(field, " \"") {
		return err
	}
	le := &locatedError{msg: err.Error(), line: c.lineOf(field), err: err}
	if m := refusedValue.FindStringSubmatch(msg); m != nil {
		if best := suggest.Closest(m[1], valueList(m[2])); best != "" && best != m[1] {
			le.msg += fmt.Sprintf(" (did you mean %s?)", best)
		}
	}
	return le
}

// lineOf is the line of field, or of the nearest section holding it.
func (c *Config) lineOf(field string) int {
	for field != "" {
		if l, ok := c.lines[field]; ok {
			return l
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			return 0
		}
		field = field[:i]
	}
	return 0
}

// valueList splits "a, b or c" (or "a | b | c") into its values.
func valueList(s string) []string {
	s = strings.NewReplacer(" or ", ",", " | ", ",", ", ", ",").Replace(strings.TrimSpace(s))
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.Trim(strings.TrimSpace(v), "`'\""); v != "" && !strings.Contains(v, " ") {
			out = append(out, v)
		}
	}
	return out
}

// locatedError is a validation error with its hint, and the line of its
// setting (0: not in the file).
type locatedError struct {
	msg  string
	line int
	err  error
}

// fileLine is where err's setting is, as FILE:LINE, or just path.
func fileLine(path string, err error) string {
	var le *locatedError
	if errors.As(err, &le) && le.line > 0 {
		return fmt.Sprintf("%s:%d", path, le.line)
	}
	return path
}

func (e *locatedError) Error() string { return e.msg }
func (e *locatedError) Unwrap() error { return e.err }
