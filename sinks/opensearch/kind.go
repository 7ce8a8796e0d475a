package opensearch

import (
	"slices"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Kind declares the OpenSearch sink: it keeps rows (the flattened after
// image, debezium-json), addressed by key; no heartbeats, schema-change
// or transaction records, since an index holds documents only.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "opensearch",
		Caps: sinkkind.Caps{
			Formats: []string{"debezium-json"}, DefaultFormat: "debezium-json",
			Rows: true, NeedsKeys: true, PerKeyOrder: true,
		},
		Check: func() []error {
			oc := *c
			oc.Pipeline = "named" // the daemon requires a name: {pipeline} is fine
			return oc.Check()
		},
		Fingerprint: func() []string {
			oc := c.WithDefaults()
			return append(slices.Clone(oc.URLs), oc.Index)
		},
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			oc := *c
			oc.Pipeline, oc.Logger, oc.Retried = env.Pipeline, env.Log, env.Retried
			return New(oc)
		},
	}
}
