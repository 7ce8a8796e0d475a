// Package registry registers and reads Avro schemas in a schema registry
// that speaks Confluent's REST API (Confluent, Redpanda, Karapace, and
// Apicurio under /apis/ccompat/v7), through franz-go's sr client. It
// caches what it registered, bounds what it reads, and classifies the
// registry's failures for the pipeline: a refusal or a bad setting stops
// the table (cdc.Permanent), an outage is retried (cdc.Retry). It never
// follows a redirect (the credentials would go with it), checks that each
// id fits Confluent's wire format and names one schema, and hides what
// looks like a credential in the registry's answers before they reach an
// error.
package registry

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
)

// Subject name strategies, with the names of Confluent's serializer
// settings (TopicNameStrategy and so on) cut to a word.
const (
	StrategyTopic       = "topic"        // <topic>-key, <topic>-value
	StrategyRecord      = "record"       // <record full name>
	StrategyTopicRecord = "topic_record" // <topic>-<record full name>
)

// MaxResponseBytes bounds each answer read from the registry: a schema is
// a few KB, so an answer past this is not the registry's and is refused
// rather than held.
const MaxResponseBytes = 4 << 20

// DefaultTimeout bounds each request.
const DefaultTimeout = 10 * time.Second

// MaxID is the largest schema id Confluent's wire format carries: 4 bytes,
// which Confluent's and Apicurio's Java deserializers read as a Java int,
// so an id past it would be read back as another (or a negative) id.
const MaxID = math.MaxInt32

// Config is the schema_registry section (docs/configuration.md).
type Config struct {
	// URL is the registry's base URL, e.g. http://localhost:8081 or
	// Apicurio's http://host:8080/apis/ccompat/v7.
	URL string `yaml:"url"`
	// Username and Password authenticate with HTTP basic auth.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// BearerToken authenticates with Authorization: Bearer.
	BearerToken string `yaml:"bearer_token"`
	// CAFile is a PEM file of the CAs to trust for an https URL, in
	// place of the system's.
	CAFile string `yaml:"ca_file"`
	// SubjectNameStrategy is topic (default), record or topic_record.
	SubjectNameStrategy string `yaml:"subject_name_strategy"`
}

// Enabled reports whether a registry is configured.
func (c Config) Enabled() bool { return c.URL != "" }

// Strategy returns the subject name strategy with its default.
func (c Config) Strategy() string {
	if c.SubjectNameStrategy == "" {
		return StrategyTopic
	}
	return c.SubjectNameStrategy
}

