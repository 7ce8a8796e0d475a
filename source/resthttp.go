package source

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/icecdc/icecdc/health"
	"github.com/icecdc/icecdc/internal/redact"
)

// DefaultMaxResponseBytes is Options.MaxResponseBytes when unset: far
// above a real catalog answer (a loadTable of a table with thousands of
// snapshots is a few MiB), far below what would exhaust memory.
const DefaultMaxResponseBytes = 64 << 20

// ResponseTooLargeError is a catalog answer longer than the bound icecdc
// reads. iceberg-go decodes answers straight from the body, and keeps only
// the decoder's message of a read error: this error is found again through
// the context of the call (see watchAnswers).
type ResponseTooLargeError struct {
	URL   string // without credentials
	Limit int64
}

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the answer of %s is longer than %s, the most icecdc reads of a catalog answer (catalog.max_response_bytes)",
		e.URL, sizeWords(e.Limit))
}

func sizeWords(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// CrossHostRedirectError is a catalog redirecting a request with a body
// (a commit, an OAuth token request with the client secret) to another
// host, which would receive the body.
type CrossHostRedirectError struct {
	Method, From, To string // origins, without credentials
}

func (e *CrossHostRedirectError) Error() string {
	return fmt.Sprintf("the catalog redirected a %s from %s to %s: icecdc sends no request body or credentials to another host",
		e.Method, e.From, e.To)
}

// answersKey carries the *answers of a call in its context.
type answersKey struct{}

// answers records the first error of a call's requests that iceberg-go
// keeps only the message of: an answer cut at its bound, a redirect
// refused.
type answers struct {
	mu  sync.Mutex
	err error
}

func (a *answers) cut(err error) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		a.err = err
	}
}

func (a *answers) get() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// watchAnswers returns ctx recording the errors of the catalog requests
// made with it (see answers), and a function that returns the error of a
// call made with it: the recorded one, when there was one, else err as it
// is. The OAuth token requests iceberg-go makes with a context of its
// own are recorded in also, when given.
func watchAnswers(ctx context.Context, also ...*answers) (context.Context, func(error) error) {
	a := &answers{}
	return context.WithValue(ctx, answersKey{}, a), func(err error) error {
		if err == nil {
			return nil
		}
		for _, r := range append([]*answers{a}, also...) {
			if e := r.get(); e != nil {
				return e
			}
		}
		return err
	}
}

// catalogTransport is the transport of a REST catalog's client, beneath
// iceberg-go's, which adds the credentials to every request it sends,
// redirected ones included:
//   - a redirect to another origin (scheme, host or port) loses the
//     credentials' headers, and one of a request with a body is refused
//     (Go's client resends a 307's or 308's body);
//   - every answer is read through a bound of limit bytes, past which a
//     read fails with a ResponseTooLargeError.
type catalogTransport struct {
	base  http.RoundTripper
	limit int64
	// headers are the header.NAME properties: a header the operator adds
	// to every request may well be a key.
	headers []string
	// opening records the errors of the catalog's requests made while it
	// opens, OAuth's included.
	opening *answers
}

// credentialHeaders are the headers that carry credentials: OAuth's or
// SigV4's, a proxy's, cookies, and SigV4's session token.
var credentialHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Cookie2", "X-Amz-Security-Token"}

