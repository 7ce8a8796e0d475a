package kafka

import (
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestContract runs the sink contract suite against kfake: with one
// partition per topic (where the suite checks total order), with several
// (order per key), and in exactly-once mode (read back read_committed).
func TestContract(t *testing.T) {
	for _, tc := range []struct {
		name       string
		delivery   string
		partitions int32
	}{
		{"AtLeastOnce/OnePartition", AtLeastOnce, 1},
		{"AtLeastOnce/FivePartitions", AtLeastOnce, 5},
		{"ExactlyOnce/ThreePartitions", ExactlyOnce, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
				c := newCluster(t)
				cfg := testConfig(c)
				cfg.Delivery = tc.delivery
				cfg.TopicPartitions = tc.partitions
				return newSink(t, cfg), newReader(c, cfg)
			})
		})
	}
}
