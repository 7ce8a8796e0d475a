// Package awssink is what the SQS, SNS and Kinesis sinks share: the AWS
// connection section (Conn: region, endpoint, static credentials, else the
// SDK's default chain, as the S3 storage takes them), and Deliver, which
// sends a batch's entries in requests of a transport's size and count,
// retries the entries a request failed for with backoff and returns nil
// only when every entry is accepted.
//
// Order. A request holds at most one entry of a group (a FIFO message
// group, a Kinesis partition key): a request's entries succeed or fail
// one by one, so two entries of a key in one request could land in the
// wrong order when the first failed and the second did not. The failed
// entries go back, in order, before the entries not yet sent; a key's
// later entries are never sent before its earlier ones are accepted.
package awssink
