package file

import (
	"errors"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Config is the file sink's section, sink.file.
type Config struct {
	// Path is the JSON-lines file the events are appended to.
	Path string `yaml:"path"`
}

// Kind declares the file sink.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "file",
		Caps: sinkkind.Caps{PerKeyOrder: true},
		Check: func() []error {
			if c.Path == "" {
				return []error{errors.New("path: required for sink type file")}
			}
			return nil
		},
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			s, err := Open(c.Path)
			if s != nil {
				s.Encoding = env.Encoding
			}
			return s, err
		},
	}
}
