package kafka

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/twmb/franz-go/pkg/kgo"
)

// CheckpointRecord is one committed record of the checkpoint topic.
type CheckpointRecord struct {
	Key        string         // <pipeline>/<namespace>.<table>
	Checkpoint cdc.Checkpoint // zero for a tombstone (Deleted)
	Deleted    bool           // a tombstone: the table's checkpoint was forgotten
	Owner      string         // the writer's member (cluster mode), else ""
	Generation int32          // the writer's group generation (cluster mode), else -1
	Time       time.Time      // the record's timestamp
	Partition  int32
	Offset     int64
}

// ReadCheckpoints reads the checkpoint topic of cfg from its start to its
// last stable offset as a read_committed consumer and calls fn for every
// record, in offset order per partition: the history of checkpoints that
// compaction has not removed yet. A record that does not decode is an
// error naming its offset.
func ReadCheckpoints(ctx context.Context, cfg Config, fn func(CheckpointRecord)) error {
	cfg = cfg.withDefaults()
	base, err := cfg.commonOpts()
	if err != nil {
		return fmt.Errorf("kafka config: %w", err)
	}
	var bad error
	err = readToEnd(ctx, base, true, []string{cfg.CheckpointTopic}, func(r *kgo.Record) {
		if bad != nil {
			return
		}
		cr := CheckpointRecord{Key: string(r.Key), Generation: -1, Time: r.Timestamp, Partition: r.Partition, Offset: r.Offset}
		for _, h := range r.Headers {
			switch h.Key {
			case HeaderOwner:
				cr.Owner = string(h.Value)
			case HeaderGeneration:
				g, err := strconv.ParseInt(string(h.Value), 10, 32)
				if err != nil {
					bad = fmt.Errorf("checkpoint record %s[%d]@%d: header generation %q: %w", r.Topic, r.Partition, r.Offset, h.Value, err)
					return
				}
				cr.Generation = int32(g)
			}
		}
		if r.Value == nil {
			cr.Deleted = true
		} else if err := json.Unmarshal(r.Value, &cr.Checkpoint); err != nil {
			bad = fmt.Errorf("checkpoint record %s[%d]@%d: %w", r.Topic, r.Partition, r.Offset, err)
			return
		}
		fn(cr)
	})
	if err != nil {
		return fmt.Errorf("read checkpoint topic %s: %w", cfg.CheckpointTopic, err)
	}
	return bad
}

// ClientOpts returns the client options cfg gives (brokers, TLS, SASL,
// client id), for other clients on the same cluster, such as cluster
// mode's group member.
func (c Config) ClientOpts() ([]kgo.Opt, error) { return c.withDefaults().commonOpts() }

// WithDefaults returns c with its empty fields set to their defaults.
func (c Config) WithDefaults() Config { return c.withDefaults() }
