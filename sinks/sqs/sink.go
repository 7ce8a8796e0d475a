package sqs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Sink sends batches to SQS queues (see the package doc).
type Sink struct {
	cfg    Config
	client *sqs.Client
	urls   sync.Map // queue name → its URL, looked up once
}

var _ cdc.NonRetainingSink = (*Sink)(nil)

// New checks cfg and returns a sink; it does not contact SQS.
func New(cfg Config) (*Sink, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ac, err := cfg.Conn.Load(context.Background())
	if err != nil {
		return nil, fmt.Errorf("sqs sink: %w", err)
	}
	return &Sink{cfg: cfg, client: sqs.NewFromConfig(ac)}, nil
}

// RetainsNoBatch: Write copies what it sends.
func (s *Sink) RetainsNoBatch() {}

// Close releases nothing: every Write has returned.
func (s *Sink) Close(context.Context) error { return nil }

// Client is the sink's SQS client.
func (s *Sink) Client() *sqs.Client { return s.client }

// QueueOf returns the queue URL of table t, looking a name up once.
func (s *Sink) QueueOf(ctx context.Context, t *cdc.TableInfo) (string, error) {
	q := sinkkind.ExpandName(s.cfg.Queue, t, s.cfg.Pipeline)
	if strings.HasPrefix(q, "https://") || strings.HasPrefix(q, "http://") {
		return q, nil
	}
	if u, ok := s.urls.Load(q); ok {
		return u.(string), nil
	}
	out, err := s.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q)})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		failed := fmt.Errorf("queue %s: look up its URL: %s", q, redact.Text(err.Error()))
		var missing *types.QueueDoesNotExist
		if errors.As(err, &missing) || !awssink.Transient(err) {
			return "", cdc.Permanent(failed)
		}
		return "", failed
	}
	u := aws.ToString(out.QueueUrl)
	s.urls.Store(q, u)
	s.cfg.Logger.Info("sqs: queue found", "queue", q, "url", u)
	return u, nil
}

// Write sends b's events and returns once SQS accepted every one.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if len(b.Messages) == 0 {
		return nil
	}
	url, err := s.QueueOf(ctx, &b.Table)
	if err != nil {
		return err
	}
	where := "queue " + url
	fifo := s.cfg.FIFO()
	entries := make([]awssink.Entry, len(b.Messages))
	msgs := make([]types.SendMessageBatchRequestEntry, len(b.Messages))
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
		Limits:  awssink.Limits{Entries: MaxBatchEntries, Bytes: s.cfg.MaxMessageBytes},
		Retry:   s.cfg.Retry,
		Retried: s.cfg.Retried,
		Event:   func(i int) string { return awssink.Event(&b.Table, &b.Messages[i]) },
		Send: func(ctx context.Context, idx []int) ([]awssink.Failure, error) {
			req := make([]types.SendMessageBatchRequestEntry, len(idx))
			for n, i := range idx {
				req[n] = msgs[i]
			}
			out, err := s.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: req})
			if err != nil {
				return nil, err
			}
			return failures(idx, out), nil
		},
	})
}

// entry is m's request entry (its Id is its index in the batch) and its
// size: the body and the attributes.
func (s *Sink) entry(m *cdc.Message, b *cdc.Batch, i int, fifo bool) (types.SendMessageBatchRequestEntry, int, error) {
	var e types.SendMessageBatchRequestEntry
	if len(m.Value) == 0 {
		return e, 0, errors.New("no value (a tombstone): an SQS message needs a body")
	}
	if !awssink.Body(m.Value) {
		return e, 0, errors.New("the value is not text an SQS message body can hold")
	}
	attrs, asize, err := awssink.Attributes(m, b)
	if err != nil {
		return e, 0, err
	}
	size := len(m.Value) + asize
	if size > s.cfg.MaxMessageBytes {
		return e, 0, fmt.Errorf("%d bytes (value %d, attributes %d), more than a message takes (%d, max_message_bytes): not sent",
			size, len(m.Value), asize, s.cfg.MaxMessageBytes)
	}
	e.Id = aws.String(strconv.Itoa(i))
	e.MessageBody = aws.String(string(m.Value))
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

// failures are the entries of a request SQS did not take; an entry it
// names in neither list is taken as failed, to be sent again.
func failures(idx []int, out *sqs.SendMessageBatchOutput) []awssink.Failure {
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
			fs = append(fs, awssink.Failure{Index: i, Reason: "not in SendMessageBatch's answer"})
		}
	}
	return fs
}
