package rabbitmq

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
	DefaultURL          = "amqp://guest:guest@127.0.0.1:5672/"
	DefaultExchange     = "icecdc"
	DefaultExchangeType = "topic"
	DefaultRoutingKey   = "{namespace}.{table}"
	DefaultTimeout      = 30 * time.Second
)

// Config is the sink's section of icecdc.yaml, sink.rabbitmq.
type Config struct {
	// URL is the broker: amqp:// or amqps:// (TLS), with user, password
	// and virtual host as AMQP URIs carry them
	// (amqps://user:password@host:5671/vhost).
	URL string `yaml:"url"`
	TLS struct {
		// CAFile is a PEM file of the CAs that sign the broker's
		// certificate (amqps://; default: the system's).
		CAFile string `yaml:"ca_file"`
		// CertFile and KeyFile are a client certificate (mutual TLS,
		// and the EXTERNAL mechanism when the URL has no password).
		CertFile string `yaml:"cert_file"`
		KeyFile  string `yaml:"key_file"`
		// InsecureSkipVerify accepts any certificate (tests only).
		InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	} `yaml:"tls"`
	// Exchange is the exchange name template: {namespace}, {table},
	// {catalog}, {pipeline} (default "icecdc").
	Exchange string `yaml:"exchange"`
	// ExchangeType of a declared exchange: topic (default), direct,
	// fanout or headers.
	ExchangeType string `yaml:"exchange_type"`
	// Declare (default true) declares the exchange, durable; false only
	// checks that it exists.
	Declare *bool `yaml:"declare"`
	// RoutingKey is the routing key template (default
	// "{namespace}.{table}").
	RoutingKey string `yaml:"routing_key"`
	// Mandatory (default true) has the broker return a message no queue
	// takes, which stops the table; false lets the exchange drop it.
	Mandatory *bool `yaml:"mandatory"`
	// Timeout bounds the connection and each batch's confirms (default
	// 30s).
	Timeout time.Duration `yaml:"timeout"`

	// Pipeline is the pipeline's name ({pipeline}), also the
	// connection's name.
	Pipeline string `yaml:"-"`
	// ContentType is the messages' content type ("" is
	// application/json).
	ContentType string `yaml:"-"`
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.Exchange == "" {
		c.Exchange = DefaultExchange
	}
	if c.ExchangeType == "" {
		c.ExchangeType = DefaultExchangeType
	}
	if c.RoutingKey == "" {
		c.RoutingKey = DefaultRoutingKey
	}
	yes := true
	if c.Declare == nil {
		c.Declare = &yes
	}
	if c.Mandatory == nil {
		c.Mandatory = &yes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ContentType == "" {
		c.ContentType = "application/json"
	}
	return c
}

// Check returns the section's problems, each naming its key under
// sink.rabbitmq; it never quotes a secret.
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
		case u.Scheme != "amqp" && u.Scheme != "amqps" || u.Host == "":
			bad("url", "%s: want an amqp:// or amqps:// URL", redact.URL(c.URL))
		}
	}
	if err := sinkkind.CheckNameTemplate(c.Exchange, c.Pipeline); err != nil {
		bad("exchange", "%v", err)
	}
	if err := sinkkind.CheckNameTemplate(c.RoutingKey, c.Pipeline); err != nil {
		bad("routing_key", "%v", err)
	}
	switch c.ExchangeType {
	case "", "topic", "direct", "fanout", "headers":
	default:
		bad("exchange_type", "%q: want topic, direct, fanout or headers", c.ExchangeType)
	}
	for key, f := range map[string]string{"tls.ca_file": c.TLS.CAFile, "tls.cert_file": c.TLS.CertFile, "tls.key_file": c.TLS.KeyFile} {
		if f != "" {
			if _, err := os.Stat(f); err != nil {
				bad(key, "%v", err)
			}
		}
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls.cert_file", "tls.cert_file and tls.key_file go together")
	}
	if c.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	return errs
}

// Validate is Check as one error.
func (c Config) Validate() error {
	if errs := c.Check(); len(errs) > 0 {
		return fmt.Errorf("rabbitmq sink config: %w", errors.Join(errs...))
	}
	return nil
}
