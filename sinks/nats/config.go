package nats

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Defaults of zero Config fields.
const (
	DefaultSubject           = "icecdc.{namespace}.{table}"
	DefaultStream            = "ICECDC"
	DefaultDuplicateWindow   = 2 * time.Minute
	DefaultMaxPending        = 4096
	DefaultTimeout           = 30 * time.Second
	DefaultStorage           = "file"
	defaultConnectionTimeout = 10 * time.Second
)

// Config is the sink's section of icecdc.yaml, sink.nats.
type Config struct {
	// URLs are the servers (nats:// or tls://), tried in turn; default
	// nats://127.0.0.1:4222.
	URLs []string `yaml:"urls"`
	// Subject is the subject template: {namespace}, {table}, {catalog},
	// {pipeline} (default "icecdc.{namespace}.{table}").
	Subject string `yaml:"subject"`
	// CredsFile is a NATS credentials file (a user JWT and its nkey seed),
	// as `nsc` writes them.
	CredsFile string `yaml:"creds_file"`
	// NKeyFile is a file holding an nkey seed (a user nkey without JWT).
	NKeyFile string `yaml:"nkey_file"`
	// Username and Password, or Token: the server's plain authorization.
	Username string       `yaml:"username"`
	Password string       `yaml:"password"`
	Token    string       `yaml:"token"`
	TLS      TLSConfig    `yaml:"tls"`
	Stream   StreamConfig `yaml:"stream"`
	Batch    BatchConfig  `yaml:"batch"`
	// Timeout bounds each acknowledgement and each stream request
	// (default 30s).
	Timeout time.Duration `yaml:"timeout"`

	// Pipeline is the pipeline's name ({pipeline}); also the connection's
	// name, as the server's monitoring shows it.
	Pipeline string `yaml:"-"`
}

