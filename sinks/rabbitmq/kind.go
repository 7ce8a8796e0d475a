package rabbitmq

import (
	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Kind declares the RabbitMQ sink: events as persistent messages, every
// format (bodies are bytes), order kept per queue.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "rabbitmq",
		Caps: sinkkind.Caps{PerKeyOrder: true},
		Check: func() []error {
			rc := *c
			rc.Pipeline = "named" // the daemon requires a name: {pipeline} is fine
			return rc.Check()
		},
		Fingerprint: func() []string {
			rc := c.WithDefaults()
			return []string{redact.URL(rc.URL), rc.Exchange, rc.RoutingKey}
		},
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			rc := *c
			rc.Pipeline, rc.ContentType = env.Pipeline, env.Encoding.Type()
			return New(rc)
		},
	}
}
