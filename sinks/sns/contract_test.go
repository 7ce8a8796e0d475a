package sns

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/awssink/awstest"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

var topicSeq atomic.Int64

// TestContract runs the sink contract suite against moto's SNS, on a
// standard and a FIFO topic, each read back through an SQS queue of its
// kind subscribed with raw message delivery (the attributes arrive as the
// queue message's).
func TestContract(t *testing.T) {
	sinktest.Timeout = 3 * time.Minute // moto's SQS is slow
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
			faults := &awstest.Faults{}
			conn := awstest.Start(t, faults)
			sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
				s, r := newTopics(t, conn, faults, fifo)
				return s, r
			})
		})
	}
}

// newTopics creates the topics of the tables orders and returns, each
// with a subscribed queue, and returns a sink and the queues' reader.
func newTopics(t *testing.T, conn awssink.Conn, faults *awstest.Faults, fifo bool) (*Sink, *reader) {
	t.Helper()
	ctx := context.Background()
	prefix := fmt.Sprintf("t%d-", topicSeq.Add(1))
	suffix := ""
	if fifo {
		suffix = ".fifo"
	}
	direct := conn
	direct.HTTPClient = nil
	r := &reader{faults: faults}
	var arns []string
	for _, table := range []string{"orders", "returns"} {
		s, err := New(Config{Conn: direct, Topic: "arn:aws:sns:x:1:none"})
		if err != nil {
			t.Fatal(err)
		}
		r.sns = s.client
		in := &sns.CreateTopicInput{Name: aws.String(prefix + table + suffix)}
		if fifo {
			in.Attributes = map[string]string{"FifoTopic": "true"}
		}
		topic, err := s.client.CreateTopic(ctx, in)
		if err != nil {
			t.Fatalf("create topic: %v", err)
		}
		arns = append(arns, aws.ToString(topic.TopicArn))
		url, arn := newQueue(t, r, direct, prefix+table+"-q"+suffix, fifo)
		if _, err := s.client.Subscribe(ctx, &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
			Endpoint: aws.String(arn), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		r.urls = append(r.urls, url)
	}
	tmpl := strings.Replace(arns[0], prefix+"orders", prefix+"{table}", 1)
	s, err := New(Config{Conn: conn, Topic: tmpl, Pipeline: "sinktest",
		Retry: awssink.Retry{Initial: time.Millisecond, Max: 5 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	r.arns = arns
	return s, r
}

func newQueue(t *testing.T, r *reader, conn awssink.Conn, name string, fifo bool) (url, arn string) {
	t.Helper()
	ac, err := conn.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.sqs = sqs.NewFromConfig(ac)
	in := &sqs.CreateQueueInput{QueueName: aws.String(name)}
	if fifo {
		in.Attributes = map[string]string{"FifoQueue": "true"}
	}
	q, err := r.sqs.CreateQueue(context.Background(), in)
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	a, err := r.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(q.QueueUrl), a.Attributes["QueueArn"]
}

// reader receives the subscribed queues; what it received stays.
type reader struct {
	sns    *sns.Client
	sqs    *sqs.Client
	faults *awstest.Faults
	arns   []string
	urls   []string
	got    [][]sinktest.Received
}

func (r *reader) ReadAll(ctx context.Context) ([]sinktest.Received, error) {
	if r.got == nil {
		r.got = make([][]sinktest.Received, len(r.urls))
	}
	var all []sinktest.Received
	for q, url := range r.urls {
		for {
			out, err := r.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
				VisibilityTimeout: 600, MessageAttributeNames: []string{"All"}})
			if err != nil {
				return nil, err
			}
			if len(out.Messages) == 0 {
				break
			}
			del := make([]sqstypes.DeleteMessageBatchRequestEntry, len(out.Messages))
			for i, m := range out.Messages {
				attr := func(k string) string { return aws.ToString(m.MessageAttributes[k].StringValue) }
				var op cdc.Op
				if o := attr(awssink.AttrOp); len(o) == 1 {
					op = cdc.Op(o[0])
				}
				r.got[q] = append(r.got[q], sinktest.Received{ID: attr(awssink.AttrID), Op: op, Value: []byte(aws.ToString(m.Body))})
				del[i] = sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle}
			}
			if _, err := r.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
				return nil, err
			}
		}
		all = append(all, r.got[q]...)
	}
	return all, nil
}

// FailPermanently deletes the topics.
func (r *reader) FailPermanently() {
	for _, arn := range r.arns {
		if _, err := r.sns.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: aws.String(arn)}); err != nil {
			panic(err)
		}
	}
}

// FailTransiently fails the next n requests with 503.
func (r *reader) FailTransiently(n int) { r.faults.Fail(n) }
