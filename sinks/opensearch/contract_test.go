package opensearch

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/icecdc/icecdc/cdc"
	"github.com/icecdc/icecdc/sinks/sinktest"
)

// TestContract runs the sink contract suite against the test node, with
// requests of a few documents so that batches span several. The suite's
// values are whole debezium-json envelopes, which the sink indexes as
// they are; the reader takes each event's id back from the document's
// source block (a delete's from the document it removed).
func TestContract(t *testing.T) {
	sinktest.Run(t, func(t *testing.T) (cdc.Sink, sinktest.Reader) {
		node, url := newBulkNode(t)
		s, err := New(Config{
			URLs: []string{url}, Pipeline: "sinktest",
			Retry: RetryConfig{Initial: time.Millisecond, Max: 5 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		s.cfg.Batch.MaxDocs = 64
		return s, contractReader{node}
	})
}

type contractReader struct{ n *bulkNode }

// ReadAll returns the items the node applied, as events.
func (r contractReader) ReadAll(context.Context) ([]sinktest.Received, error) {
	r.n.mu.Lock()
	defer r.n.mu.Unlock()
	type row struct {
		uuid  string
		rowID int64
	}
	last := map[string]row{} // index/id → the row its document came from
	var out []sinktest.Received
	for _, it := range r.n.applied {
		k := it.index + "/" + it.id
		seq := it.version >> IndexBits
		if it.verb == "delete" {
			rw, ok := last[k]
			if !ok {
				return nil, fmt.Errorf("delete of %s, which was never indexed", k)
			}
			out = append(out, sinktest.Received{ID: cdc.EventID(rw.uuid, seq, rw.rowID, cdc.OpDelete), Op: cdc.OpDelete, Deleted: true})
			continue
		}
		var env struct {
			Op     string `json:"op"`
			Source struct {
				UUID  string `json:"table_uuid"`
				RowID int64  `json:"row_id"`
			} `json:"source"`
		}
		if err := json.Unmarshal([]byte(it.source), &env); err != nil || len(env.Op) != 1 {
			return nil, fmt.Errorf("document %s: %v (%.80s)", k, err, it.source)
		}
		last[k] = row{env.Source.UUID, env.Source.RowID}
		op := cdc.Op(env.Op[0])
		// The document carries the id of the event that wrote it.
		id, doc, err := sinktest.SplitEventID([]byte(it.source))
		if err != nil {
			return nil, fmt.Errorf("document %s: %w", k, err)
		}
		if want := cdc.EventID(env.Source.UUID, seq, env.Source.RowID, op); id != want {
			return nil, fmt.Errorf("document %s carries event id %q, written by event %q", k, id, want)
		}
		out = append(out, sinktest.Received{ID: id, Op: op, Value: doc})
	}
	return out, nil
}

// FailPermanently makes the node refuse every document as unmappable.
func (r contractReader) FailPermanently() {
	r.n.mu.Lock()
	defer r.n.mu.Unlock()
	r.n.reject = func(string, string, string) (int, string) { return 400, "mapper_parsing_exception" }
}

// FailTransiently makes the next n requests fail with 503.
func (r contractReader) FailTransiently(n int) {
	r.n.mu.Lock()
	defer r.n.mu.Unlock()
	r.n.down, r.n.downWith = n, 503
}
