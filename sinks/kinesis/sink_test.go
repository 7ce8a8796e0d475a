package kinesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink/awstest"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestFailures reads a PutRecords answer as Kinesis writes one when some
// shards are throttled: the failed records, by their index in the batch;
// a KMS refusal is permanent, throttling not.
func TestFailures(t *testing.T) {
	ok := types.PutRecordsResultEntry{SequenceNumber: aws.String("4959"), ShardId: aws.String("shardId-000000000000")}
	throttled := types.PutRecordsResultEntry{ErrorCode: aws.String("ProvisionedThroughputExceededException"),
		ErrorMessage: aws.String("Rate exceeded for shard shardId-000000000001 in stream s under account 1.")}
	kms := types.PutRecordsResultEntry{ErrorCode: aws.String("KMSDisabledException"), ErrorMessage: aws.String("key disabled")}
	fs := Failures([]int{4, 5, 7, 9}, []types.PutRecordsResultEntry{ok, throttled, ok, kms})
	if got := fmt.Sprintf("%+v", fs); got != "[{Index:5 Reason:ProvisionedThroughputExceededException: Rate exceeded for shard shardId-000000000001 in stream s under account 1. Permanent:false} {Index:9 Reason:KMSDisabledException: key disabled Permanent:true}]" {
		t.Errorf("failures %s", got)
	}
	if fs := Failures([]int{1, 2}, []types.PutRecordsResultEntry{ok}); len(fs) != 2 || fs[0].Permanent {
		t.Errorf("a short answer: %+v", fs)
	}
}

// TestOversize: a record over 1 MiB stops the table with one line naming
// the event; nothing of the batch is put.
func TestOversize(t *testing.T) {
	faults := &awstest.Faults{}
	s, r := newStreams(t, awstest.Start(t, faults), faults)
	st := sinktest.NewStream("shop", "orders")
	st.ValueBytes = 1100 << 10
	b := st.Snapshot(2, 0)[0]
	before := faults.Sent()
	err := s.Write(context.Background(), b)
	if !errors.Is(err, cdc.ErrPermanent) || !strings.Contains(err.Error(), "event "+b.Messages[0].ID+" (table shop.orders, seq 1, row ") ||
		!strings.Contains(err.Error(), "more than a record takes (1048576): not sent") {
		t.Fatalf("an oversize record: %v", err)
	}
	if n := faults.Sent() - before; n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
	if got, _ := r.ReadAll(context.Background()); len(got) != 0 {
		t.Errorf("%d records put of a refused batch", len(got))
	}
	t.Log(err)
}
