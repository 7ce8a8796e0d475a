package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// envRefs are the ${NAME} references of a configuration file, replaced by
// markRefs with placeholders before the file is parsed and by expand with
// the variables' values inside the parsed scalar values.
//
// Parsing first makes a variable's text exactly one value: a newline, a
// " #", a "*x" or a "!!binary" in it is text, never YAML, and comments
// (which the parser keeps apart from values) need no variable set. The
// placeholders, letters, digits and _ only, keep a reference a plain
// scalar wherever it was one before, inside [ ] and { } too, where the
// braces of ${NAME} would end it.
//
// Only the braced form is a reference: a $ anywhere else is a literal
// character, so that passwords and secrets written into the file keep
// their dollars. $${ writes a literal ${.
type envRefs struct {
	prefix string   // icecdcenv<random>_, absent from the file
	names  []string // placeholder i stands for ${names[i]}
}

// markRefs replaces each well-formed ${NAME} of doc by a placeholder. A
// malformed one is left for expand to report with its line, so that one
// in a comment is no error.
func markRefs(doc string) (string, *envRefs) {
	r := &envRefs{}
	for r.prefix == "" || strings.Contains(doc, r.prefix) {
		var b [8]byte
		rand.Read(b[:])
		r.prefix = "icecdcenv" + hex.EncodeToString(b[:]) + "_"
	}
	if !strings.Contains(doc, "${") {
		return doc, r
	}
	var b strings.Builder
	b.Grow(len(doc))
	for i := 0; i < len(doc); i++ {
		switch {
		case strings.HasPrefix(doc[i:], "$${"):
			b.WriteString("$${")
			i += 2
			continue
		case strings.HasPrefix(doc[i:], "${"):
			if end := strings.IndexByte(doc[i:], '}'); end > 0 && isEnvName(doc[i+2:i+end]) {
				fmt.Fprintf(&b, "%s%d_", r.prefix, len(r.names))
				r.names = append(r.names, doc[i+2:i+end])
				i += end
				continue
			}
		}
		b.WriteByte(doc[i])
	}
	return b.String(), r
}

// expand replaces the placeholders of one parsed scalar value, on the
// given line, with getenv of their names, and $${ with ${. It returns the
// names it substituted, those unset or empty, and an error naming the
// line of a malformed reference.
func (r *envRefs) expand(s string, line int, getenv func(string) string) (out string, used, missing []string, err error) {
	if !strings.Contains(s, "${") && !strings.Contains(s, r.prefix) {
		return s, nil, nil, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 2
			continue
		case strings.HasPrefix(s[i:], "${"):
			return "", nil, nil, fmt.Errorf("config: line %d: a $ followed by { must be ${NAME} with a name of letters, digits and _ (write $${ for a literal ${)", line)
		case strings.HasPrefix(s[i:], r.prefix):
			if name, n, ok := r.at(s[i:]); ok {
				used = append(used, name)
				v := getenv(name)
				if v == "" {
					missing = append(missing, name)
				}
				b.WriteString(v)
				i += n - 1
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String(), used, missing, nil
}

// at reads the placeholder at the start of s: the name it stands for and
// its length.
func (r *envRefs) at(s string) (name string, n int, ok bool) {
	rest := s[len(r.prefix):]
	end := strings.IndexByte(rest, '_')
	if end <= 0 {
		return "", 0, false
	}
	i, err := strconv.Atoi(rest[:end])
	if err != nil || i < 0 || i >= len(r.names) {
		return "", 0, false
	}
	return r.names[i], len(r.prefix) + end + 1, true
}

// unmark writes the placeholders in s back as ${NAME}, for messages that
// quote the file (a key, an anchor's name).
func (r *envRefs) unmark(s string) string {
	if len(r.names) == 0 || !strings.Contains(s, r.prefix) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], r.prefix) {
			if name, n, ok := r.at(s[i:]); ok {
				b.WriteString("${" + name + "}")
				i += n - 1
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// expandFlag expands the ${NAME} references of a flag's value as those of
// the config file are, so that a secret in it (a registry URL's password)
// stays out of the process list: written '${NAME}' in single quotes, the
// shell leaves the reference for the daemon to expand.
func expandFlag(flag, v string, getenv func(string) string) (string, error) {
	if !strings.Contains(v, "${") {
		return v, nil
	}
	marked, refs := markRefs(v)
	out, _, missing, err := refs.expand(marked, 0, getenv)
	if err != nil {
		return "", fmt.Errorf("--%s: a $ followed by { must be ${NAME} with a name of letters, digits and _ (write $${ for a literal ${)", flag)
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("--%s: environment variable %s is not set", flag, strings.Join(missing, ", "))
	}
	return out, nil
}
