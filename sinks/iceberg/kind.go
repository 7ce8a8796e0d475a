package iceberg

import (
	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Kind declares the Iceberg sink: it stores its checkpoints in the target
// tables' snapshots (exactly once) and writes rows of its own format
// (Encoder), so it takes no format setting; no heartbeats, schema-change
// or transaction records, since a table holds rows only.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "iceberg",
		Caps: sinkkind.Caps{ExactlyOnce: true, PerKeyOrder: true,
			Formats: []string{"debezium-json"}, DefaultFormat: "debezium-json"},
		Check: func() []error {
			ic := *c
			ic.Pipeline = "named"
			return ic.Check()
		},
		Fingerprint: func() []string {
			ic := c.WithDefaults()
			o := ic.catalogOptions()
			return []string{o.CatalogType, o.CatalogURI, o.Warehouse, ic.Table}
		},
		Encoder: func() cdc.Encoder { return Encoder{} },
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			ic := *c
			ic.Pipeline, ic.Logger, ic.PipelineCatalog = env.Pipeline, env.Log, env.Catalog
			return New(ic)
		},
	}
}
