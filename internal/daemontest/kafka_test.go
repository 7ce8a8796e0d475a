package daemontest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newKfake starts an in-process Kafka cluster of three brokers on
// 127.0.0.1, which the daemon process reaches through its listen
// addresses.
func newKfake(t testing.TB) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// readTopic reads every record of topic from its start to its current
// end, as a read_committed consumer when committed is set (records of
// aborted transactions never show), else read_uncommitted. Control
// records (transaction markers) are consumed to know where the end is and
// are not returned.
func readTopic(ctx context.Context, brokers []string, topic string, committed bool) ([]*kgo.Record, error) {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	remaining := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			remaining[o.Partition] = o.Offset
		}
	})
	var out []*kgo.Record
	for len(remaining) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w (%d partitions not read to their end)", topic, err, len(remaining))
		}
		if err := fs.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := remaining[r.Partition]
			if !ok {
				return
			}
			if r.Offset+1 >= end {
				delete(remaining, r.Partition)
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out, nil
}

// kafkaEvents decodes records into events, checking that each record's id
// header is the id its value's source fields make and that each tombstone
// (the Kafka sink's default) directly follows its delete in the partition.
func kafkaEvents(recs []*kgo.Record) ([]event, error) {
	out := make([]event, 0, len(recs))
	last := map[int32]*kgo.Record{}
	for i, r := range recs {
		prev := last[r.Partition]
		last[r.Partition] = r
		if r.Value == nil {
			if prev == nil || prev.Value == nil || !bytes.Equal(prev.Key, r.Key) || !strings.Contains(string(prev.Value), `"op":"d"`) {
				return nil, fmt.Errorf("record %d (partition %d offset %d): a tombstone that does not follow its delete", i, r.Partition, r.Offset)
			}
			continue
		}
		e, err := decodeEvent(r.Value)
		if err != nil {
			return nil, fmt.Errorf("record %d (partition %d offset %d): %v", i, r.Partition, r.Offset, err)
		}
		var id string
		for _, h := range r.Headers {
			if h.Key == "id" {
				id = string(h.Value)
			}
		}
		if id != e.ID {
			return nil, fmt.Errorf("record %d (offset %d): header id %q, but its value is event %s", i, r.Offset, id, e.ID)
		}
		out = append(out, e)
	}
	return out, nil
}
