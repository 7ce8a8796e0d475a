package stdout

import (
	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Config is the stdout sink's section: it has no settings.
type Config struct{}

// Kind declares the stdout sink: JSON lines on the daemon's output.
func (*Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "stdout",
		Caps: sinkkind.Caps{PerKeyOrder: true},
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			s := New(env.Stdout)
			s.Encoding = env.Encoding
			return s, nil
		},
	}
}
