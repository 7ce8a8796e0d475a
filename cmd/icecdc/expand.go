package main

import (
	"fmt"
	"strings"
)

// expandEnv replaces each ${NAME} in a YAML document with getenv(NAME).
// Only the braced form is a reference: a $ anywhere else is a literal
// character, so that passwords and secrets written into the file keep
// their dollars. $${ writes a literal ${. Comments (a # at the start of a
// line or after a blank, outside quotes) are copied untouched, so a
// commented-out ${OLD_VAR} needs no value. It returns the names that are
// unset or empty, and an error naming the line of a malformed reference.
func expandEnv(doc string, getenv func(string) string) (string, []string, error) {
	var (
		b       strings.Builder
		missing []string
		quote   byte // the open quote, ' or ", or 0
		line    = 1
	)
	b.Grow(len(doc))
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch {
		case c == '\n':
			line++
		case quote == '"' && c == '\\' && i+1 < len(doc):
			b.WriteByte(c)
			i++
			c = doc[i] // an escaped character never closes the string
			if c == '\n' {
				line++
			}
		case quote != 0 && c == quote:
			if c == '\'' && i+1 < len(doc) && doc[i+1] == '\'' {
				b.WriteString("''") // '' is a quote inside a single-quoted string
				i++
				continue
			}
			quote = 0
		case quote == 0 && (c == '"' || c == '\'') && startsScalar(doc, i):
			quote = c
		case quote == 0 && c == '#' && (i == 0 || isBlank(doc[i-1])):
			end := strings.IndexByte(doc[i:], '\n')
			if end < 0 {
				end = len(doc) - i
			}
			b.WriteString(doc[i : i+end])
			i += end - 1
			continue
		case c == '$' && strings.HasPrefix(doc[i:], "$${"):
			b.WriteString("${")
			i += 2
			continue
		case c == '$' && strings.HasPrefix(doc[i:], "${"):
			end := strings.IndexByte(doc[i:], '}')
			name := ""
			if end > 0 {
				name = doc[i+2 : i+end]
			}
			if !isEnvName(name) {
				return "", nil, fmt.Errorf("config: line %d: a $ followed by { must be ${NAME} with a name of letters, digits and _ (write $${ for a literal ${)", line)
			}
			v := getenv(name)
			if v == "" {
				missing = append(missing, name)
			}
			b.WriteString(v)
			i += end
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), missing, nil
}

// startsScalar reports whether a quote at doc[i] opens a quoted scalar
// rather than sitting inside a plain one (it's, 5'10").
func startsScalar(doc string, i int) bool {
	if i == 0 {
		return true
	}
	switch doc[i-1] {
	case ' ', '\t', '\n', '\r', '[', '{', ',':
		return true
	}
	return false
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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