// Validate checks the section; errors name the key and never quote a
// secret.
func (c Config) Validate() error {
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		errs = append(errs, errors.New("schema_registry.url: required"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, fmt.Errorf("schema_registry.url: %q: want http:// or https://host[:port][/path]", redact.URL(c.URL)))
	case u.User != nil && (c.Username != "" || c.BearerToken != ""):
		errs = append(errs, errors.New("schema_registry.url: carries credentials and username or bearer_token is set too: use one"))
	}
	if c.Username != "" && c.BearerToken != "" {
		errs = append(errs, errors.New("schema_registry.bearer_token: set with username: use one of basic auth or a bearer token"))
	}
	if c.Password != "" && c.Username == "" {
		errs = append(errs, errors.New("schema_registry.password: set without username"))
	}
	switch c.Strategy() {
	case StrategyTopic, StrategyRecord, StrategyTopicRecord:
	default:
		errs = append(errs, fmt.Errorf("schema_registry.subject_name_strategy: %q: want %s, %s or %s", c.SubjectNameStrategy, StrategyTopic, StrategyRecord, StrategyTopicRecord))
	}
	if c.CAFile != "" {
		if _, err := os.Stat(c.CAFile); err != nil {
			errs = append(errs, fmt.Errorf("schema_registry.ca_file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Subject returns the subject of a record schema named record (its full
// name) on topic, for the key (isKey) or the value, by strategy.
func Subject(strategy, topic, record string, isKey bool) string {
	switch strategy {
	case StrategyRecord:
		return record
	case StrategyTopicRecord:
		return topic + "-" + record
	}
	if isKey {
		return topic + "-key"
	}
	return topic + "-value"
}

// Client registers schemas and looks them up by id. It may be used from
// several goroutines.
type Client struct {
	cl      *sr.Client
	where   string   // the URL without credentials, for errors
	secrets []string // the credentials as sent, hidden in the answers quoted

	mu  sync.Mutex
	ids map[registered]int // schema ids by subject and schema text
	// owner is what an id of ids was first registered as: the registry
	// gives one id to one schema, whatever its subjects.
	owner map[int]registered
	// byID holds the schemas read by id; ids are immutable in a
	// registry, so an entry never goes stale.
	byID map[int]string
}

type registered struct{ subject, schema string }

// cacheMax bounds each cache: a daemon registers a schema per table and
// schema version, which is far fewer.
const cacheMax = 4096

// New returns a client of the registry cfg names (cfg is validated).
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("schema_registry.url: %q: %w", redact.URL(cfg.URL), err)
	}
	user, pass := cfg.Username, cfg.Password
	if u.User != nil {
		// Credentials in the URL are sent as basic auth and kept out of
		// the URL the client logs and quotes.
		user = u.User.Username()
		pass, _ = u.User.Password()
		u.User = nil
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("schema_registry.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("schema_registry.ca_file %s: no PEM certificate in it", cfg.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	opts := []sr.ClientOpt{
		sr.URLs(u.String()),
		sr.HTTPClient(&http.Client{Timeout: DefaultTimeout, Transport: boundedTransport{tr}, CheckRedirect: refuseRedirect}),
		sr.UserAgent("icecdc"),
	}
	if user != "" {
		opts = append(opts, sr.BasicAuth(user, pass))
	}
	if cfg.BearerToken != "" {
		opts = append(opts, sr.BearerToken(cfg.BearerToken))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("schema registry %s: %w", u.String(), err)
	}
	var secrets []string
	if user != "" {
		secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
	}
	for _, s := range []string{pass, cfg.BearerToken} {
		if len(s) >= 4 { // shorter would hide common words of an answer
			secrets = append(secrets, s)
		}
	}
	return &Client{cl: cl, where: u.String(), secrets: secrets, ids: map[registered]int{}, owner: map[int]registered{}, byID: map[int]string{}}, nil
}

// redirectError is a redirect the client refused to follow.
type redirectError struct {
	status   int
	location string // redacted
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("redirected (HTTP %d) to %s: redirects are not followed, so that the credentials go to no other place; set schema_registry.url to the registry's own address",
		e.status, e.location)
}

// refuseRedirect is the HTTP client's redirect policy: none is followed.
// Go's client keeps the Authorization header across a redirect to the
// same host (another port or plain http included), and a proxy or a
// registry that redirects is a setting to correct, not a path to take.
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	e := &redirectError{location: oneLine(req.URL.String())}
	if req.Response != nil {
		e.status = req.Response.StatusCode
	}
	return e
}

// URL returns the registry's URL without credentials.
func (c *Client) URL() string { return c.where }

// Register registers an Avro schema under subject, once: later calls with
// the same subject and text answer from the cache. The registry answers
// with the id the schema already has if it knows it.
func (c *Client) Register(ctx context.Context, subject, schema string) (int, error) {
	k := registered{subject, schema}
	c.mu.Lock()
	id, ok := c.ids[k]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := c.cl.RegisterSchema(ctx, subject, sr.Schema{Schema: schema, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		return 0, c.fail("register subject "+subject, err)
	}
	if id <= 0 {
		return 0, cdc.Retry(fmt.Errorf("schema registry %s: register subject %s: the answer holds no schema id", c.where, subject))
	}
	if id > MaxID {
		return 0, cdc.Permanent(fmt.Errorf("schema registry %s: register subject %s: schema id %d is past %d, the largest Confluent's wire format carries (4 bytes)", c.where, subject, id, MaxID))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.owner[id]; ok && prev.schema != schema && !sameSchema(prev.schema, schema) {
		return 0, cdc.Permanent(fmt.Errorf("schema registry %s: register subject %s: the registry gave schema id %d, which it gave to another schema (subject %s): a record would be read with the wrong schema", c.where, subject, id, prev.subject))
	}
	if len(c.ids) >= cacheMax {
		clear(c.ids)
		clear(c.owner)
	}
	c.ids[k] = id
	if _, ok := c.owner[id]; !ok {
		c.owner[id] = k
	}
	return id, nil
}

// sameSchema reports whether two Avro schema texts are one schema to a
// registry (which may keep one id for texts that differ in spacing or
// key order): their canonical forms are equal.
func sameSchema(a, b string) bool {
	sa, err := avro.Parse(a)
	if err != nil {
		return false
	}
	sb, err := avro.Parse(b)
	return err == nil && bytes.Equal(sa.Canonical(), sb.Canonical())
}

// Schema returns the text of the schema with id.
func (c *Client) Schema(ctx context.Context, id int) (string, error) {
	c.mu.Lock()
	s, ok := c.byID[id]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	got, err := c.cl.SchemaByID(ctx, id)
	if err != nil {
		return "", c.fail(fmt.Sprintf("schema id %d", id), err)
	}
	if got.Type != sr.TypeAvro || got.Schema == "" {
		return "", cdc.Permanent(fmt.Errorf("schema registry %s: schema id %d: not an Avro schema (type %s)", c.where, id, got.Type))
	}
	c.mu.Lock()
	if len(c.byID) >= cacheMax {
		clear(c.byID)
	}
	c.byID[id] = got.Schema
	c.mu.Unlock()
	return got.Schema, nil
}

// Registered returns the subject and the schema text this client
// registered and got id for, if it did: what a schema read back by that
// id must be.
func (c *Client) Registered(id int) (subject, schema string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.owner[id]
	return k.subject, k.schema, ok
}

// fail turns an error of the sr client into one line naming the registry
// and what was asked, marked permanent when asking again cannot help.
func (c *Client) fail(what string, err error) error {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		msg := c.oneLine(re.Message)
		if msg == "" || msg == "no response" {
			msg = c.oneLine(string(re.Raw))
		}
		e := fmt.Errorf("schema registry %s: %s: HTTP %d: %s", c.where, what, re.StatusCode, msg)
		switch {
		case re.StatusCode == http.StatusConflict || re.StatusCode == http.StatusUnprocessableEntity:
			return cdc.Permanent(fmt.Errorf("schema registry %s: %s: refused (HTTP %d): %s", c.where, what, re.StatusCode, msg))
		case re.StatusCode == http.StatusUnauthorized || re.StatusCode == http.StatusForbidden:
			return cdc.Permanent(fmt.Errorf("%w (check schema_registry.username/password or bearer_token)", e))
		case re.StatusCode == http.StatusNotFound && strings.HasPrefix(what, "register"):
			// A registry answers 404 to a register call only when the
			// URL is not its API: Apicurio serves it under /apis/ccompat/v7.
			return cdc.Permanent(fmt.Errorf("%w (is schema_registry.url the Confluent-compatible API?)", e))
		case re.StatusCode == http.StatusNotFound:
			return cdc.Permanent(e)
		case re.StatusCode >= 500 || re.StatusCode == http.StatusTooManyRequests || re.StatusCode == http.StatusRequestTimeout:
			return cdc.Retry(e)
		}
		return cdc.Permanent(e)
	}
	var redirect *redirectError
	if errors.As(err, &redirect) {
		return cdc.Permanent(fmt.Errorf("schema registry %s: %s: %w", c.where, what, redirect))
	}
	var tooLong *tooLongError
	if errors.As(err, &tooLong) {
		// Another service's page (a proxy's error, a login form) in the
		// registry's place: the registry may be back at the next attempt.
		return cdc.Retry(fmt.Errorf("schema registry %s: %s: %w", c.where, what, tooLong))
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return cdc.Permanent(fmt.Errorf("schema registry %s: %s: %v (check schema_registry.ca_file)", c.where, what, certErr.Err))
	}
	// A transport failure, a timeout, or a 2xx answer that is not the
	// registry's JSON (cut off, or another service's page): the next
	// attempt may find the registry back.
	return cdc.Retry(fmt.Errorf("schema registry %s: %s: %s", c.where, what, c.oneLine(causeText(err))))
}

// causeText is the innermost message of a transport error, without the
// URL the sr client puts in front of it (which is ours, already said).
func causeText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		var ne net.Error
		if errors.As(ue.Err, &ne) && ne.Timeout() {
			return "no answer within " + DefaultTimeout.String()
		}
		return ue.Err.Error()
	}
	msg := err.Error()
	// "unable to decode ok response body from POST "<url>": <cause>"
	if i := strings.LastIndex(msg, `": `); i >= 0 {
		return "the answer is not the registry's: " + msg[i+3:]
	}
	return msg
}

// oneLine keeps an answer's text on one line and short, so that an HTML
// error page does not flood the log, and hides this client's credentials
// in it: a registry or a proxy that echoes the request's headers would
// show them in the log, /readyz and /status.
func (c *Client) oneLine(s string) string {
	for _, secret := range c.secrets {
		s = strings.ReplaceAll(s, secret, redact.Mask)
	}
	return oneLine(s)
}

// oneLine is Client.oneLine without a client's own credentials: what
// looks like a credential is hidden all the same.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(redact.Credentials(s)), " ")
	if utf8.RuneCountInString(s) > 300 {
		s = string([]rune(s)[:299]) + "…"
	}
	return s
}

// boundedTransport cuts every answer at MaxResponseBytes: the sr client
// reads bodies whole, and a registry (or whatever answers at its URL)
// must not make the daemon hold an unbounded answer.
type boundedTransport struct{ rt http.RoundTripper }

func (b boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: MaxResponseBytes}
	return resp, nil
}

type tooLongError struct{}

func (*tooLongError) Error() string {
	return fmt.Sprintf("answer longer than %d bytes: not a schema registry's (a proxy's page?)", MaxResponseBytes)
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, &tooLongError{}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
