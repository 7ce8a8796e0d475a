// Package awstest runs the AWS sinks' tests against moto's server (SQS,
// SNS and Kinesis on loopback, internal/moto): the connection section
// that reaches it, and Faults, which fails requests before they reach it.
package awstest

import (
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/icecdc/icecdc/internal/moto"
	"github.com/icecdc/icecdc/sinks/awssink"
)

// Start starts a moto server for t (or skips t without moto, fails it
// under ICECDC_REQUIRE_SINK_SERVERS=1) and returns the connection section
// that reaches it, through faults (when not nil).
func Start(t testing.TB, faults *Faults) awssink.Conn {
	t.Helper()
	srv := moto.Start(t)
	c := awssink.Conn{Region: moto.Region, Endpoint: srv.Endpoint, AccessKeyID: moto.AccessKey, SecretAccessKey: moto.SecretKey}
	if faults != nil {
		c.HTTPClient = faults
	}
	return c
}

// Faults is an aws.HTTPClient that answers the next requests it is told
// to fail with 503 Service Unavailable, without sending them, and sends
// the others to the server.
type Faults struct {
	Next aws.HTTPClient // default the SDK's client

	mu   sync.Mutex
	fail int
	sent int
}

// Fail makes the next n requests fail.
func (f *Faults) Fail(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// Sent is how many requests reached the server.
func (f *Faults) Sent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent
}

// Do fails req or sends it.
func (f *Faults) Do(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	fail := f.fail > 0
	if fail {
		f.fail--
	} else {
		f.sent++
	}
	if f.Next == nil {
		f.Next = awshttp.NewBuildableClient()
	}
	next := f.Next
	f.mu.Unlock()
	if !fail {
		return next.Do(req)
	}
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		Status: "503 Service Unavailable", StatusCode: http.StatusServiceUnavailable,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: http.NoBody, Request: req,
	}, nil
}
