package opensearch

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Defaults of zero Config fields.
const (
	DefaultIndex        = "{table}"
	DefaultMaxDocs      = 1000
	DefaultMaxBytes     = 5 << 20
	DefaultTimeout      = 30 * time.Second
	DefaultRetryInitial = 200 * time.Millisecond
	DefaultRetryMax     = 30 * time.Second
	// DefaultRetryAttempts is how many times Write sends an item refused
	// with 429 or 5xx before it returns a retryable error to the pipeline.
	DefaultRetryAttempts = 10
)

// The refresh policies of a bulk request (Config.Refresh).
const (
	RefreshFalse   = "false"
	RefreshTrue    = "true"
	RefreshWaitFor = "wait_for"
)

// Config is the sink's section of icecdc.yaml, sink.opensearch.
type Config struct {
	// URLs are the nodes, tried in turn (failover): http or https.
	URLs []string `yaml:"urls"`
	// Index is the index name template: {namespace}, {table},
	// {catalog}, {pipeline} (default "{table}").
	Index string `yaml:"index"`
	// Username and Password authenticate with HTTP Basic.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	// APIKey is sent as "Authorization: ApiKey <api_key>" (the
	// base64 id:key Elasticsearch and OpenSearch's API keys use);
	// BearerToken as "Authorization: Bearer <token>". At most one of
	// them, and neither with a username.
	APIKey      string `yaml:"api_key"`
	BearerToken string `yaml:"bearer_token"`
	TLS         struct {
		// CAFile is a PEM file of the CAs that sign the nodes'
		// certificates (default: the system's).
		CAFile string `yaml:"ca_file"`
		// InsecureSkipVerify accepts any certificate (tests only).
		InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	} `yaml:"tls"`
	// Refresh is each bulk request's refresh policy: false (default),
	// true or wait_for.
	Refresh string `yaml:"refresh"`
	Batch   struct {
		// MaxDocs is the most items per request (default 1000).
		MaxDocs int `yaml:"max_docs"`
		// MaxBytes is about the most body bytes per request (default
		// 5 MiB); an item larger than it goes alone.
		MaxBytes int `yaml:"max_bytes"`
	} `yaml:"batch"`
	// Timeout bounds each request (default 30s).
	Timeout time.Duration `yaml:"timeout"`
	// CreateIndex (default true) creates a missing index before its first
	// write, with a dynamic template that maps JSON numbers with a
	// fraction as double: OpenSearch's own dynamic mapping makes them
	// float, which loses a double's precision and refuses a value past
	// float's range. An index that exists is left as it is; false leaves
	// creating indexes to the node (or to the operator's templates).
	CreateIndex *bool `yaml:"create_index"`
	// DeadLetter.File, when set, takes the items a node refuses for good
	// (one JSON line each, synced before the batch is acknowledged)
	// instead of stopping the table.
	DeadLetter struct {
		File string `yaml:"file"`
	} `yaml:"dead_letter"`

	// Pipeline is the pipeline's name ({pipeline}).
	Pipeline string `yaml:"-"`
	// Logger receives retries at debug level and dead letters at warn.
	Logger *slog.Logger `yaml:"-"`
	// Retry paces the re-sending of refused items.
	Retry RetryConfig `yaml:"-"`
	// Transport sends the requests (default: a clone of
	// http.DefaultTransport with the TLS settings).
	Transport http.RoundTripper `yaml:"-"`
	// Retried, when set, counts an item or request sent again, by its
	// HTTP status (0: a network error).
	Retried func(status int) `yaml:"-"`
}

// RetryConfig paces retries: exponential backoff with full jitter from
// Initial, capped at Max, at most Attempts sends per item and Write.
type RetryConfig struct {
	Initial  time.Duration
	Max      time.Duration
	Attempts int
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Index == "" {
		c.Index = DefaultIndex
	}
	if c.Refresh == "" {
		c.Refresh = RefreshFalse
	}
	if c.Batch.MaxDocs == 0 {
		c.Batch.MaxDocs = DefaultMaxDocs
	}
	if c.Batch.MaxBytes == 0 {
		c.Batch.MaxBytes = DefaultMaxBytes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Retry.Initial == 0 {
		c.Retry.Initial = DefaultRetryInitial
	}
	if c.Retry.Max == 0 {
		c.Retry.Max = DefaultRetryMax
	}
	if c.Retry.Attempts == 0 {
		c.Retry.Attempts = DefaultRetryAttempts
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.CreateIndex == nil {
		yes := true
		c.CreateIndex = &yes
	}
	return c
}

// Check returns the section's problems, each naming its key under
// sink.opensearch; it never quotes a secret.
func (c Config) Check() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	if len(c.URLs) == 0 {
		bad("urls", "at least one node URL is required")
	}
	for i, u := range c.URLs {
		pu, err := url.Parse(u)
		switch {
		case err != nil:
			bad(fmt.Sprintf("urls[%d]", i), "%s: %s", redact.URL(u), redact.ParseReason(err))
		case pu.Scheme != "http" && pu.Scheme != "https" || pu.Host == "":
			bad(fmt.Sprintf("urls[%d]", i), "%s: want an http:// or https:// URL", redact.URL(u))
		}
	}
	if err := sinkkind.CheckNameTemplate(c.Index, c.Pipeline); err != nil {
		bad("index", "%v", err)
	}
	auths := 0
	for _, set := range []bool{c.Username != "" || c.Password != "", c.APIKey != "", c.BearerToken != ""} {
		if set {
			auths++
		}
	}
	if auths > 1 {
		bad("api_key", "username/password, api_key and bearer_token exclude each other: set one")
	}
	if c.Password != "" && c.Username == "" {
		bad("username", "required with password")
	}
	if c.TLS.CAFile != "" {
		if _, err := os.Stat(c.TLS.CAFile); err != nil {
			bad("tls.ca_file", "%v", err)
		}
	}
	switch c.Refresh {
	case "", RefreshFalse, RefreshTrue, RefreshWaitFor:
	default:
		bad("refresh", "%q: want false, true or wait_for", c.Refresh)
	}
	if c.Batch.MaxDocs < 0 {
		bad("batch.max_docs", "must not be negative")
	}
	if c.Batch.MaxBytes < 0 {
		bad("batch.max_bytes", "must not be negative")
	}
	if c.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	return errs
}

// Validate is Check as one error.
func (c Config) Validate() error {
	if errs := c.Check(); len(errs) > 0 {
		return fmt.Errorf("opensearch sink config: %w", errors.Join(errs...))
	}
	return nil
}

// hosts names the nodes for errors, without credentials.
func (c Config) hosts() string {
	out := make([]string, len(c.URLs))
	for i, u := range c.URLs {
		out[i] = redact.URL(u)
	}
	return strings.Join(out, ", ")
}
