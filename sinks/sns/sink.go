package sns

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Sink publishes batches to SNS topics (see the package doc).
type Sink struct {
	cfg    Config
	client *sns.Client
}

var _ cdc.NonRetainingSink = (*Sink)(nil)

// New checks cfg and returns a sink; it does not contact SNS.
func New(cfg Config) (*Sink, error) {
	cfg.Retry = cfg.Retry.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ac, err := cfg.Conn.Load(context.Background())
	if err != nil {
		return nil, fmt.Errorf("sns sink: %w", err)
	}
	return &Sink{cfg: cfg, client: sns.NewFromConfig(ac)}, nil
}

// RetainsNoBatch: Write copies what it sends.
func (s *Sink) RetainsNoBatch() {}

// Close releases nothing: every Write has returned.
func (s *Sink) Close(context.Context) error { return nil }

// Client is the sink's SNS client.
func (s *Sink) Client() *sns.Client { return s.client }

// TopicOf returns the topic ARN of table t.
func (s *Sink) TopicOf(t *cdc.TableInfo) string {
	return sinkkind.ExpandName(s.cfg.Topic, t, s.cfg.Pipeline)
}

// Write publishes b's events and returns once SNS accepted every one.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if len(b.Messages) == 0 {
		return nil
	}
	arn := s.TopicOf(&b.Table)
	where := "topic " + arn
	fifo := s.cfg.FIFO()
	entries := make([]awssink.Entry, len(b.Messages))
	msgs := make([]types.PublishBatchRequestEntry, len(b.Messages))
	for i := range b.Messages {
		m := &b.Messages[i]
		e, size, err := s.entry(m, b, i, fifo)
		if err != nil {
			return cdc.Permanent(fmt.Errorf("%s: %s: %w", where, awssink.Event(&b.Table, m), err))
		}
		msgs[i] = e
		entries[i] = awssink.Entry{Group: strconv.Itoa(i), Size: size}
		if fifo {
			entries[i].Group = aws.ToString(e.MessageGroupId)
		}
	}
	return awssink.Deliver(ctx, awssink.Batch{
		Where:   where,
		Entries: entries,
		Limits:  awssink.Limits{Entries: MaxBatchEntries, Bytes: MaxMessageBytes},
		Retry:   s.cfg.Retry,
		Retried: s.cfg.Retried,
		Event:   func(i int) string { return awssink.Event(&b.Table, &b.Messages[i]) },
		Send: func(ctx context.Context, idx []int) ([]awssink.Failure, error) {
			req := make([]types.PublishBatchRequestEntry, len(idx))
			for n, i := range idx {
				req[n] = msgs[i]
			}
			out, err := s.client.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: aws.String(arn), PublishBatchRequestEntries: req})
			if err != nil {
				return nil, err
			}
			return failures(idx, out), nil
		},
	})
}

// entry is m's request entry (its Id is its index in the batch) and its
// size: the message and the attributes.
func (s *Sink) entry(m *cdc.Message, b *cdc.Batch, i int, fifo bool) (types.PublishBatchRequestEntry, int, error) {
	var e types.PublishBatchRequestEntry
	if len(m.Value) == 0 {
		return e, 0, errors.New("no value (a tombstone): an SNS message needs a body")
	}
	if !awssink.Body(m.Value) {
		return e, 0, errors.New("the value is not text an SNS message can hold")
	}
	attrs, asize, err := awssink.Attributes(m, b)
	if err != nil {
		return e, 0, err
	}
	size := len(m.Value) + asize
	if size > MaxMessageBytes {
		return e, 0, fmt.Errorf("%d bytes (value %d, attributes %d), more than an SNS message takes (%d): not sent",
			size, len(m.Value), asize, MaxMessageBytes)
	}
	e.Id = aws.String(strconv.Itoa(i))
	e.Message = aws.String(string(m.Value))
	e.MessageAttributes = make(map[string]types.MessageAttributeValue, len(attrs))
	for _, a := range attrs {
		v := types.MessageAttributeValue{DataType: aws.String(a.Type())}
		if a.Binary {
			v.BinaryValue = a.Value
		} else {
			v.StringValue = aws.String(string(a.Value))
		}
		e.MessageAttributes[a.Name] = v
	}
	if fifo {
		e.MessageGroupId = aws.String(awssink.GroupID(s.cfg.Encoding.RowKey(m.Key)))
		e.MessageDeduplicationId = aws.String(awssink.GroupID([]byte(m.ID)))
	}
	return e, size, nil
}

// failures are the entries of a request SNS did not take; an entry it
// names in neither list is taken as failed, to be sent again.
func failures(idx []int, out *sns.PublishBatchOutput) []awssink.Failure {
	seen := make(map[int]bool, len(idx))
	var fs []awssink.Failure
	for _, f := range out.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil {
			continue
		}
		seen[i] = true
		fs = append(fs, awssink.Failure{Index: i, Permanent: f.SenderFault,
			Reason: aws.ToString(f.Code) + ": " + aws.ToString(f.Message)})
	}
	for _, ok := range out.Successful {
		if i, err := strconv.Atoi(aws.ToString(ok.Id)); err == nil {
			seen[i] = true
		}
	}
	for _, i := range idx {
		if !seen[i] {
			fs = append(fs, awssink.Failure{Index: i, Reason: "not in PublishBatch's answer"})
		}
	}
	return fs
}
