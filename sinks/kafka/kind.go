package kafka

import (
	"fmt"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Kind declares the Kafka sink. Its section is also the Kafka client of
// the cluster mode and the signal channel when the sink is Kafka.
func (c *Config) Kind() sinkkind.Kind {
	return sinkkind.Kind{
		Name: "kafka",
		Caps: sinkkind.Caps{
			ExactlyOnce: true, Heartbeats: true, SchemaChanges: true, Transactions: true, Topics: true,
			DefaultFormat: "debezium-connect-json", NeedsKeys: true, PerKeyOrder: true,
		},
		Check: func() []error {
			var errs []error
			if len(c.Brokers) == 0 {
				errs = append(errs, fmt.Errorf("brokers: at least one broker is required"))
			}
			switch c.Delivery {
			case "", AtLeastOnce, ExactlyOnce:
			default:
				errs = append(errs, fmt.Errorf("delivery: %q: want at-least-once or exactly-once", c.Delivery))
			}
			return errs
		},
		Fingerprint: func() []string {
			k := c.WithDefaults()
			return []string{k.Topic, k.Delivery, k.CheckpointTopic, fmt.Sprint(k.Tombstones != nil && *k.Tombstones)}
		},
		New: func(env sinkkind.Env) (cdc.Sink, error) {
			kc := *c
			kc.Pipeline, kc.Logger = env.Pipeline, env.Log
			return New(kc)
		},
	}
}
