// Package redact hides the credentials a URL carries in its userinfo
// (scheme://user:password@host), working on the text: a URL that does not
// parse (a password with a bare %, say) is hidden as well as one that
// does, where net/url's Redacted needs a parsed URL and its errors quote
// the text whole. Credentials also hides what reads as a credential in
// another server's answer (an authorization's token, a password=… pair).
package redact
