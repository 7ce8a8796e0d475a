package redact

import "regexp"

// secretKey is a key naming a secret, then : or = : the key may be
// quoted (JSON) and its value a JSON array's first element (echoed
// headers).
const secretKey = `(?i)((?:authorization|password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|credentials?)[a-z0-9_-]*"?\s*[:=]\s*\[?\s*)`

// Patterns of what reads as a credential in text another server wrote (a
// registry's or a proxy's answer that echoes the request's headers).
var (
	quotedSecret  = regexp.MustCompile(secretKey + `"(?:[^"\\]|\\.)*"`)
	squotedSecret = regexp.MustCompile(secretKey + `'[^']*'`)
	// A bare value: an auth scheme and its token, or a word.
	bareSecret = regexp.MustCompile(secretKey + `(?:(?:basic|bearer|negotiate)\s+[^\s"',;}\]]+|[^\s"',;&{}\[\]]+)`)
	// An auth scheme's token where no key names it.
	schemeToken = regexp.MustCompile(`(?i)\b(basic|bearer|negotiate)(\s+)[A-Za-z0-9._~+/-]{6,}=*`)
)

// Credentials returns msg with what looks like a credential hidden: the
// userinfo of URLs (as Text does), the token of a Basic, Bearer or
// Negotiate authorization, and the value of a key=value or "key": "value"
// pair whose key names a secret (authorization, password, secret, token,
// api_key, access_key, credentials). It errs on hiding too much: it is
// for messages quoting what another server answered, which the daemon
// logs and serves on /readyz and /status.
func Credentials(msg string) string {
	msg = Text(msg)
	msg = quotedSecret.ReplaceAllString(msg, `${1}"`+Mask+`"`)
	msg = squotedSecret.ReplaceAllString(msg, `${1}'`+Mask+`'`)
	msg = bareSecret.ReplaceAllString(msg, "${1}"+Mask)
	return schemeToken.ReplaceAllString(msg, "${1}${2}"+Mask)
}
