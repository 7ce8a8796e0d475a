package opensearch

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// outcome is what became of one bulk item.
type outcome int

const (
	// written: the node holds the item, or holds something newer.
	written outcome = iota
	// again: the node could not take the item now; send it again.
	again
	// refused: the node will never take the item as it is.
	refused
)

// classify reads one item of a _bulk answer (OpenSearch's "Bulk" API
// reference, response body: items[].<action>.{status, result, error}).
// Each rule names the case it is for.
func classify(r opensearchapi.BulkRespItem, isDelete bool) outcome {
	switch {
	case r.Status >= 200 && r.Status < 300:
		return written
	case r.Status == http.StatusConflict:
		// version_conflict_engine_exception: the document has this
		// version or a newer one; the item is a replay or a late event.
		return written
	case r.Status == http.StatusNotFound && isDelete:
		// A delete of a document that is not there (result not_found)
		// leaves the index as it should be.
		return written
	case r.Status == http.StatusTooManyRequests:
		// es_rejected_execution_exception (the write queue is full) and
		// the flood-stage cluster block are both answered 429.
		return again
	case r.Status >= 500:
		// unavailable_shards_exception, node_not_connected, a shard
		// failing: another attempt lands on a recovered copy.
		return again
	}
	// mapper_parsing_exception, document_parsing_exception,
	// strict_dynamic_mapping_exception, invalid_index_name_exception,
	// illegal_argument_exception, index_closed_exception...
	return refused
}

// reason is an item error's one-line reason: type, reason and cause.
func reason(r opensearchapi.BulkRespItem) string {
	if r.Error == nil {
		return http.StatusText(r.Status)
	}
	s := r.Error.Type + ": " + r.Error.Reason
	if c := r.Error.Cause; c.Type != "" {
		s += fmt.Sprintf(" (caused by %s: %s)", c.Type, c.Reason)
	}
	return s
}

// bulkAnswer is a decoded _bulk answer, its items in request order.
type bulkAnswer struct {
	Errors bool
	Items  []opensearchapi.BulkRespItem
}

// decodeAnswer decodes a _bulk answer body; each item is the one value
// of its action-named object.
func decodeAnswer(body []byte) (bulkAnswer, error) {
	var resp opensearchapi.BulkResp
	if err := json.Unmarshal(body, &resp); err != nil {
		return bulkAnswer{}, fmt.Errorf("decode _bulk answer: %w", err)
	}
	a := bulkAnswer{Errors: resp.Errors, Items: make([]opensearchapi.BulkRespItem, len(resp.Items))}
	for i, m := range resp.Items {
		if len(m) != 1 {
			return bulkAnswer{}, fmt.Errorf("decode _bulk answer: item %d has %d actions", i, len(m))
		}
		for _, v := range m {
			a.Items[i] = v
		}
	}
	return a, nil
}

// requestError is the reason of an answer that refused a whole request:
// OpenSearch's error object {"error":{"type","reason"},"status"}, or the
// start of the body.
func requestError(status int, body []byte) string {
	var e struct {
		Error struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Type != "" {
		return fmt.Sprintf("%d %s: %s", status, e.Error.Type, e.Error.Reason)
	}
	if len(body) > 200 {
		body = body[:200]
	}
	return fmt.Sprintf("%d %s: %q", status, http.StatusText(status), body)
}
