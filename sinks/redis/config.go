package redis

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Defaults of zero Config fields.
const (
	DefaultURL        = "redis://127.0.0.1:6379/0"
	DefaultStream     = "icecdc:{namespace}.{table}"
	DefaultMaxEntries = 1000
	DefaultTimeout    = 30 * time.Second
)

// Config is the sink's section of icecdc.yaml, sink.redis.
type Config struct {
	// URL is the server: redis:// or rediss:// (TLS), with user,
	// password and database as Redis URLs carry them
	// (redis://user:password@host:6379/0); default redis://127.0.0.1:6379/0.
	URL string `yaml:"url"`
	// Username and Password, when set, take the place of the URL's.
	Username string `yaml:"username"`
	Password string `yaml:"password"`
	TLS      struct {
		// CAFile is a PEM file of the CAs that sign the server's
		// certificate (rediss://; default: the system's).
		CAFile string `yaml:"ca_file"`
		// InsecureSkipVerify accepts any certificate (tests only).
		InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	} `yaml:"tls"`
	// Stream is the stream key template: {namespace}, {table}, {catalog},
	// {pipeline} (default "icecdc:{namespace}.{table}").
	Stream string `yaml:"stream"`
	// MaxLen, above 0, trims each stream to about this many entries
	// (XADD MAXLEN ~): older entries go, whether consumers read them or
	// not. Default 0: kept.
	MaxLen int64 `yaml:"max_len"`
	Batch  struct {
		// MaxEntries is the most XADDs per pipeline (default 1000).
		MaxEntries int `yaml:"max_entries"`
	} `yaml:"batch"`
	// Timeout bounds each pipeline (default 30s).
	Timeout time.Duration `yaml:"timeout"`

	// Pipeline is the pipeline's name ({pipeline}), also the client name.
	Pipeline string `yaml:"-"`
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Batch.MaxEntries == 0 {
		c.Batch.MaxEntries = DefaultMaxEntries
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// Check returns the section's problems, each naming its key under
// sink.redis; it never quotes a secret.
func (c Config) Check() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		switch {
		case err != nil:
			bad("url", "%s: %s", redact.URL(c.URL), redact.ParseReason(err))
		case u.Scheme != "redis" && u.Scheme != "rediss" || u.Host == "":
			bad("url", "%s: want a redis:// or rediss:// URL", redact.URL(c.URL))
		}
	}
	if err := sinkkind.CheckNameTemplate(c.Stream, c.Pipeline); err != nil {
		bad("stream", "%v", err)
	}
	if c.TLS.CAFile != "" {
		if _, err := os.Stat(c.TLS.CAFile); err != nil {
			bad("tls.ca_file", "%v", err)
		}
	}
	if c.MaxLen < 0 {
		bad("max_len", "must not be negative")
	}
	if c.Batch.MaxEntries < 0 {
		bad("batch.max_entries", "must not be negative")
	}
	if c.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	return errs
}

// Validate is Check as one error.
func (c Config) Validate() error {
	if errs := c.Check(); len(errs) > 0 {
		return fmt.Errorf("redis sink config: %w", errors.Join(errs...))
	}
	return nil
}
