package nats

import (
	"errors"
	"strings"

	"github.com/icecdc/icecdc/cdc"
)

// sample is the table a template is checked with.
var sample = &cdc.TableInfo{Catalog: "c", Namespace: "n", Name: "t"}

// checkSubject refuses what NATS does not take as a subject to publish
// to: an empty token, white space, and (unless wildcards) * and >.
func checkSubject(s string, wildcards bool) error {
	if s == "" {
		return errors.New("empty subject")
	}
	if strings.ContainsAny(s, " \t\r\n\x00") {
		return errors.New("a subject has no white space")
	}
	toks := strings.Split(s, ".")
	for i, tok := range toks {
		switch {
		case tok == "":
			return errors.New("empty token (a leading, trailing or double dot)")
		case tok == "*" || tok == ">":
			if !wildcards {
				return errors.New("wildcard " + tok + " in a subject to publish to")
			}
			if tok == ">" && i != len(toks)-1 {
				return errors.New("> is only the last token")
			}
		case strings.ContainsAny(tok, "*>") && wildcards:
			return errors.New("a wildcard is a whole token")
		}
	}
	return nil
}
