package nats

import (
	"slices"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Kind declares the NATS JetStream sink: events as messages, every
// format (bodies are bytes), order kept per subject.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "nats",
		Caps: sinkkind.Caps{PerKeyOrder: true},
		Check: func() []error {
			nc := *c
			nc.Pipeline = "named" // the daemon requires a name: {pipeline} is fine
			return nc.Check()
		},
		Fingerprint: func() []string {
			nc := c.WithDefaults()
			return append(slices.Clone(nc.URLs), nc.Subject, nc.Stream.Name)
		},
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			nc := *c
			nc.Pipeline = env.Pipeline
			return New(nc)
		},
	}
}
