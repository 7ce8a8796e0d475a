package signals

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// The limits of what one producer of the signal topic can make the
// daemon hold: a signal beyond one is refused with one line, and its
// offset is committed past like any refused signal's.
const (
	// MaxSignalBytes bounds a signal record's value.
	MaxSignalBytes = 1 << 20
	// MaxIDBytes bounds a signal's id; a longer one is refused, and
	// named in logs and notifications by its place in the topic.
	MaxIDBytes = 256
	// MaxCollections bounds the entries of data-collections and of
	// additional-conditions.
	MaxCollections = 1024
	// MaxPatternBytes and maxPatternInsts bound one data collection's
	// regular expression: its text, and its compiled program.
	MaxPatternBytes = 1024
	maxPatternInsts = 10_000
	// DefaultWindow is how many signals may be read and not yet done;
	// the channel stops fetching (never drops) while that many wait.
	DefaultWindow = 1024
	// maxListed bounds the table names one log line or notification
	// lists; the rest are counted.
	maxListed = 10
	// maxQuoted bounds a user-given string quoted in an error.
	maxQuoted = 64
)

// quote is s quoted for an error, cut to maxQuoted bytes (at a rune's
// start) with the length it had.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// listTables joins at most maxListed names and counts the rest.
func listTables(tables []string) string {
	if len(tables) <= maxListed {
		return strings.Join(tables, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(tables[:maxListed], ", "), len(tables)-maxListed)
}

// shortTables is tables for a log attribute: at most maxListed, and a
// count of the rest.
func shortTables(tables []string) []string {
	if len(tables) <= maxListed {
		return tables
	}
	return append(tables[:maxListed:maxListed], fmt.Sprintf("… %d more", len(tables)-maxListed))
}

// collectionPattern compiles a data collection as Debezium matches it: a
// regular expression over the whole name, case-insensitive, within
// MaxPatternBytes and maxPatternInsts.
func collectionPattern(s string) (*regexp.Regexp, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty")
	}
	if len(s) > MaxPatternBytes {
		return nil, fmt.Errorf("%s: longer than %d bytes", quote(s), MaxPatternBytes)
	}
	src := `(?i)^(?:` + s + `)$`
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%s is not a regular expression: %v", quote(s), errCode(err))
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("%s is not a regular expression: %v", quote(s), errCode(err))
	}
	if len(prog.Inst) > maxPatternInsts {
		return nil, fmt.Errorf("%s: too complex a regular expression (%d instructions compiled, at most %d)", quote(s), len(prog.Inst), maxPatternInsts)
	}
	return regexp.Compile(src)
}

// errCode is a regular expression's error without the expression
// (already quoted, cut, by the caller).
func errCode(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}
