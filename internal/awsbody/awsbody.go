// Package awsbody sends the AWS SDK's request bodies without their
// WriteTo, for every AWS client of the daemon (the S3 and Glue catalogs,
// the SQS, SNS and Kinesis sinks).
//
// The SDK closes a request's body as soon as the answer's headers arrive,
// and its body's WriteTo then returns io.EOF as an error; net/http, still
// checking the body for bytes past its Content-Length (an io.Copy, which
// prefers WriteTo), takes that for a failed write and closes the
// connection under the answer being read: an answer longer than the
// connection's first buffer then failed with "use of closed network
// connection" now and then. A body's Read after the close ends with
// io.EOF, which io.Copy takes as the end it is.
package awsbody

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// ReadOnly is a request body with only Read and Close.
type ReadOnly struct{ io.ReadCloser }

// Wrap returns req's body as a ReadOnly (req.Body is changed in place).
func Wrap(req *http.Request) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = ReadOnly{req.Body}
	}
}

// Client is an aws.HTTPClient sending every request body as ReadOnly.
type Client struct{ Next aws.HTTPClient }

// Do sends req through Next with its body wrapped.
func (c Client) Do(req *http.Request) (*http.Response, error) {
	Wrap(req)
	return c.Next.Do(req)
}
