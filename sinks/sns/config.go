package sns

import (
	"errors"
	"fmt"
	"strings"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Limits of PublishBatch: 10 messages, 256 KiB a message and a request.
const (
	MaxBatchEntries = 10
	MaxMessageBytes = 256 << 10
)

// Config is the sink's section of icecdc.yaml, sink.sns.
type Config struct {
	awssink.Conn `yaml:",inline"`
	// Topic is the topic ARN of each table, with the placeholders
	// {namespace}, {table}, {catalog} and {pipeline}
	// (arn:aws:sns:REGION:ACCOUNT:icecdc-{table}.fifo). An ARN ending in
	// .fifo is a FIFO topic.
	Topic string `yaml:"topic_arn"`

	// Pipeline is the pipeline's name ({pipeline}).
	Pipeline string `yaml:"-"`
	// Encoding says what a key is (the group id is its row key).
	Encoding cdc.Encoding `yaml:"-"`
	// Retry paces the retries of failed requests and messages.
	Retry awssink.Retry `yaml:"-"`
	// Retried, when set, counts a request sent again by HTTP status.
	Retried func(status int) `yaml:"-"`
}

// FIFO reports whether the topics are FIFO topics.
func (c Config) FIFO() bool { return strings.HasSuffix(c.Topic, ".fifo") }

// Check returns the section's problems, each naming its key under
// sink.sns.
func (c Config) Check() []error {
	var errs []error
	switch {
	case c.Topic == "":
		errs = append(errs, errors.New("topic_arn: required: a topic ARN, e.g. arn:aws:sns:eu-west-1:123456789012:icecdc-{table}"))
	case !strings.HasPrefix(c.Topic, "arn:"):
		errs = append(errs, fmt.Errorf("topic_arn: %q: want an ARN (arn:aws:sns:REGION:ACCOUNT:NAME)", c.Topic))
	default:
		if err := sinkkind.CheckNameTemplate(c.Topic, c.Pipeline); err != nil {
			errs = append(errs, fmt.Errorf("topic_arn: %w", err))
		}
	}
	return append(errs, c.Conn.Check()...)
}

// Validate is Check as one error.
func (c Config) Validate() error {
	if errs := c.Check(); len(errs) > 0 {
		return fmt.Errorf("sns sink config: %w", errors.Join(errs...))
	}
	return nil
}

// Kind declares the SNS sink: JSON messages (a message is text), no
// heartbeats, schema-change or transaction records; per-key order on
// FIFO topics.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "sns",
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
		Fingerprint: func() []string { return append(c.Conn.Fingerprint(), c.Topic) },
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			sc := *c
			sc.Pipeline, sc.Encoding, sc.Retried = env.Pipeline, env.Encoding, env.Retried
			return New(sc)
		},
	}
}
