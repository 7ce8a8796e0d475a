package redis

import (
	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Kind declares the Redis Streams sink: events as stream entries, every
// format (fields are bytes), order kept per stream.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "redis",
		Caps: sinkkind.Caps{PerKeyOrder: true},
		Check: func() []error {
			rc := *c
			rc.Pipeline = "named" // the daemon requires a name: {pipeline} is fine
			return rc.Check()
		},
		Fingerprint: func() []string {
			rc := c.WithDefaults()
			return []string{redact.URL(rc.URL), rc.Stream}
		},
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			rc := *c
			rc.Pipeline = env.Pipeline
			return New(rc)
		},
	}
}
