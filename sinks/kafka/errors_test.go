package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/icecdc/icecdc/cdc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err       error
		permanent bool
	}{
		{kerr.MessageTooLarge, true},
		{kerr.TopicAuthorizationFailed, true},
		{kerr.ClusterAuthorizationFailed, true},
		{kerr.TransactionalIDAuthorizationFailed, true},
		{kerr.SaslAuthenticationFailed, true},
		{kerr.ProducerFenced, true},
		{fmt.Errorf("producer ID has a fatal, unrecoverable error, err: %w", kerr.ProducerFenced), true},
		{errors.Join(errors.New("produce"), fmt.Errorf("abort: %w", kerr.ProducerFenced)), true},
		// Not retryable by kerr's table, but a retry of the Write fixes
		// them: franz-go or a fresh transaction recovers.
		{kerr.ConcurrentTransactions, false},
		{kerr.TransactionAbortable, false},
		{kerr.InvalidProducerEpoch, false},
		{kerr.UnknownProducerID, false},
		{kerr.InvalidTxnState, false},
		{kerr.UnknownServerError, false},
		{kerr.NotLeaderForPartition, false},
		{kerr.UnknownTopicOrPartition, false},
		{kgo.ErrRecordTimeout, false},
		{kgo.ErrClientClosed, false},
		{context.Canceled, false},
	} {
		err := classify(fmt.Errorf("produce: %w", tc.err))
		if got := errors.Is(err, cdc.ErrPermanent); got != tc.permanent {
			t.Errorf("%v: permanent = %v, want %v", tc.err, got, tc.permanent)
		}
		if !errors.Is(err, tc.err) {
			t.Errorf("%v: classify lost the cause", tc.err)
		}
	}
	if classify(nil) != nil {
		t.Error("classify(nil) != nil")
	}
	once := classify(kerr.MessageTooLarge)
	if twice := classify(once); twice != once {
		t.Errorf("classify wraps twice: %v", twice)
	}
}
