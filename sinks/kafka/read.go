package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readToEnd reads topics from their start to the end they have when it is
// called, and calls fn for every data record, in offset order per
// partition. With committed it reads as a read_committed consumer:
// records of aborted transactions are skipped, and the end is still the
// high watermark, not the last stable offset: a transaction left open by
// one producer (another table's batch in flight, on the shared checkpoint
// topic) holds the last stable offset back, and records that other
// producers committed after it would be missed — a new owner restoring a
// table's checkpoint would then start from an older one and deliver its
// events again. The read waits instead until such transactions end (they
// commit, abort, are fenced, or time out). A topic that does not exist
// reads as empty.
//
// Knowing when the end is reached needs the offset of the last record
// before it, which under read_committed is often a transaction marker
// that consumers never see: we keep control records, so every offset up
// to the end shows up, and skip them here. Compaction can leave gaps, but
// never at the end: the log's last record is in the active segment, which
// the cleaner does not touch.
func readToEnd(ctx context.Context, base []kgo.Opt, committed bool, topics []string, fn func(*kgo.Record)) error {
	isolation := kgo.ReadUncommitted()
	if committed {
		isolation = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.FetchIsolationLevel(isolation),
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list start offsets of %v: %w", topics, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list end offsets of %v: %w", topics, err)
	}

	type tp struct {
		topic     string
		partition int32
	}
	remaining := map[tp]int64{}
	assign := map[string]map[int32]kgo.Offset{}
	var listErr error
	ends.Each(func(end kadm.ListedOffset) {
		if end.Err != nil {
			if !errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
				listErr = errors.Join(listErr, fmt.Errorf("end offset of %s[%d]: %w", end.Topic, end.Partition, end.Err))
			}
			return
		}
		start, ok := starts.Lookup(end.Topic, end.Partition)
		if !ok || start.Err != nil {
			err := fmt.Errorf("no start offset for %s[%d]", end.Topic, end.Partition)
			if ok {
				err = fmt.Errorf("start offset of %s[%d]: %w", end.Topic, end.Partition, start.Err)
			}
			listErr = errors.Join(listErr, err)
			return
		}
		if end.Offset <= start.Offset {
			return
		}
		remaining[tp{end.Topic, end.Partition}] = end.Offset
		if assign[end.Topic] == nil {
			assign[end.Topic] = map[int32]kgo.Offset{}
		}
		assign[end.Topic][end.Partition] = kgo.NewOffset().At(start.Offset)
	})
	if listErr != nil {
		return listErr
	}
	if len(remaining) == 0 {
		return nil
	}
	cl.AddConsumePartitions(assign)

	for len(remaining) > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			fetchErr = errors.Join(fetchErr, fmt.Errorf("fetch %s[%d]: %w", t, p, err))
		})
		if fetchErr != nil {
			return fetchErr
		}
		fetches.EachRecord(func(r *kgo.Record) {
			k := tp{r.Topic, r.Partition}
			end, ok := remaining[k]
			if !ok {
				return
			}
			if r.Offset+1 >= end {
				// The end is reached. Read committed, the record just
				// before it may be one of an aborted transaction, never
				// seen: the marker that ends the transaction, after the
				// end, shows it has been passed.
				delete(remaining, k)
			}
			if r.Offset < end && !r.Attrs.IsControl() {
				fn(r)
			}
		})
	}
	return nil
}
