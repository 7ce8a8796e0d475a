package kinesis

import (
	"errors"
	"fmt"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Limits of PutRecords: 500 records and 5 MiB a request, 1 MiB a record
// (data and partition key).
const (
	MaxBatchRecords = 500
	MaxBatchBytes   = 5 << 20
	MaxRecordBytes  = 1 << 20
)

// Config is the sink's section of icecdc.yaml, sink.kinesis.
type Config struct {
	awssink.Conn `yaml:",inline"`
	// Stream is the stream of each table, a name or an ARN
	// (arn:aws:kinesis:…:stream/NAME), with the placeholders {namespace},
	// {table}, {catalog} and {pipeline}.
	Stream string `yaml:"stream"`

	// Pipeline is the pipeline's name ({pipeline}).
	Pipeline string `yaml:"-"`
	// Encoding says what a key is (the partition key is its row key).
	Encoding cdc.Encoding `yaml:"-"`
	// Retry paces the retries of failed requests and records.
	Retry awssink.Retry `yaml:"-"`
	// Retried, when set, counts a request sent again by HTTP status.
	Retried func(status int) `yaml:"-"`
}

// Check returns the section's problems, each naming its key under
// sink.kinesis.
func (c Config) Check() []error {
	var errs []error
	if c.Stream == "" {
		errs = append(errs, errors.New("stream: required: a stream name or ARN, e.g. icecdc-{table}"))
	} else if err := sinkkind.CheckNameTemplate(c.Stream, c.Pipeline); err != nil {
		errs = append(errs, fmt.Errorf("stream: %w", err))
	}
	return append(errs, c.Conn.Check()...)
}

// Validate is Check as one error.
func (c Config) Validate() error {
	if errs := c.Check(); len(errs) > 0 {
		return fmt.Errorf("kinesis sink config: %w", errors.Join(errs...))
	}
	return nil
}

// Kind declares the Kinesis sink: every format (records are bytes), no
// heartbeats, schema-change or transaction records; a key's records in
// order on its shard.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "kinesis",
		Caps: sinkkind.Caps{NeedsKeys: true, PerKeyOrder: true},
		Check: func() []error {
			kc := *c
			kc.Pipeline = "named"
			return kc.Check()
		},
		Fingerprint: func() []string { return append(c.Conn.Fingerprint(), c.Stream) },
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			kc := *c
			kc.Pipeline, kc.Encoding, kc.Retried = env.Pipeline, env.Encoding, env.Retried
			return New(kc)
		},
	}
}
