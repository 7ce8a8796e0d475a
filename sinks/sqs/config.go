package sqs

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Limits of SendMessageBatch.
const (
	MaxBatchEntries = 10
	// DefaultMaxMessageBytes is the classic SQS limit of a message (and
	// of a request's messages together); queues created with a larger
	// MaximumMessageSize take up to 1 MiB.
	DefaultMaxMessageBytes = 256 << 10
	maxMessageBytes        = 1 << 20
)

// Config is the sink's section of icecdc.yaml, sink.sqs.
type Config struct {
	awssink.Conn `yaml:",inline"`
	// Queue is the queue of each table: a queue URL (https://sqs.…/ACCOUNT/NAME)
	// or a queue name, looked up once per table with GetQueueUrl, with
	// the placeholders {namespace}, {table}, {catalog} and {pipeline}.
	// A name ending in .fifo is a FIFO queue.
	Queue string `yaml:"queue"`
	// MaxMessageBytes is the largest message (body and attributes) and
	// request (default 256 KiB, at most 1 MiB: the queue's
	// MaximumMessageSize).
	MaxMessageBytes int `yaml:"max_message_bytes"`

	// Pipeline is the pipeline's name ({pipeline}).
	Pipeline string `yaml:"-"`
	// Logger receives the queues looked up.
	Logger *slog.Logger `yaml:"-"`
	// Encoding says what a key is (the group id is its row key).
	Encoding cdc.Encoding `yaml:"-"`
	// Retry paces the retries of failed requests and messages.
	Retry awssink.Retry `yaml:"-"`
	// Retried, when set, counts a request sent again by HTTP status.
	Retried func(status int) `yaml:"-"`
}

// FIFO reports whether the queues are FIFO queues.
func (c Config) FIFO() bool { return strings.HasSuffix(c.Queue, ".fifo") }

// WithDefaults returns c with its zero fields set.
func (c Config) WithDefaults() Config {
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Retry = c.Retry.WithDefaults()
	return c
}

// Check returns the section's problems, each naming its key under
// sink.sqs.
func (c Config) Check() []error {
	var errs []error
	if c.Queue == "" {
		errs = append(errs, errors.New("queue: required: a queue URL or name, e.g. icecdc-{table}.fifo"))
	} else if err := sinkkind.CheckNameTemplate(c.Queue, c.Pipeline); err != nil {
		errs = append(errs, fmt.Errorf("queue: %w", err))
	}
	if c.MaxMessageBytes < 0 || c.MaxMessageBytes > maxMessageBytes {
		errs = append(errs, fmt.Errorf("max_message_bytes: %d: want 1 to %d", c.MaxMessageBytes, maxMessageBytes))
	}
	return append(errs, c.Conn.Check()...)
}

// Validate is Check as one error.
func (c Config) Validate() error {
	if errs := c.Check(); len(errs) > 0 {
		return fmt.Errorf("sqs sink config: %w", errors.Join(errs...))
	}
	return nil
}

// Kind declares the SQS sink: JSON bodies (a message body is text), no
// heartbeats, schema-change or transaction records; per-key order on
// FIFO queues.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "sqs",
		Caps: sinkkind.Caps{
			Formats:     []string{"debezium-json", "debezium-connect-json"},
			NeedsKeys:   true,
			PerKeyOrder: c.FIFO(),
		},
		Check: func() []error {
			sc := *c
			sc.Pipeline = "named"
			return sc.Check()
		},
		Fingerprint: func() []string { return append(c.Conn.Fingerprint(), c.Queue) },
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			sc := *c
			sc.Pipeline, sc.Logger, sc.Encoding, sc.Retried = env.Pipeline, env.Log, env.Encoding, env.Retried
			return New(sc)
		},
	}
}
