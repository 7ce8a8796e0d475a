package kafka

import (
	"errors"

	"github.com/icecdc/icecdc/cdc"
	"github.com/twmb/franz-go/pkg/kerr"
)

// permanentErrors are the broker answers that retrying the same batch
// cannot fix: the record or batch is refused as such, the credentials or
// ACLs refuse the sink, or the configuration is wrong. kerr marks many
// more codes as not retryable (CONCURRENT_TRANSACTIONS,
// TRANSACTION_ABORTABLE, UNKNOWN_PRODUCER_ID, ...), but franz-go recovers
// from those or a fresh transaction does, so an explicit list is the
// safer side: an unlisted error is retried by the pipeline instead of
// stopping the table.
var permanentErrors = []*kerr.Error{
	kerr.MessageTooLarge,
	kerr.RecordListTooLarge,
	kerr.InvalidRecord,
	kerr.InvalidTimestamp,
	kerr.InvalidTopicException,
	kerr.InvalidRequiredAcks,
	kerr.UnsupportedForMessageFormat,
	kerr.UnsupportedCompressionType,
	kerr.PolicyViolation,
	kerr.TopicAuthorizationFailed,
	kerr.ClusterAuthorizationFailed,
	kerr.TransactionalIDAuthorizationFailed,
	kerr.SaslAuthenticationFailed,
	kerr.UnsupportedSaslMechanism,
	kerr.InvalidTransactionTimeout,
	// Another producer took over the transactional id: a second daemon
	// runs the pipeline, and this one must stop rather than fight it.
	kerr.ProducerFenced,
}

// isPermanent reports whether err is a broker answer in permanentErrors.
func isPermanent(err error) bool {
	for _, p := range permanentErrors {
		if errors.Is(err, p) {
			return true
		}
	}
	return false
}

// classify adds cdc.ErrPermanent to err when retrying cannot fix it.
func classify(err error) error {
	if err == nil || !isPermanent(err) || cdc.IsPermanent(err) {
		return err
	}
	return cdc.Permanent(err)
}
