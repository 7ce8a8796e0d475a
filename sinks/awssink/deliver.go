package awssink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/internal/redact"
	"github.com/icecdc/icecdc/retryreport"
)

// Defaults of a zero Retry.
const (
	DefaultRetryInitial = 100 * time.Millisecond
	DefaultRetryMax     = 10 * time.Second
	// DefaultRetryAttempts is how many requests in a row may fail (as a
	// whole or for some entries) before Deliver returns a retryable
	// error to the pipeline, which sends the batch again from its
	// checkpoint.
	DefaultRetryAttempts = 10
)

// Retry paces the retries: exponential backoff with full jitter from
// Initial, capped at Max; Attempts failed requests in a row end Deliver.
type Retry struct {
	Initial  time.Duration
	Max      time.Duration
	Attempts int
}

// WithDefaults sets r's zero fields.
func (r Retry) WithDefaults() Retry {
	if r.Initial == 0 {
		r.Initial = DefaultRetryInitial
	}
	if r.Max == 0 {
		r.Max = DefaultRetryMax
	}
	if r.Attempts == 0 {
		r.Attempts = DefaultRetryAttempts
	}
	return r
}

// Entry is one message of a batch as Deliver sees it.
type Entry struct {
	// Group: a request holds at most one entry of a group (see the
	// package doc).
	Group string
	// Size counts against Limits.Bytes.
	Size int
}

// Limits bound one request.
type Limits struct {
	Entries int
	Bytes   int
}

// Failure is an entry a request did not take.
type Failure struct {
	// Index is the entry's index in Deliver's entries.
	Index int
	// Reason is the service's code and message.
	Reason string
	// Permanent: no retry takes the entry (the service says the sender
	// is at fault).
	Permanent bool
}

// Request sends entries idx (indices into Deliver's entries, in order) as
// one request. It returns the entries the service did not take, or an
// error when the request failed as a whole.
type Request func(ctx context.Context, idx []int) ([]Failure, error)

// Batch is one Deliver call.
type Batch struct {
	// Where names the destination in errors ("queue https://…").
	Where   string
	Entries []Entry
	Limits  Limits
	Retry   Retry
	Send    Request
	// Event names entry i in errors (Event).
	Event func(i int) string
	// Retried, when set, counts a request sent again (0: no HTTP
	// status).
	Retried func(status int)
}

// Deliver sends b's entries and returns nil once every one is accepted.
// An entry the service refuses for good, or a request refused in a way
// no retry changes, ends it with an error wrapping cdc.ErrPermanent; after
// Retry.Attempts failed requests in a row it returns a retryable error.
func Deliver(ctx context.Context, b Batch) error {
	r := b.Retry.WithDefaults()
	pending := make([]int, len(b.Entries))
	for i := range pending {
		pending[i] = i
	}
	failedInARow := 0
	for len(pending) > 0 {
		n := cut(b.Entries, pending, b.Limits)
		req := pending[:n:n]
		failed, err := b.Send(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			why := redact.Text(err.Error())
			if !Transient(err) {
				return cdc.Permanent(fmt.Errorf("%s: %s", b.Where, why))
			}
			failed = failed[:0]
			for _, i := range req {
				failed = append(failed, Failure{Index: i, Reason: why})
			}
			b.retried(status(err))
		} else if len(failed) > 0 {
			b.retried(0)
		}
		if len(failed) == 0 {
			failedInARow = 0
			pending = pending[n:]
			continue
		}
		// pending is in index order, which is the order sent.
		slices.SortFunc(failed, func(a, b Failure) int { return a.Index - b.Index })
		for _, f := range failed {
			if f.Permanent {
				return cdc.Permanent(fmt.Errorf("%s: %s: refused: %s", b.Where, b.Event(f.Index), f.Reason))
			}
		}
		failedInARow++
		last := failed[len(failed)-1]
		if failedInARow == r.Attempts {
			return fmt.Errorf("%s: %d of %d messages not accepted after %d attempts, last: %s: %s",
				b.Where, len(pending)-n+len(failed), len(b.Entries), failedInARow, b.Event(last.Index), last.Reason)
		}
		retryreport.ReportRetry(ctx, fmt.Errorf("%s: %s: %s", b.Where, b.Event(last.Index), last.Reason))
		// The failed entries first, in order, then those not sent yet.
		again := make([]int, 0, len(failed)+len(pending)-n)
		for _, f := range failed {
			again = append(again, f.Index)
		}
		pending = append(again, pending[n:]...)
		if err := sleep(ctx, backoff(r, failedInARow)); err != nil {
			return err
		}
	}
	return nil
}

func (b *Batch) retried(st int) {
	if b.Retried != nil {
		b.Retried(st)
	}
}

// cut returns how many of pending the next request takes: at most
// lim.Entries, while the sizes stay within lim.Bytes (at least one), and
// no group twice.
func cut(entries []Entry, pending []int, lim Limits) int {
	size := 0
	groups := make(map[string]struct{}, min(len(pending), lim.Entries))
	for n, i := range pending {
		e := entries[i]
		if n == lim.Entries || n > 0 && size+e.Size > lim.Bytes {
			return n
		}
		if _, dup := groups[e.Group]; dup {
			return n
		}
		groups[e.Group] = struct{}{}
		size += e.Size
	}
	return len(pending)
}

// Transient reports whether a request's error may pass when it is sent
// again: throttling, a 5xx, a network error; not a refusal of the sender
// (a missing queue, a denied action, a bad signature) or a certificate
// the system does not trust.
func Transient(err error) bool {
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary ||
		retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary {
		return true
	}
	if errors.As(err, new(*tls.CertificateVerificationError)) {
		return false
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorFault() {
		case smithy.FaultServer:
			return true
		case smithy.FaultClient:
			return false
		}
	}
	if st := status(err); st >= 400 && st < 500 {
		return st == 408 || st == 429
	}
	return true
}

// status is err's HTTP status, 0 for none.
func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// backoff is the wait before attempt (from 1): full jitter under an
// exponential ceiling.
func backoff(r Retry, attempt int) time.Duration {
	ceil := r.Initial << min(attempt-1, 20)
	if ceil <= 0 || ceil > r.Max {
		ceil = r.Max
	}
	return time.Duration(rand.Int64N(int64(ceil)) + 1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
