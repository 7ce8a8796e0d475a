package redact

import (
	"errors"
	"net/url"
	"strings"
)

// Mask stands for the hidden part, as net/url's Redacted writes it.
const Mask = "xxxxx"

// URL returns s with the userinfo of its authority hidden: the password of
// user:password, or the whole of a userinfo without a colon (a token used
// as the user name). Anything else is returned as it is.
func URL(s string) string {
	out, _ := split(s)
	return out
}

// Text returns msg with the userinfo of every URL in it hidden, as URL
// does, for messages of libraries that quote a URL they were given. The
// locations of Azure's stores (abfs://container@account...) keep theirs:
// it names the container.
func Text(msg string) string {
	var b strings.Builder
	for {
		i := strings.Index(msg, "://")
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		b.WriteString(msg[:i+3])
		rest := msg[i+3:]
		end := authorityEnd(rest, true)
		if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 && !isAzure(msg[:i]) {
			b.WriteString(hideUserinfo(rest[:at]))
			b.WriteByte('@')
			rest = rest[at+1:]
		}
		msg = rest
	}
}

// Userinfo returns the parts of the userinfo of s that URL hides (the
// password, or a userinfo without a colon), as written and decoded, so
// that they can be hidden wherever else they appear; nil when s has none.
func Userinfo(s string) []string {
	_, secret := split(s)
	if secret == "" {
		return nil
	}
	out := []string{secret}
	if dec, err := url.PathUnescape(secret); err == nil && dec != secret {
		out = append(out, dec)
	}
	return out
}

// split returns s redacted and the hidden part.
func split(s string) (string, string) {
	i := strings.Index(s, "://")
	if i < 0 {
		return s, ""
	}
	rest := s[i+3:]
	end := authorityEnd(rest, false)
	at := strings.LastIndexByte(rest[:end], '@')
	if at < 0 {
		return s, ""
	}
	ui := rest[:at]
	secret := ui
	if _, pw, ok := strings.Cut(ui, ":"); ok {
		secret = pw
	}
	return s[:i+3] + hideUserinfo(ui) + rest[at:], secret
}

// isAzure reports whether the text before a "://" ends in an Azure
// store's scheme.
func isAzure(before string) bool {
	scheme := strings.ToLower(before[strings.LastIndexFunc(before, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '+' || r == '-' || r == '.')
	})+1:])
	return strings.HasPrefix(scheme, "abfs") || strings.HasPrefix(scheme, "wasb")
}

func hideUserinfo(ui string) string {
	if user, _, ok := strings.Cut(ui, ":"); ok {
		return user + ":" + Mask
	}
	if ui == "" {
		return ui
	}
	return Mask
}

// authorityEnd is where the authority of rest (a URL past its "://")
// ends: at the path, query or fragment, and in running text also at
// white space or a quote. An @ after a path's / belongs to the path.
func authorityEnd(rest string, inText bool) int {
	stop := "/?#"
	if inText {
		stop += " \t\r\n\"'`<>"
	}
	if i := strings.IndexAny(rest, stop); i >= 0 {
		return i
	}
	return len(rest)
}

// ParseReason says why url.Parse refused a URL without quoting any of it:
// net/url's errors quote the URL whole, and their reason the piece at
// fault, which may be a piece of a password.
func ParseReason(err error) string {
	var esc url.EscapeError
	var host url.InvalidHostError
	switch {
	case errors.As(err, &esc):
		return "a % not followed by two hex digits (write a % of a password as %25)"
	case errors.As(err, &host):
		return "a character a host cannot hold"
	case strings.Contains(err.Error(), "invalid control character"):
		return "a control character"
	case strings.Contains(err.Error(), "invalid port"):
		return "a port that is not a number"
	case strings.Contains(err.Error(), "missing protocol scheme"):
		return "no scheme (want scheme://host)"
	}
	return "not a URL"
}
