package sqs

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/awssink/awstest"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// queueSeq names each sub-test's queues apart on the one server.
var queueSeq atomic.Int64

// TestContract runs the sink contract suite against moto's SQS, on a
// standard and on a FIFO queue: each sub-test writes to queues of its
// own, and reads them back with receives (deleting what it received).
func TestContract(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		name := "standard"
		if fifo {
			name = "fifo"
		}
		t.Run(name, func(t *testing.T) {
			if fifo && os.Getenv("ICECDC_AWS_FIFO_CONTRACT") != "1" {
				// moto checks each FIFO message against every one kept for
				// deduplication: the suite's thousands take minutes.
				t.Skip("the FIFO contract takes many minutes on moto: set ICECDC_AWS_FIFO_CONTRACT=1 to run it; TestFIFO* and interop/aws_sinks_e2e.py cover FIFO order and deduplication")
			}
			sinktest.Timeout = 3 * time.Minute // moto's SQS is slow
			faults := &awstest.Faults{}
			conn := awstest.Start(t, faults)
			sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
				s, r := newQueues(t, conn, faults, fifo)
				return s, r
			})
		})
	}
}

// newQueues creates the queues of the tables orders and returns (shop
// namespace) for a sink and returns the sink and their reader.
func newQueues(t *testing.T, conn awssink.Conn, faults *awstest.Faults, fifo bool) (*Sink, *reader) {
	t.Helper()
	tmpl := fmt.Sprintf("q%d-{table}", queueSeq.Add(1))
	if fifo {
		tmpl += ".fifo"
	}
	s, err := New(Config{Conn: conn, Queue: tmpl, Pipeline: "sinktest",
		Retry: awssink.Retry{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	r := &reader{client: s.client, faults: faults}
	for _, table := range []string{"orders", "returns"} {
		name := tmpl[:len(tmpl)-len("{table}")] + table
		if fifo {
			name = tmpl[:len(tmpl)-len("{table}.fifo")] + table + ".fifo"
		}
		in := &sqs.CreateQueueInput{QueueName: aws.String(name)}
		if fifo {
			in.Attributes = map[string]string{"FifoQueue": "true"}
		}
		out, err := s.client.CreateQueue(context.Background(), in)
		if err != nil {
			t.Fatalf("create queue %s: %v", name, err)
		}
		r.urls = append(r.urls, aws.ToString(out.QueueUrl))
	}
	return s, r
}

// reader receives a sub-test's queues; what it received stays in got.
type reader struct {
	client *sqs.Client
	faults *awstest.Faults
	urls   []string
	got    [][]sinktest.Received // per queue
}

func (r *reader) ReadAll(ctx context.Context) ([]sinktest.Received, error) {
	if r.got == nil {
		r.got = make([][]sinktest.Received, len(r.urls))
	}
	var all []sinktest.Received
	for q, url := range r.urls {
		ms, err := receiveAll(ctx, r.client, url, true)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			r.got[q] = append(r.got[q], received(m))
		}
		all = append(all, r.got[q]...)
	}
	return all, nil
}

// FailPermanently deletes the queues: sending to them is refused.
func (r *reader) FailPermanently() {
	for _, url := range r.urls {
		if _, err := r.client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
			panic(err)
		}
	}
}

// FailTransiently fails the next n requests with 503.
func (r *reader) FailTransiently(n int) { r.faults.Fail(n) }

// receiveAll receives every message waiting in queue url, in order; it
// deletes them from a FIFO queue, where a message in flight holds back
// the rest of its group (elsewhere the visibility timeout hides them).
func receiveAll(ctx context.Context, c *sqs.Client, url string, del bool) ([]types.Message, error) {
	var out []types.Message
	for {
		got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 600,
			MessageAttributeNames: []string{"All"}, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"},
		})
		if err != nil {
			return nil, fmt.Errorf("receive %s: %w", url, err)
		}
		if len(got.Messages) == 0 {
			return out, nil
		}
		out = append(out, got.Messages...)
		if !del {
			continue
		}
		entries := make([]types.DeleteMessageBatchRequestEntry, len(got.Messages))
		for i, m := range got.Messages {
			entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
		}
		if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
			return nil, fmt.Errorf("delete from %s: %w", url, err)
		}
	}
}

// received is m as the suite compares it: id and op from the attributes.
func received(m types.Message) sinktest.Received {
	attr := func(k string) string { return aws.ToString(m.MessageAttributes[k].StringValue) }
	var op cdc.Op
	if o := attr(awssink.AttrOp); len(o) == 1 {
		op = cdc.Op(o[0])
	}
	return sinktest.Received{ID: attr(awssink.AttrID), Op: op, Value: []byte(aws.ToString(m.Body))}
}