// TLSConfig is how the connection is encrypted and the client known.
type TLSConfig struct {
	// CAFile is a PEM file of the CAs that sign the servers'
	// certificates (default: the system's).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate (mutual TLS).
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// InsecureSkipVerify accepts any certificate (tests only).
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// StreamConfig is the stream that stores the subjects.
type StreamConfig struct {
	// Name is the stream that stores the subjects (default ICECDC).
	Name string `yaml:"name"`
	// Create (default true) creates the stream when no stream
	// stores a subject; false only checks that Name stores it.
	Create *bool `yaml:"create"`
	// Subjects are the subjects of a created stream (default: the
	// subject template up to its first placeholder, then ">":
	// "icecdc.>").
	Subjects []string `yaml:"subjects"`
	// DuplicateWindow is a created stream's duplicate window
	// (default 2m): a message whose Nats-Msg-Id the stream stored
	// within it is acknowledged and dropped.
	DuplicateWindow time.Duration `yaml:"duplicate_window"`
	// Storage of a created stream: file (default) or memory.
	Storage string `yaml:"storage"`
	// Replicas of a created stream (default 1).
	Replicas int `yaml:"replicas"`
	// MaxAge of a created stream's messages (default 0: kept).
	MaxAge time.Duration `yaml:"max_age"`
}

// BatchConfig bounds what is in flight.
type BatchConfig struct {
	// MaxPending is the most messages published and not yet
	// acknowledged (default 4096); a larger batch waits for room.
	MaxPending int `yaml:"max_pending"`
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if len(c.URLs) == 0 {
		c.URLs = []string{"nats://127.0.0.1:4222"}
	}
	if c.Subject == "" {
		c.Subject = DefaultSubject
	}
	if c.Stream.Name == "" {
		c.Stream.Name = DefaultStream
	}
	if c.Stream.Create == nil {
		yes := true
		c.Stream.Create = &yes
	}
	if len(c.Stream.Subjects) == 0 {
		if s := subjectsOf(c.Subject); s != "" {
			c.Stream.Subjects = []string{s}
		}
	}
	if c.Stream.DuplicateWindow == 0 {
		c.Stream.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.Stream.Storage == "" {
		c.Stream.Storage = DefaultStorage
	}
	if c.Stream.Replicas == 0 {
		c.Stream.Replicas = 1
	}
	if c.Batch.MaxPending == 0 {
		c.Batch.MaxPending = DefaultMaxPending
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c
}

// subjectsOf returns the stream subject that covers every subject of
// template: its literal tokens up to the first with a placeholder, then
// ">"; "" when the first token has one.
func subjectsOf(template string) string {
	var lit []string
	for _, tok := range strings.Split(template, ".") {
		if strings.Contains(tok, "{") {
			break
		}
		lit = append(lit, tok)
	}
	if len(lit) == 0 {
		return ""
	}
	if len(lit) == len(strings.Split(template, ".")) {
		return template // no placeholder: one subject
	}
	return strings.Join(lit, ".") + ".>"
}

// Check returns the section's problems, each naming its key under
// sink.nats; it never quotes a secret.
func (c Config) Check() []error {
	var errs []error
	bad := func(key, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, a...)))
	}
	for i, u := range c.URLs {
		pu, err := url.Parse(u)
		switch {
		case err != nil:
			bad(fmt.Sprintf("urls[%d]", i), "%s: %s", redact.URL(u), redact.ParseReason(err))
		case pu.Scheme != "nats" && pu.Scheme != "tls" || pu.Host == "":
			bad(fmt.Sprintf("urls[%d]", i), "%s: want a nats:// or tls:// URL", redact.URL(u))
		}
	}
	if err := sinkkind.CheckNameTemplate(c.Subject, c.Pipeline); err != nil {
		bad("subject", "%v", err)
	}
	if c.Subject != "" {
		if err := checkSubject(sinkkind.ExpandName(c.Subject, sample, "p"), false); err != nil {
			bad("subject", "%q: %v", c.Subject, err)
		}
	}
	if len(c.Stream.Subjects) == 0 && c.Subject != "" && subjectsOf(c.Subject) == "" {
		bad("stream.subjects", "required when the subject template starts with a placeholder (%q)", c.Subject)
	}
	for i, s := range c.Stream.Subjects {
		if err := checkSubject(s, true); err != nil {
			bad(fmt.Sprintf("stream.subjects[%d]", i), "%q: %v", s, err)
		}
	}
	auths := 0
	for _, set := range []bool{c.CredsFile != "", c.NKeyFile != "", c.Username != "" || c.Password != "", c.Token != ""} {
		if set {
			auths++
		}
	}
	if auths > 1 {
		bad("creds_file", "creds_file, nkey_file, username/password and token exclude each other: set one")
	}
	if c.Password != "" && c.Username == "" {
		bad("username", "required with password")
	}
	for key, f := range map[string]string{"creds_file": c.CredsFile, "nkey_file": c.NKeyFile, "tls.ca_file": c.TLS.CAFile, "tls.cert_file": c.TLS.CertFile, "tls.key_file": c.TLS.KeyFile} {
		if f != "" {
			if _, err := os.Stat(f); err != nil {
				bad(key, "%v", err)
			}
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls.cert_file", "tls.cert_file and tls.key_file go together")
	}
	switch c.Stream.Storage {
	case "", "file", "memory":
	default:
		bad("stream.storage", "%q: want file or memory", c.Stream.Storage)
	}
	if c.Stream.DuplicateWindow < 0 {
		bad("stream.duplicate_window", "must not be negative")
	}
	if c.Stream.Replicas < 0 || c.Stream.Replicas > 5 {
		bad("stream.replicas", "%d: want 1 to 5", c.Stream.Replicas)
	}
	if c.Stream.MaxAge < 0 {
		bad("stream.max_age", "must not be negative")
	}
	if c.Batch.MaxPending < 0 {
		bad("batch.max_pending", "must not be negative")
	}
	if c.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	return errs
}

// Validate is Check as one error.
func (c Config) Validate() error {
	if errs := c.Check(); len(errs) > 0 {
		return fmt.Errorf("nats sink config: %w", errors.Join(errs...))
	}
	return nil
}

// hosts names the servers for errors, without credentials.
func (c Config) hosts() string {
	out := make([]string, len(c.URLs))
	for i, u := range c.URLs {
		out[i] = redact.URL(u)
	}
	return strings.Join(out, ", ")
}