func (t *catalogTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if first := firstRequest(req); first != req && !sameOrigin(first.URL, req.URL) {
		if req.Body != nil && req.Body != http.NoBody {
			req.Body.Close()
			err := &CrossHostRedirectError{Method: req.Method, From: origin(first.URL), To: origin(req.URL)}
			a, _ := req.Context().Value(answersKey{}).(*answers)
			a.cut(err)
			t.opening.cut(err)
			return nil, err
		}
		req = req.Clone(req.Context())
		for _, h := range credentialHeaders {
			req.Header.Del(h)
		}
		for _, h := range t.headers {
			req.Header.Del(h)
		}
	}
	probe, _ := req.Context().Value(etagKey{}).(*etagProbe)
	if probe != nil && probe.send != "" && req.Method == http.MethodGet {
		req = req.Clone(req.Context())
		req.Header.Set("If-None-Match", probe.send)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if probe != nil && req.Method == http.MethodGet {
		switch resp.StatusCode {
		case http.StatusNotModified:
			probe.notModified = true
		case http.StatusOK:
			probe.got = resp.Header.Get("ETag")
		}
	}
	a, _ := req.Context().Value(answersKey{}).(*answers)
	if resp.StatusCode == http.StatusTooManyRequests {
		u := *req.URL
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		a.cut(health.Throttled(fmt.Errorf("%s %s: %s", req.Method, redact.URL(u.String()), resp.Status)))
	}
	boundBody(resp, req.URL, t.limit, a)
	return resp, nil
}

// boundBody makes resp's body fail past limit bytes (see boundedBody),
// recording the failure in a.
func boundBody(resp *http.Response, u *url.URL, limit int64, a *answers) {
	body := &boundedBody{rc: resp.Body, left: limit, url: u, limit: limit, answers: a}
	if resp.ContentLength > limit {
		body.fail() // said too long: nothing of it is read
	}
	resp.Body = body
}

// etagKey carries the *etagProbe of a table's load in its context.
type etagKey struct{}

// etagProbe is a REST loadTable's ETag: the one of the table's last full
// answer, sent as If-None-Match, and what the server answered. A server
// that sends ETags (Iceberg Java's RESTCatalogServer does, for loadTable,
// since 1.11: a hash of the metadata location and the query) answers an
// unchanged table with 304 Not Modified and no body, which iceberg-go
// reports as an error: the load then keeps the table it has.
type etagProbe struct {
	send        string
	got         string
	notModified bool
}

// firstRequest is the request of a client's call that req was redirected
// from, or req.
func firstRequest(req *http.Request) *http.Request {
	for req.Response != nil && req.Response.Request != nil {
		req = req.Response.Request
	}
	return req
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

// boundedBody is an answer's body that fails, rather than ends, past its
// bound: a JSON document cut short would fail to decode with a message
// about its syntax, or worse decode.
type boundedBody struct {
	rc      io.ReadCloser
	left    int64
	err     error
	url     *url.URL
	limit   int64
	answers *answers
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n == 0 {
			return 0, err
		}
		b.fail()
		return 0, b.err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) fail() {
	u := *b.url
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	b.err = &ResponseTooLargeError{URL: redact.URL(u.String()), Limit: b.limit}
	b.answers.cut(b.err)
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// openREST opens a REST catalog with icecdc's transport beneath
// iceberg-go's client. iceberg-go reads its options from properties only
// when it builds the catalog from them, and then makes its own transport:
// the properties it knows are given here as the options they stand for
// (by the names iceberg-go reads), the rest as properties.
func openREST(ctx context.Context, name string, props iceberg.Properties, limit int64) (catalog.Catalog, error) {
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	var (
		opts                      []rest.Option
		extra                     = iceberg.Properties{}
		sigv4                     bool
		region, service           string
		authURI, legacyAuthURI    string
		skipVerify, skipVerifySet bool
		headers                   []string
	)
	for k, v := range props {
		switch k {
		case "uri", "type":
		case "token":
			opts = append(opts, rest.WithOAuthToken(v))
		case "warehouse":
			opts = append(opts, rest.WithWarehouseLocation(v))
		case "metadata_location":
			opts = append(opts, rest.WithMetadataLocation(v))
		case "credential":
			opts = append(opts, rest.WithCredential(v))
		case "scope":
			opts = append(opts, rest.WithScope(v))
		case "audience":
			opts = append(opts, rest.WithAudience(v))
		case "resource":
			opts = append(opts, rest.WithResource(v))
		case "prefix":
			opts = append(opts, rest.WithPrefix(v))
		case "rest.sigv4-enabled":
			sigv4 = strings.EqualFold(v, "true")
		case "rest.signing-region":
			region = v
		case "rest.signing-name":
			service = v
		case "oauth2-server-uri":
			authURI = v
		case "rest.authorization-url":
			legacyAuthURI = v
		case "rest.tls.skip-verify":
			skipVerify, skipVerifySet = strings.EqualFold(v, "true"), true
		default:
			if v == "" {
				continue
			}
			extra[k] = v
			if h, ok := strings.CutPrefix(k, "header."); ok {
				headers = append(headers, h)
			}
		}
	}
	if sigv4 {
		opts = append(opts, rest.WithSigV4RegionSvc(region, service))
	}
	if u := cmp.Or(authURI, legacyAuthURI); u != "" {
		key := "oauth2-server-uri"
		if authURI == "" {
			key = "rest.authorization-url"
		}
		parsed, err := url.Parse(u)
		if err != nil || parsed.Scheme == "" || parsed.Host == "" {
			return nil, fmt.Errorf("%s %s: want an http:// or https:// URL with a host", key, redact.URL(u))
		}
		opts = append(opts, rest.WithAuthURI(parsed))
	}
	if skipVerifySet {
		opts = append(opts, rest.WithTLSConfig(&tls.Config{InsecureSkipVerify: skipVerify}))
	}
	if len(extra) > 0 {
		opts = append(opts, rest.WithAdditionalProps(extra))
	}
	opening := &answers{}
	opts = append(opts, rest.WithTransportFactory(func(tc *tls.Config) (http.RoundTripper, func()) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tc
		return &catalogTransport{base: tr, limit: limit, headers: headers, opening: opening}, tr.CloseIdleConnections
	}))
	ctx, answered := watchAnswers(ctx, opening)
	cat, err := rest.NewCatalog(ctx, name, props["uri"], opts...)
	if err != nil {
		return nil, answered(err)
	}
	return cat, nil
}
