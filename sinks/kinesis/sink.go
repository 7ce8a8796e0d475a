package kinesis

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/awssink"
	"github.com/icecdc/icecdc/sinks/sinkkind"
)

// Sink puts batches into Kinesis streams (see the package doc).
type Sink struct {
	cfg    Config
	client *kinesis.Client
}

var _ cdc.NonRetainingSink = (*Sink)(nil)

// New checks cfg and returns a sink; it does not contact Kinesis.
func New(cfg Config) (*Sink, error) {
	cfg.Retry = cfg.Retry.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ac, err := cfg.Conn.Load(context.Background())
	if err != nil {
		return nil, fmt.Errorf("kinesis sink: %w", err)
	}
	return &Sink{cfg: cfg, client: kinesis.NewFromConfig(ac)}, nil
}

// RetainsNoBatch: the SDK has sent the values when Write returns.
func (s *Sink) RetainsNoBatch() {}

// Close releases nothing: every Write has returned.
func (s *Sink) Close(context.Context) error { return nil }

// Client is the sink's Kinesis client.
func (s *Sink) Client() *kinesis.Client { return s.client }

// StreamOf returns the stream (name or ARN) of table t.
func (s *Sink) StreamOf(t *cdc.TableInfo) string {
	return sinkkind.ExpandName(s.cfg.Stream, t, s.cfg.Pipeline)
}

// Write puts b's events and returns once every record is in the stream.
func (s *Sink) Write(ctx context.Context, b *cdc.Batch) error {
	if len(b.Messages) == 0 {
		return nil
	}
	stream := s.StreamOf(&b.Table)
	where := "stream " + stream
	entries := make([]awssink.Entry, len(b.Messages))
	recs := make([]types.PutRecordsRequestEntry, len(b.Messages))
	for i := range b.Messages {
		m := &b.Messages[i]
		key := awssink.PartitionKey(s.cfg.Encoding.RowKey(m.Key))
		size := len(m.Value) + len(key)
		if size > MaxRecordBytes {
			return cdc.Permanent(fmt.Errorf("%s: %s: %d bytes (value %d, partition key %d), more than a record takes (%d): not sent",
				where, awssink.Event(&b.Table, m), size, len(m.Value), len(key), MaxRecordBytes))
		}
		recs[i] = types.PutRecordsRequestEntry{Data: m.Value, PartitionKey: aws.String(key)}
		entries[i] = awssink.Entry{Group: key, Size: size}
	}
	return awssink.Deliver(ctx, awssink.Batch{
		Where:   where,
		Entries: entries,
		Limits:  awssink.Limits{Entries: MaxBatchRecords, Bytes: MaxBatchBytes},
		Retry:   s.cfg.Retry,
		Retried: s.cfg.Retried,
		Event:   func(i int) string { return awssink.Event(&b.Table, &b.Messages[i]) },
		Send: func(ctx context.Context, idx []int) ([]awssink.Failure, error) {
			in := &kinesis.PutRecordsInput{Records: make([]types.PutRecordsRequestEntry, len(idx))}
			if strings.HasPrefix(stream, "arn:") {
				in.StreamARN = aws.String(stream)
			} else {
				in.StreamName = aws.String(stream)
			}
			for n, i := range idx {
				in.Records[n] = recs[i]
			}
			out, err := s.client.PutRecords(ctx, in)
			if err != nil {
				return nil, err
			}
			return Failures(idx, out.Records), nil
		},
	})
}

// Failures are the records of a PutRecords answer that carry an error
// code (idx maps the answer's records, in request order, to the batch).
// Throttling and internal failures are sent again; a KMS refusal (a
// disabled or missing key, a denied grant) stops the table. An answer of
// another length than the request fails every record, to be sent again.
func Failures(idx []int, out []types.PutRecordsResultEntry) []awssink.Failure {
	var fs []awssink.Failure
	if len(out) != len(idx) {
		for _, i := range idx {
			fs = append(fs, awssink.Failure{Index: i, Reason: fmt.Sprintf("PutRecords answered %d records for %d", len(out), len(idx))})
		}
		return fs
	}
	for n, r := range out {
		code := aws.ToString(r.ErrorCode)
		if code == "" {
			continue
		}
		permanent := strings.HasPrefix(code, "KMS") && code != "KMSThrottlingException"
		fs = append(fs, awssink.Failure{Index: idx[n], Reason: code + ": " + aws.ToString(r.ErrorMessage), Permanent: permanent})
	}
	return fs
}
