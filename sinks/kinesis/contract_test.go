package kinesis

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/awssink/awstest"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

var streamSeq atomic.Int64

// TestContract runs the sink contract suite against moto's Kinesis: each
// sub-test writes to streams of its own of two shards, read back shard by
// shard from the start; the event id comes from the value's source block
// (a record has no headers).
func TestContract(t *testing.T) {
	sinktest.Timeout = 3 * time.Minute // moto on a busy machine
	faults := &awstest.Faults{}
	conn := awstest.Start(t, faults)
	sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
		s, r := newStreams(t, conn, faults)
		return s, r
	})
}

func newStreams(t *testing.T, conn awssink.Conn, faults *awstest.Faults) (*Sink, *reader) {
	t.Helper()
	prefix := fmt.Sprintf("s%d-", streamSeq.Add(1))
	s, err := New(Config{Conn: conn, Stream: prefix + "{table}", Pipeline: "sinktest",
		Retry: awssink.Retry{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{client: s.client, faults: faults, iters: map[string]*string{}}
	ctx := context.Background()
	for _, table := range []string{"orders", "returns"} {
		name := prefix + table
		if _, err := s.client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(name), ShardCount: aws.Int32(2)}); err != nil {
			t.Fatalf("create stream %s: %v", name, err)
		}
		r.streams = append(r.streams, name)
	}
	return s, r
}

// reader reads a sub-test's streams shard by shard; what it read stays.
type reader struct {
	client  *kinesis.Client
	faults  *awstest.Faults
	streams []string
	iters   map[string]*string // stream/shard → next iterator
	got     map[string][]sinktest.Received
}

func (r *reader) ReadAll(ctx context.Context) ([]sinktest.Received, error) {
	if r.got == nil {
		r.got = map[string][]sinktest.Received{}
		for _, st := range r.streams {
			shards, err := r.client.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String(st)})
			if err != nil {
				return nil, err
			}
			for _, sh := range shards.Shards {
				it, err := r.client.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(st),
					ShardId: sh.ShardId, ShardIteratorType: types.ShardIteratorTypeTrimHorizon})
				if err != nil {
					return nil, err
				}
				r.iters[st+"/"+aws.ToString(sh.ShardId)] = it.ShardIterator
			}
		}
	}
	var all []sinktest.Received
	for k, it := range r.iters {
		for it != nil {
			out, err := r.client.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: it})
			if err != nil {
				return nil, fmt.Errorf("get records of %s: %w", k, err)
			}
			for _, rec := range out.Records {
				got, err := received(rec)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				r.got[k] = append(r.got[k], got)
			}
			it = out.NextShardIterator
			if len(out.Records) == 0 {
				break
			}
		}
		r.iters[k] = it
		all = append(all, r.got[k]...)
	}
	return all, nil
}

// received is a record as the suite compares it: the id from the
// envelope's source block.
func received(rec types.Record) (sinktest.Received, error) {
	var env struct {
		Op     string `json:"op"`
		Source struct {
			UUID  string `json:"table_uuid"`
			Seq   int64  `json:"sequence_number"`
			RowID int64  `json:"row_id"`
		} `json:"source"`
	}
	if err := json.Unmarshal(rec.Data, &env); err != nil || len(env.Op) != 1 {
		return sinktest.Received{}, fmt.Errorf("record %s: %v (%.80s)", aws.ToString(rec.SequenceNumber), err, rec.Data)
	}
	op := cdc.Op(env.Op[0])
	return sinktest.Received{ID: cdc.EventID(env.Source.UUID, env.Source.Seq, env.Source.RowID, op), Op: op, Value: rec.Data}, nil
}

// FailPermanently deletes the streams.
func (r *reader) FailPermanently() {
	for _, st := range r.streams {
		if _, err := r.client.DeleteStream(context.Background(), &kinesis.DeleteStreamInput{StreamName: aws.String(st)}); err != nil {
			panic(err)
		}
	}
}

// FailTransiently fails the next n requests with 503.
func (r *reader) FailTransiently(n int) { r.faults.Fail(n) }
